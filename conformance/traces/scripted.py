"""Scripted traces: a fixed list of calls run in lockstep and written as a trace file.

Regression traces for spec fixes and the conformance vectors (vectors/corpus.py) are built this
way: the calls are chosen by hand (or by the vector search), run through the same `Lockstep` checks
as a Hypothesis run, and every step's model and implementation answers are recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from kafkalog.conformance.adapter.json_codec import decode_args
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.lockstep import DivergenceError, Lockstep
from kafkalog.conformance.check.session import START_MS
from kafkalog.conformance.check.sut import ModelSut, Sut
from kafkalog.conformance.traces.trace import Trace, TraceHeader, git_commit
from kafkalog.model import values as v

Call = tuple[str, dict[str, Any]]


def run_calls(config: v.LogConfig, calls: Sequence[Call], *,
              factory: Callable[[v.LogConfig, int, int], Sut] | None = None,
              now_ms: int = START_MS, verify_every: int = 1) -> tuple[Lockstep, str | None]:
    """Run `calls` on the model and `factory`'s log; (lockstep, divergence signature or None)."""
    if factory is None:
        factory = ImplSut
    sut = factory(config, now_ms, 0)
    lockstep = Lockstep(ModelSut(config, now_ms, 0), sut, verify_every)
    signature = None
    try:
        for action, args in calls:
            lockstep.step(action, args)
    except DivergenceError as divergence:
        signature = divergence.signature
    finally:
        sut.close()
    return lockstep, signature


def scripted_trace(config: v.LogConfig, calls: Sequence[Call], *, broken: str | None = None,
                   adapter: str = "builtin", now_ms: int = START_MS,
                   factory: Callable[[v.LogConfig, int, int], Sut] | None = None) -> Trace:
    """The trace of `calls` run in lockstep (stopping at a divergence, which it records)."""
    if broken is not None and factory is None:
        from kafkalog.conformance.broken.registry import broken_factory

        factory = broken_factory(broken)
    lockstep, signature = run_calls(config, calls, factory=factory, now_ms=now_ms)
    header = TraceHeader(
        config=config, now_ms=now_ms, adapter=adapter, broken=broken,
        outcome="diverged" if signature else "conformed", signature=signature,
        commit=git_commit(),
    )
    return Trace(header, tuple(lockstep.steps))


def rerecord(trace: Trace) -> Trace:
    """The same calls run again, answers recorded afresh; the header keeps its provenance.

    For a deliberate change of the model (a spec fix): regenerate, then review the diff. A step
    the implementation answered `unsupported` is kept as a call; the run stops at a divergence.
    """
    calls = [(s.action, decode_args(s.action, s.args)) for s in trace.steps]
    fresh = scripted_trace(trace.header.config, calls, broken=trace.header.broken,
                           now_ms=trace.header.now_ms)
    header = trace.header
    if fresh.header.signature is not None:
        header = replace(header, signature=fresh.header.signature)
    return Trace(replace(header, commit=git_commit()), fresh.steps)
