"""Golden: real compacted `__consumer_offsets` partitions, cleaned by the implementation, still
open, verify and read as compaction promises: Kafka's already-compacted data reads identically,
and an uncompacted one keeps exactly each key's newest record (KL-CLEAN-6, KL-CLEAN-10).

Each fixture is copied to tmp_path first; the originals are only read.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from kafkalog.impl.cleaner.checkpoint import CLEANER_CHECKPOINT_FILENAME
from kafkalog.impl.cleaner.log_cleaner import LogCleaner
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir, TopicPartition
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.impl.verify.verifier import verify_log_dir
from kafkalog.model.values import Isolation, LogConfig

NOW = 1_750_000_000_000
CONFIG = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
# (folder, partition, roll first): the 2.7 partitions were compacted by Kafka's own cleaner;
# the 2.1 one holds 8,202 offset commits of two keys in its active segment.
CASES = [("k2.7-zk-unclean-compacted", "__consumer_offsets-17", False),
         ("k2.7-zk-unclean-compacted", "__consumer_offsets-28", False),
         ("k2.7-zk-unclean-compacted", "__consumer_offsets-39", True),
         ("k2.1-zk-clean-many-partitions", "__consumer_offsets-28", True)]

Row = tuple[int, int, bytes | None, bytes | None]


def copy_fixture(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dst


def records(log_dir: LogDir, tp: TopicPartition) -> list[Row]:
    """Every record through Log.read from the log start to the LEO, CRCs checked."""
    log, out = log_dir.log(tp), []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        fetched = log.read(offset, 1 << 20, Isolation.LOG_END, True).records
        batches = list(MemoryRecords(fetched.to_bytes()).batches())
        if not batches:
            break
        for batch in batches:
            batch.ensure_valid()
            out += [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()
                    if r.offset >= offset]
        offset = batches[-1].next_offset
    return out


def expected_after(before: list[Row], end_offset: int) -> list[Row]:
    """KL-CLEAN-6 from the log start: below the end offset each key keeps its newest record
    (keyless records go); everything from the end offset on stays."""
    newest = {r[2]: r[0] for r in before if r[0] < end_offset and r[2] is not None}
    return [r for r in before
            if r[0] >= end_offset or (r[2] is not None and newest[r[2]] == r[0])]


@pytest.mark.parametrize(("folder", "partition", "roll_first"), CASES)
def test_clean__real_compacted_partition__opens_verifies_and_reads_as_promised(
        kafka_fixtures: Path, tmp_path: Path, folder: str, partition: str,
        roll_first: bool) -> None:
    """CLN-32, CLN-47, CLN-57. Spec: KL-CLEAN-6, KL-CLEAN-10, KL-CLEAN-11."""
    copy = copy_fixture(kafka_fixtures / folder, tmp_path / folder)
    # Clean from the log start: the stored checkpoint would leave nothing dirty.
    (copy / CLEANER_CHECKPOINT_FILENAME).unlink(missing_ok=True)
    log_dir = LogDir.open(FileSystem(), copy, CONFIG, MockTime(NOW))
    tp = next(t for t in log_dir.logs if str(t) == partition)
    log = log_dir.log(tp)
    if roll_first:
        log.roll()
        log.update_high_watermark(log.log_end_offset)
    before = records(log_dir, tp)
    result = LogCleaner(log).clean()
    assert result is not None and result.first_dirty_offset == log.log_start_offset
    after = records(log_dir, tp)
    assert after == expected_after(before, result.end_offset)
    if not roll_first:
        assert after == before  # Kafka's own compaction left nothing to remove
    log_dir.close()
    report = verify_log_dir(FileSystem(), copy, deep=True)
    assert [str(f) for f in report.problems] == []
    reopened = LogDir.open(FileSystem(), copy, CONFIG, MockTime(NOW))
    assert reopened.had_clean_shutdown
    assert records(reopened, tp) == after
    assert LogCleaner(reopened.log(tp)).checkpoint.read() == result.end_offset
    reopened.close()
