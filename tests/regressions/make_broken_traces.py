"""Build tests/regressions/BUG-*.jsonl: hand-minimised traces of the broken implementations.

Run `python tests/regressions/make_broken_traces.py tests/regressions` to regenerate them after
a deliberate change of the model or the trace format; review the diff like any other change.
"""
import sys
from pathlib import Path

from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.broken.registry import BROKEN, broken_factory
from kafkalog.conformance.check.lockstep import DivergenceError
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
from kafkalog.conformance.traces.trace import Trace, TraceHeader, git_commit, write_trace
from kafkalog.model import values as v

NOW = START_MS
def rec(ts=NOW, value=b"test", key=None):
    return v.Record(key, value, ts)
def leader(*records, epoch=0):
    return ("append_as_leader", {"records": tuple(records), "leader_epoch": epoch})
def fill(size, ts=NOW):  # one record making a batch of exactly `size` bytes
    from kafkalog.conformance.gen.picks import fit_value
    return rec(ts, fit_value([rec(ts, b"")], size))

old = NOW - 120_000 - 1
SCENARIOS = {
    "truncate_fully_keeps_hw": ("tiny", [leader(rec()), ("flush", {"offset": None}),
                                         ("truncate_fully_and_start_at", {"offset": 1})]),
    "truncate_keeps_hw": ("tiny", [leader(rec(), rec()), ("update_high_watermark", {"offset": 2}),
                                   ("truncate_to", {"offset": 1})]),
    "recovery_point_above_leo": ("tiny", [leader(rec(), rec()), ("flush", {"offset": None}),
                                          ("truncate_to", {"offset": 1})]),
    "end_offset_undefined_is_latest": ("tiny", [leader(rec()),
                                                ("end_offset_for_epoch", {"epoch": -1})]),
    "epoch_cache_non_monotonic": ("tiny", [leader(rec(), epoch=3), leader(rec(), epoch=1)]),
    "max_timestamp_last_offset": ("tiny", [leader(rec(NOW + 5), rec(NOW)),
                                           ("fetch_offset_by_timestamp", {"timestamp": -3})]),
    "index_truncation_keeps_target": ("index_full", [
        leader(rec()), leader(rec()), leader(rec()),
        ("truncate_to", {"offset": 1}), leader(rec(), rec()), ("close_and_reopen", {})]),
    "retention_ignores_hw": ("size_retention", [
        leader(fill(250)), leader(fill(250)), leader(fill(250)), leader(fill(250)),
        ("delete_old_segments", {})]),
    "log_start_retention_last": ("tiny", [
        leader(rec()), ("roll", {"expected_next_offset": None}), leader(rec(old)),
        ("roll", {"expected_next_offset": None}), leader(rec()),
        ("update_high_watermark", {"offset": 3}),
        ("maybe_increment_log_start_offset", {"offset": 1}),
        ("delete_old_segments", {})]),
    "truncation_keeps_roll_clock": ("time_roll", [
        leader(rec(-1)), ("advance_clock", {"ms": 2_000}), ("truncate_to", {"offset": 0}),
        leader(rec(-1)), leader(rec(-1))]),
}

out = Path(sys.argv[1])
for name, (family, steps) in SCENARIOS.items():
    config = CONFIG_FAMILIES[family]
    session = Session(config, broken_factory(name), frozenset(FEATURES))
    lockstep = session.start()
    diverged = None
    try:
        for action, args in steps:
            lockstep.step(action, args)
    except DivergenceError as error:
        diverged = error
    finally:
        session.finish(lockstep)
    header = TraceHeader(config=config, seed=None, config_family=family, now_ms=NOW,
                         adapter="builtin", broken=name, outcome="diverged" if diverged else None,
                         signature=diverged.signature if diverged else None, commit=git_commit())
    bug = BROKEN[name].bug
    path = write_trace(Trace(header, tuple(lockstep.steps)), out / f"{bug}-{name}.jsonl")
    print(name, len(lockstep.steps), "/", len(steps),
          diverged.signature if diverged else "NOT DIVERGED")
