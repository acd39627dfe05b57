"""A crash at any point of a cleaning pass loses nothing compaction promises to keep: after the
unclean load every key's newest record is the one before the pass, every record is one the log
held at the same offset, and the log checks clean (CLN-58, CLN-59, CLN-60; strict durability).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.impl.cleaner.log_cleaner import LogCleaner
from kafkalog.model.values import BatchSpec, LogConfig, Record

COMPACT = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.0,
                    segment_bytes=300, index_interval_bytes=100)
Row = tuple[int, bytes | None, bytes | None]


def rows(sut: ImplSut) -> list[Row]:
    return [(r.offset, r.key, r.value) for seg in sut.log.local_log.segments
            for b in seg.log.batches(0) for r in b.records()]


def newest(found: list[Row]) -> dict[bytes | None, Row]:
    return {row[1]: row for row in found}


def build(config: LogConfig) -> ImplSut:
    """Three keys overwritten across several segments, sealed, the journal folded."""
    sut = ImplSut(config)
    for i in range(10):
        sut.append_as_leader((Record(b"k%d" % (i % 3), b"v%d" % i, i),), 0)
    sut.roll()
    sut.update_high_watermark(sut.log.log_end_offset)
    sut.begin_action()
    return sut


@pytest.mark.parametrize(("fault", "stride"), [("power_loss", 2), ("process_crash", 4)])
def test_clean__crash_at_every_point__keeps_newest_records(fault: str, stride: int) -> None:
    """Every `stride`-th operation of the pass and its last (the CI budget: a point costs a
    build and a load). Spec: KL-CLEAN-10 (the swap's order), KL-CLEAN-11 (the checkpoint is
    written last)."""
    probe = build(COMPACT)
    before = rows(probe)
    assert LogCleaner(probe.log).clean() is not None
    ops = probe.fs.crash_points() - probe.action_mark
    probe.close()
    assert ops > 0
    for point in sorted({*range(0, ops + 1, stride), ops}):
        sut = build(COMPACT)
        LogCleaner(sut.log).clean()
        sut.crash(point, fault, seed=point)
        got = rows(sut)
        assert newest(got) == newest(before), point
        assert set(got) <= set(before), point
        assert sut.check() == [], point
        checkpoint = LogCleaner(sut.log).checkpoint.read()
        assert checkpoint in (None, 10), point
        # A pass after the load finishes the job.
        sut.update_high_watermark(sut.log.log_end_offset)
        LogCleaner(sut.log).clean()
        assert newest(rows(sut)) == newest(before), point
        sut.close()


def test_clean__keyless_record_from_a_follower__is_dropped_by_the_pass() -> None:
    """CLN-9, CLN-31 step 4: follower appends are not checked; the cleaner drops keyless
    records. Spec: KL-CLEAN-6, KL-CLEAN-12."""
    sut = ImplSut(replace(COMPACT, segment_bytes=1000))
    sut.append_as_follower((BatchSpec(0, 0, (Record(None, b"x", 0),)),))
    sut.append_as_leader((Record(b"k", b"v", 0),), 0)
    sut.roll()
    sut.update_high_watermark(sut.log.log_end_offset)
    LogCleaner(sut.log).clean()
    assert rows(sut) == [(1, b"k", b"v")]
    sut.close()


def test_clean__swap_log_renamed_to_its_plain_name_durably_before_its_indexes() -> None:
    """While `<base>.log.swap` is there the load completes the swap and deletes every plain
    file in its range: an index already renamed in (a power loss keeping that rename and
    losing the `.log`'s) would go, and the segment below the recovery point would be rebuilt
    with an empty transaction index (tests/regressions/KL-CRASH-15-*-seed183). Spec:
    KL-CRASH-15."""
    sut = build(COMPACT)
    assert LogCleaner(sut.log).clean() is not None
    ops = sut.fs.journal()[sut.action_mark:]
    renames = [i for i, op in enumerate(ops) if op.kind == "rename" and op.path.endswith(".swap")]
    logs = [i for i in renames if ops[i].path.endswith(".log.swap")]
    assert logs
    for i in logs:
        assert ops[i + 1].kind == "fsync_dir"
        base = ops[i].path.removesuffix(".log.swap")
        indexes = [j for j in renames if ops[j].path.startswith(base) and j != i]
        assert indexes and all(j > i + 1 for j in indexes)
    sut.close()
