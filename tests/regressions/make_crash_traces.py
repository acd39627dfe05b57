"""Find and save tests/regressions/ traces of the crash bugs of conformance/broken/crash.py.

`python tests/regressions/make_crash_traces.py tests/regressions` searches seeds with
`kafkalog check`'s runner (crash weight 3) until each bug diverges, and writes the shrunk trace as
`<bug>-<name>.jsonl`. `... tests/regressions defects` writes the traces of the five crash
defects (hand-written scenarios, crash seeds chosen for the image). Review the diff like any
other change.
"""
import logging
import sys
from pathlib import Path

from kafkalog.conformance.broken.crash import BROKEN_CRASH
from kafkalog.conformance.check.runner import run_seed

FAMILIES = ("tiny", "index_full", "time_roll", "hw_retention")
# Not reached by `kafkalog check`'s crash steps, each for a stated reason (README "Durability"):
NOT_REACHABLE = {
    # defect 1: strict rolls fsync a segment before the next exists, and plants only damage the
    # last segment, so no image has a later segment after a rebuild cut (tests/crash pins it)
    "load_cut_keeps_later_segments",
    # defect 5: the checker ignores verify's epoch findings by design (impl_sut._expected), so a
    # false `epoch_missing` cannot show (tests/crash/test_defects.py pins it)
    "verify_epoch_missing_below_log_start",
}
# recovery_offset_error_escapes is reached through the `offsets_back` leftover (KL-CRASH-9): its
# trace is the one `kafkalog check --broken recovery_offset_error_escapes` found and shrank.
# epoch_trim_end_first (defect 4): EPO-7-epoch_trim_end_first.jsonl is the 4-step trace
# `kafkalog check --broken epoch_trim_end_first --family zero_retention --crash-weight 6` found
# at seed 137 (a crash inside truncate_fully_and_start_at leaves an entry below the new log
# start); since recovery adds no epochs below the recovery point (KL-CRASH-6), the old trace cut
# from the defect 4/5 scenario no longer shows it.


def main(out: Path, seeds: int = 160, only: tuple[str, ...] = ()) -> None:
    logging.disable(logging.WARNING)
    for name, broken in sorted(BROKEN_CRASH.items()):
        if name in NOT_REACHABLE or (only and name not in only):
            continue
        for seed in range(seeds):
            family = FAMILIES[seed % len(FAMILIES)]
            outcome = run_seed(seed, steps=40, config_family=family, broken=name,
                               time_limit_s=20, crash_weight=3)
            if outcome.outcome == "diverged" and outcome.trace_jsonl:
                path = out / f"{broken.bug}-{name}.jsonl"
                path.write_text(outcome.trace_jsonl, encoding="utf-8")
                print(f"{name}: seed {seed} ({family}) -> {path}")
                break
        else:
            print(f"{name}: not caught in {seeds} seeds")


if __name__ == "__main__" and (len(sys.argv) == 2 or sys.argv[2] != "defects"):
    main(Path(sys.argv[1]), only=tuple(sys.argv[2:]))


# --- the five crash defects: hand-written scenarios whose crash seeds are chosen so the
# image shows the defect's shape; each must conform on the fixed implementation. ---------------

def _record(ts: int) -> object:
    from kafkalog.model import values as v

    return v.Record(None, b"test", ts)


def defect_scenarios() -> dict[str, tuple[str, list[tuple[str, dict]], object]]:
    """name -> (family, steps before the last crash, predicate on the recovered view)."""
    from kafkalog.conformance.check.session import START_MS as now

    def leader(n: int = 1, epoch: int = 0) -> list[tuple[str, dict]]:
        return [("append_as_leader", {"records": (_record(now),), "leader_epoch": epoch})] * n

    roll = ("roll", {"expected_next_offset": None})
    return {
        # 1: a torn index-rebuild cut must end the log (later segments go too).
        "KL-CRASH-5-defect1_index_rebuild_cut_ends_the_log": (
            "tiny", [*leader(2), roll, *leader(2), roll, *leader(1)],
            lambda view: view.log_end_offset == 4),
        # 2: truncate below the checkpointed recovery point, append unflushed, torn power loss.
        "KL-CRASH-3-defect2_recovery_point_checkpointed_after_truncation": (
            "roomy", [*leader(16), ("close_and_reopen", {}), ("truncate_to", {"offset": 7}),
                      *leader(2)],
            lambda view: view.log_end_offset == 7),
        # 3: a truncation and a retention deletion survive power loss.
        "KL-CRASH-3-defect3_truncation_and_deletion_durable": (
            "tiny", [*leader(2), roll, *leader(2), ("flush", {"offset": None}),
                     ("truncate_to", {"offset": 1}), *leader(1, epoch=1)],
            lambda view: view.log_end_offset == 1),
        # 4 and 5: LSO = LEO = 10, checkpointed; crash twice (load twice = load once), verify clean.
        "KL-CRASH-7-defect4_5_recovery_idempotent_epochs_below_log_start": (
            "roomy", [*leader(10), ("update_high_watermark", {"offset": 10}),
                      ("maybe_increment_log_start_offset", {"offset": 10}),
                      ("close_and_reopen", {}),
                      ("crash", {"point": 1 << 20, "fault": "process_crash", "seed": 0,
                                 "leftover": "none"})],
            lambda view: view.log_start_offset == view.log_end_offset == 10),
    }


def make_defect_traces(out: Path) -> None:
    import dataclasses

    from kafkalog.conformance.adapter.json_codec import FEATURES
    from kafkalog.conformance.check.impl_sut import ImplSut
    from kafkalog.conformance.check.session import START_MS, Session
    from kafkalog.conformance.gen.configs import CONFIG_FAMILIES
    from kafkalog.conformance.traces.trace import Trace, TraceHeader, git_commit, write_trace

    logging.disable(logging.WARNING)
    faults = {"defect1": ("power_loss_torn", "missing_index"),
              "defect2": ("power_loss_torn", "none"),
              "defect3": ("power_loss", "none"),
              "defect4": ("power_loss_torn", "none")}
    for name, (family, steps, wanted) in defect_scenarios().items():
        fault, leftover = next(f for key, f in faults.items() if key in name)
        for seed in range(200):
            session = Session(CONFIG_FAMILIES[family], ImplSut, frozenset(FEATURES),
                              verify_every=1)
            lockstep = session.start()
            try:
                for action, args in steps:
                    lockstep.step(action, dict(args))
                lockstep.step("crash", {"point": 1 << 20, "fault": fault, "seed": seed,
                                        "leftover": leftover})
                view = lockstep.sut.state()
            finally:
                lockstep.sut.close()
            if wanted(view):
                header = TraceHeader(config=CONFIG_FAMILIES[family], config_family=family,
                                     now_ms=START_MS, commit=git_commit())
                trace = Trace(header, tuple(dataclasses.replace(s) for s in lockstep.steps))
                print(f"{name}: crash seed {seed} -> LEO {view.log_end_offset}")
                write_trace(trace, out / f"{name}.jsonl")
                break
        else:
            print(f"{name}: no seed gave the wanted image")


if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[2] == "defects":
    make_defect_traces(Path(sys.argv[1]))
