"""Trace-level minimisation after Hypothesis has shrunk: drop steps while the bug stays.

Hypothesis shrinks the choice sequence of a run, which for long stateful runs is slow and is cut
off by the run's time limit; a scenario rule also records several steps that Hypothesis can only
drop together. This pass works on the concrete trace instead: it replays the trace without
a block of 4, 2, then 1 steps at a time and keeps the shorter trace when it still diverges the
same way (same action, both answers' kinds and what differed; the rule suffix may change).
Steps are re-recorded from the replay, so the saved answers are the shorter trace's own.
"""

from __future__ import annotations

import dataclasses
import time

from kafkalog.conformance.adapter.json_codec import decode_args
from kafkalog.conformance.check.lockstep import DivergenceError
from kafkalog.conformance.check.session import Session, SutFactory, close_sides
from kafkalog.conformance.errors import AdapterError
from kafkalog.conformance.traces.trace import Trace, TraceStep
from kafkalog.model.errors import KafkalogError


def same_bug(signature: str | None, other: str | None) -> bool:
    """Signatures name the same divergence: equal but for the trailing rule ID."""
    if signature is None or other is None:
        return False
    return signature.split("|")[:4] == other.split("|")[:4]


def minimise_trace(trace: Trace, signature: str, factory: SutFactory, features: frozenset[str],
                   *, time_limit_s: float = 2.0) -> tuple[Trace, str]:
    """The shortest trace found by dropping single steps within the time limit, and its
    signature; `trace` itself when no step can go."""
    deadline = time.monotonic() + time_limit_s
    verify = 1 if "|verify|" in signature else 0  # the on-disk scan only when it found the bug
    steps, best_signature = list(trace.steps), signature
    for width in (4, 2, 1):  # blocks first: an append and the steps naming its offsets go together
        index = 0
        while index + width < len(steps) and time.monotonic() < deadline:
            candidate = steps[:index] + steps[index + width:]
            if "black_box" in features and splits_append_from_hw(steps, index):
                index += 1
                continue
            replayed = _replay(trace, candidate, factory, features, verify)
            if replayed is not None and same_bug(signature, replayed[1]):
                steps, best_signature = replayed
                continue  # the steps now at `index` are new ones: try them too
            index += 1
    return dataclasses.replace(trace, steps=tuple(steps)), best_signature


def splits_append_from_hw(steps: list[TraceStep], index: int) -> bool:
    """Dropping steps from `index` on would drop the HW step of the append just before it.

    Over the wire the HW follows the LEO (specs/wire.md KL-WIRE-2): the checker records an
    `update_high_watermark` right after each append. A trace that keeps the append without it
    asks for a state no broker can be in, so black-box minimising drops the pair together.
    """
    return (0 < index < len(steps) and steps[index - 1].action.startswith("append_")
            and steps[index].action == "update_high_watermark")


def _replay(trace: Trace, steps: list[TraceStep], factory: SutFactory,
            features: frozenset[str], verify_every: int) -> tuple[list[TraceStep], str] | None:
    """The recorded steps up to the first divergence and its signature, or None if none."""
    header = trace.header
    session = Session(header.config, factory, features, now_ms=header.now_ms,
                      log_start_offset=header.log_start_offset, verify_every=verify_every)
    try:
        lockstep = session.start()
    except BaseException:  # noqa: BLE001 - a candidate that cannot start is just not kept
        return None
    try:
        for index, step in enumerate(steps, start=1):
            args = decode_args(step.action, step.args, where=f"step {index} args")
            try:
                lockstep.step(step.action, args)
            except DivergenceError as divergence:
                return list(lockstep.steps), divergence.signature
        return None
    except (AdapterError, KafkalogError):
        return None
    except Exception:  # noqa: BLE001 - a candidate that breaks the harness is just not kept
        return None
    finally:
        close_sides(lockstep)
