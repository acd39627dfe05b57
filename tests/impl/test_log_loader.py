"""LogLoader: loading and recovery scenarios ported from Kafka's LogLoaderTest, plus bad input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import CorruptCheckpointError, InvalidFileNameError
from kafkalog.model.values import EpochEntry, LogConfig, Record

FS = FileSystem()
CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=100)


def leader(value: str, ts: int = 0) -> MemoryRecords:
    return MemoryRecords.with_records([Record(None, value.encode(), ts)])


@pytest.fixture
def time() -> MockTime:
    return MockTime(1_000_000)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


def open_log(log_dir: Path, time: MockTime, config: LogConfig = CONFIG, **kw: object) -> Log:
    return Log.open(FS, log_dir, config, time, **kw)  # type: ignore[arg-type]


def filled_log(log_dir: Path, time: MockTime, n: int = 50, epoch_every: int = 20,
               config: LogConfig = CONFIG) -> Log:
    log = open_log(log_dir, time, config)
    for i in range(n):
        log.append_as_leader(leader(f"value-{i:03d}", ts=i * 10), i // epoch_every)
    return log


def crash(log: Log) -> None:
    """Drop the log's handles without any clean-shutdown work (like kill -9 after a flush)."""
    log.close_handlers()


def reopen_unclean(log_dir: Path, time: MockTime, recovery_point: int = 0, **kw: object) -> Log:
    return open_log(log_dir, time, recovery_point=recovery_point, had_clean_shutdown=False, **kw)


def values(log: Log) -> list[bytes | None]:
    """Every record value from the log start on, reading segment by segment."""
    out: list[bytes | None] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        records = list(log.read(offset, 10**7).records.records())
        out += [r.value for r in records]
        offset = records[-1].offset + 1
    return out


def test_unclean_reopen__intact_log__recovers_everything_and_keeps_recovery_point(
    log_dir: Path, time: MockTime
) -> None:
    """Spec: REC-8, REC-10, BUG-60 (testLogRecoversToCorrectOffset; recovery point not advanced)."""
    log = filled_log(log_dir, time)
    state = log.state()
    crash(log)
    again = reopen_unclean(log_dir, time, recovery_point=10)
    assert again.log_end_offset == 50
    assert again.recovery_point == 10
    assert again.state().segments == state.segments
    assert again.state().epoch_entries == (EpochEntry(0, 0), EpochEntry(1, 20), EpochEntry(2, 40))
    assert again.flush() == 50
    again.check()
    again.close_handlers()


def test_unclean_reopen__torn_tail__truncated_to_last_valid_batch(
    log_dir: Path, time: MockTime
) -> None:
    """Spec: SEG-15, REC-8, REC-18 (torn tail)."""
    log = filled_log(log_dir, time, n=10)
    active = Path(log.segments[-1].log.path)
    crash(log)
    data = active.read_bytes()
    active.write_bytes(data[:-5])
    again = reopen_unclean(log_dir, time)
    assert again.log_end_offset == 9
    assert values(again)[-1] == b"value-008"
    again.check()
    again.close_handlers()


def test_unclean_reopen__corrupt_crc_in_middle__truncates_there_and_drops_later_segments(
    log_dir: Path, time: MockTime
) -> None:
    """Spec: REC-8 step 1.2, REC-18 (testCorruptLog: later segments are removed)."""
    log = filled_log(log_dir, time, n=60)
    segments = [Path(s.log.path) for s in log.segments]
    assert len(segments) >= 3
    crash(log)
    second = segments[1]
    data = bytearray(second.read_bytes())
    batch_size = 77  # one record with a 9-byte value ("value-NNN"), no key
    assert len(data) % batch_size == 0
    data[batch_size * 2 + 70] ^= 0xFF  # inside the third batch's records: CRC mismatch
    second.write_bytes(bytes(data))
    again = reopen_unclean(log_dir, time)
    first_base = again.segments[0].base_offset
    second_base = int(second.name[:20])
    assert [s.base_offset for s in again.segments] == [first_base, second_base]
    assert again.log_end_offset == second_base + 2
    assert not any(p.exists() for p in segments[2:])
    again.check()
    again.close_handlers()


def test_unclean_reopen__corrupt_crc_in_middle__kafka_mode_defers_deleting_later_segments(
    log_dir: Path, time: MockTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spec: KL-ALLOW-5, LOC-11 (removeAndDeleteSegmentsAsync: `.deleted`, gone after the delay)."""
    from kafkalog.impl.load.log_loader import LogLoader

    monkeypatch.setattr(LogLoader, "defer_cut_deletion", True)
    log = filled_log(log_dir, time, n=60)
    segments = [Path(s.log.path) for s in log.segments]
    later = [s.base_offset for s in log.segments[2:]]
    crash(log)
    data = bytearray(segments[1].read_bytes())
    data[-5] ^= 0xFF  # inside the last batch's records: CRC mismatch
    segments[1].write_bytes(bytes(data))
    again = reopen_unclean(log_dir, time)
    assert [s.base_offset for s in again.segments] == [s.base_offset for s in log.segments[:2]]
    assert again.state().pending_deletions == tuple(later)
    assert all(p.with_name(p.name + ".deleted").exists() and not p.exists()
               for p in segments[2:])
    time.sleep(CONFIG.file_delete_delay_ms)
    assert again.state().pending_deletions == ()
    assert not any(p.with_name(p.name + ".deleted").exists() for p in segments[2:])
    again.check()
    again.close_handlers()


def test_unclean_reopen__segments_below_recovery_point__are_not_revalidated(
    log_dir: Path, time: MockTime
) -> None:
    """Spec: REC-8 step 1.1, REC-18 (nothing below the recovery point is dropped)."""
    log = filled_log(log_dir, time, n=60)
    first = Path(log.segments[0].log.path)
    second_base = log.segments[1].base_offset
    crash(log)
    data = bytearray(first.read_bytes())
    data[100] ^= 0xFF
    first.write_bytes(bytes(data))
    again = reopen_unclean(log_dir, time, recovery_point=second_base)
    assert again.log_end_offset == 60
    assert again.segments[0].size() == len(data)
    again.close_handlers()


@pytest.mark.parametrize("damage", ["garbage", "zeros", "wrong_length", "missing", "truncated"])
@pytest.mark.parametrize("clean", [True, False])
def test_reopen__damaged_index__is_rebuilt(
    log_dir: Path, time: MockTime, damage: str, clean: bool
) -> None:
    """Spec: REC-6, SEG-15, BUG-4, BUG-5 (testCorruptIndexRebuild and friends)."""
    log = filled_log(log_dir, time, n=40)
    offsets = log.close()
    seg0 = log_dir / f"{0:020d}.index"
    original = seg0.read_bytes()
    assert len(original) > 8
    rng = random.Random(3)
    if damage == "garbage":
        seg0.write_bytes(rng.randbytes(len(original)))
    elif damage == "zeros":
        seg0.write_bytes(bytes(len(original)))
    elif damage == "wrong_length":
        seg0.write_bytes(original + b"\x01\x02\x03")
    elif damage == "missing":
        seg0.unlink()
    else:
        seg0.write_bytes(original[:-8])
    again = open_log(log_dir, time, recovery_point=offsets.recovery_point,
                     had_clean_shutdown=clean)
    for offset in range(40):
        batch = next(again.read(offset, 1, min_one_message=True).records.batches())
        assert batch.base_offset == offset
    again.close()
    if damage != "truncated":
        assert seg0.read_bytes() == original, "rebuilt index equals the one appends wrote"


def test_reopen__zero_filled_time_index__rebuilt_and_searchable(
    log_dir: Path, time: MockTime
) -> None:
    """Spec: REC-6, FMT-25, SEG-18."""
    log = filled_log(log_dir, time, n=40)
    offsets = log.close()
    ti = log_dir / f"{0:020d}.timeindex"
    original = ti.read_bytes()
    ti.write_bytes(bytes(len(original)))
    again = open_log(log_dir, time, recovery_point=offsets.recovery_point, had_clean_shutdown=True)
    assert again.fetch_offset_by_timestamp(105).offset == 11
    again.close()
    assert ti.read_bytes() == original


def test_load__temporary_and_orphan_files__are_removed(log_dir: Path, time: MockTime) -> None:
    """Spec: REC-2, REC-6, BUG-6 (.deleted, .cleaned and orphan indexes)."""
    log = filled_log(log_dir, time, n=5)
    offsets = log.close()
    (log_dir / f"{7:020d}.log.deleted").write_bytes(b"old")
    (log_dir / f"{8:020d}.log.cleaned").write_bytes(b"partial")
    (log_dir / f"{900:020d}.index").write_bytes(bytes(16))
    (log_dir / f"{900:020d}.timeindex").write_bytes(bytes(24))
    again = open_log(log_dir, time, recovery_point=offsets.recovery_point, had_clean_shutdown=True)
    names = sorted(p.name for p in log_dir.iterdir())
    assert not any(n.endswith((".deleted", ".cleaned")) or n.startswith(f"{900:020d}")
                   for n in names)
    assert again.log_end_offset == 5
    again.close()


def test_load__swap_file__replaces_the_segments_it_covers(log_dir: Path, time: MockTime) -> None:
    """Spec: REC-3, REC-4, REC-5 (complete an interrupted swap)."""
    log = filled_log(log_dir, time, n=30)
    offsets = log.close()
    bases = [int(p.name[:20]) for p in sorted(log_dir.glob("*.log"))]
    assert len(bases) >= 2
    first = (log_dir / f"{bases[0]:020d}.log").read_bytes()
    second = (log_dir / f"{bases[1]:020d}.log").read_bytes()
    (log_dir / f"{bases[0]:020d}.log.swap").write_bytes(first + second)
    again = open_log(log_dir, time, recovery_point=offsets.recovery_point, had_clean_shutdown=False)
    assert [s.base_offset for s in again.segments][:1] == [bases[0]]
    assert bases[1] not in [s.base_offset for s in again.segments]
    assert again.log_end_offset == 30
    assert values(again) == [f"value-{i:03d}".encode() for i in range(30)]
    again.check()
    again.close()


def test_load__swap_with_cleaned_at_or_below__is_discarded(log_dir: Path, time: MockTime) -> None:
    """Spec: REC-2 (KAFKA-6264: a swap at or above the minimum .cleaned offset is deleted)."""
    log = filled_log(log_dir, time, n=5)
    offsets = log.close()
    (log_dir / f"{0:020d}.log.cleaned").write_bytes(b"x")
    (log_dir / f"{0:020d}.log.swap").write_bytes(b"y")
    again = open_log(log_dir, time, recovery_point=offsets.recovery_point, had_clean_shutdown=True)
    assert again.log_end_offset == 5
    assert not list(log_dir.glob("*.swap")) and not list(log_dir.glob("*.cleaned"))
    again.close()


def test_load__log_start_above_log_end__starts_empty_at_log_start(
    log_dir: Path, time: MockTime
) -> None:
    """Spec: REC-9, REC-8 step 3, BUG-39 (KAFKA-8306: LSO = LEO = 500)."""
    log = filled_log(log_dir, time, n=10)
    log.close()
    again = open_log(log_dir, time, log_start_offset=500, recovery_point=10,
                     had_clean_shutdown=True)
    assert (again.log_start_offset, again.log_end_offset, again.high_watermark) == (500, 500, 500)
    assert again.leader_epoch_cache.epoch_entries() == ()
    assert [s.base_offset for s in again.segments] == [500]
    again.check()
    again.close()


def test_load__epoch_checkpoint_beyond_log__truncated_to_log_range(
    log_dir: Path, time: MockTime
) -> None:
    """Spec: REC-13, REC-15, EPO-10 (stale entries after a crash are re-truncated)."""
    log = filled_log(log_dir, time, n=30, epoch_every=10)
    log.update_high_watermark(30)
    log.maybe_increment_log_start_offset(15)
    offsets = log.close()
    (log_dir / "leader-epoch-checkpoint").write_text("0\n4\n0 0\n1 10\n2 20\n7 40\n")
    again = open_log(log_dir, time, log_start_offset=offsets.log_start_offset,
                     recovery_point=offsets.recovery_point, had_clean_shutdown=True)
    assert again.leader_epoch_cache.epoch_entries() == (EpochEntry(1, 15), EpochEntry(2, 20))
    again.close()


def test_load__malformed_epoch_checkpoint__raises_corrupt_checkpoint(
    log_dir: Path, time: MockTime
) -> None:
    """Spec: FMT-37, ERR-43 (typed error naming the file)."""
    filled_log(log_dir, time, n=2).close()
    (log_dir / "leader-epoch-checkpoint").write_text("0\n1\nnot a line\n")
    with pytest.raises(CorruptCheckpointError) as info:
        open_log(log_dir, time, had_clean_shutdown=True)
    assert "leader-epoch-checkpoint" in str(info.value.where)


def test_load__bad_segment_file_name__raises_invalid_file_name(
    log_dir: Path, time: MockTime
) -> None:
    """Spec: FMT-5, ERR-48."""
    filled_log(log_dir, time, n=2).close()
    (log_dir / "foo.log").write_bytes(b"")
    with pytest.raises(InvalidFileNameError):
        open_log(log_dir, time, had_clean_shutdown=True)


def test_clean_reopen__empty_active_segment__keeps_its_base(log_dir: Path, time: MockTime) -> None:
    """Spec: LOG-26, REC-6, BUG-61 (KAFKA-13603: empty active segment survives a restart)."""
    log = filled_log(log_dir, time, n=5)
    log.roll()
    offsets = log.close()
    again = open_log(log_dir, time, recovery_point=offsets.recovery_point, had_clean_shutdown=True)
    assert [s.base_offset for s in again.segments][-1] == 5
    assert again.recovery_point == 5 and again.log_end_offset == 5
    again.append_as_leader(leader("after"), 0)
    assert again.log_end_offset == 6
    again.close()


def test_unclean_reopen__zero_filled_tail__truncated(log_dir: Path, time: MockTime) -> None:
    """Spec: FMT-52 (size field 0 is CorruptRecordError), SEG-15 step 4."""
    log = filled_log(log_dir, time, n=5)
    path = Path(log.segments[-1].log.path)
    size = log.segments[-1].size()
    crash(log)
    with open(path, "ab") as f:
        f.write(bytes(4096))
    again = reopen_unclean(log_dir, time)
    assert again.log_end_offset == 5 and again.segments[-1].size() == size
    again.close()


def test_unclean_load__epoch_entry_above_the_recovered_end__keeps_the_batches_epoch_on_reload(
    log_dir: Path, time: MockTime
) -> None:
    """A stale entry at or above the recovered LEO no longer hides the batches' epoch from
    recovery, so a second load agrees with the first. Spec: KL-CRASH-6, KL-CRASH-7 (seed 903)"""
    log = filled_log(log_dir, time, n=10, epoch_every=100)  # epoch 0 from offset 0
    crash(log)
    # What a crash inside a truncation may leave: the epoch file trimmed at a log start above
    # the data it kept, and a recovery point checkpoint above that data too.
    (log_dir / "leader-epoch-checkpoint").write_text("0\n1\n0 12\n")
    first = reopen_unclean(log_dir, time, recovery_point=20)
    assert first.log_end_offset == 10
    assert first.leader_epoch_cache.epoch_entries() == (EpochEntry(0, 0),)
    crash(first)
    second = reopen_unclean(log_dir, time, recovery_point=20)
    assert second.leader_epoch_cache.epoch_entries() == (EpochEntry(0, 0),)
    second.close_handlers()


def test_unclean_load_after_a_clean_one__flushed_batch_of_a_replaced_epoch__adds_no_entry(
    log_dir: Path, time: MockTime
) -> None:
    """Batch 0 carries epoch 2, then epoch 1 replaces it from offset 1 (EPO-3): the cache says
    (1, 1). A clean load keeps that; the unclean load after a crash recovers the segment holding
    the recovery point (= LEO), and batch 0, below it, must not bring (2, 0) back (Kafka's
    RCV-10 does), so both loads agree. Spec: KL-CRASH-6, KL-CRASH-7"""
    log = open_log(log_dir, time)
    log.append_as_leader(leader("a"), 2)
    log.append_as_leader(leader("b"), 1)
    assert log.leader_epoch_cache.epoch_entries() == (EpochEntry(1, 1),)
    offsets = log.close()
    clean = open_log(log_dir, time, recovery_point=offsets.recovery_point, had_clean_shutdown=True)
    assert clean.leader_epoch_cache.epoch_entries() == (EpochEntry(1, 1),)
    crash(clean)
    again = reopen_unclean(log_dir, time, recovery_point=offsets.recovery_point)
    assert again.leader_epoch_cache.epoch_entries() == (EpochEntry(1, 1),)
    again.close_handlers()


def test_unclean_load__batches_at_or_above_the_recovery_point__add_their_epochs(
    log_dir: Path, time: MockTime
) -> None:
    """The entries from the recovery point on are re-derived from the batches there, even when
    the checkpoint lost them. Spec: KL-CRASH-6"""
    log = filled_log(log_dir, time, n=10, epoch_every=4)  # epochs 0, 1, 2 from 0, 4, 8
    crash(log)
    (log_dir / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    again = reopen_unclean(log_dir, time, recovery_point=4)
    assert again.leader_epoch_cache.epoch_entries() == (
        EpochEntry(0, 0), EpochEntry(1, 4), EpochEntry(2, 8))
    again.close_handlers()


def test_unclean_load__no_entry_below_the_recovery_point__every_recovered_batch_adds(
    log_dir: Path, time: MockTime
) -> None:
    """What a log-start advance undone by a crash leaves (its epoch trim was durable, GAP-12):
    no entry below the recovery point, so RCV-10's walk re-derives them all. Spec: KL-CRASH-6"""
    log = filled_log(log_dir, time, n=10, epoch_every=4)
    crash(log)
    (log_dir / "leader-epoch-checkpoint").write_text("0\n1\n2 10\n")
    again = reopen_unclean(log_dir, time, recovery_point=6)
    assert again.leader_epoch_cache.epoch_entries() == (
        EpochEntry(0, 0), EpochEntry(1, 4), EpochEntry(2, 8))
    again.close_handlers()


def test_crash_right_after_a_clean_load__next_load_rebuilds_the_active_time_index(
    log_dir: Path, time: MockTime
) -> None:
    """Kafka's way, which KL-CRASH-7 does not compare (seed 1126): a clean load keeps the live
    time index (the entry the earlier close appended), the unclean load after a crash rebuilds
    the segment holding the recovery point (= LEO) from its batches. Spec: KL-CRASH-5, KL-CRASH-7"""
    log = open_log(log_dir, time)
    log.append_as_leader(leader("a", ts=5), 0)
    offsets = log.close()  # SEG-15 close: final time-index entry (5, 0)
    log = open_log(log_dir, time, recovery_point=offsets.recovery_point, had_clean_shutdown=True)
    log.append_as_leader(leader("b", ts=6), 0)
    offsets = log.close()  # and (6, 1)
    clean = open_log(log_dir, time, recovery_point=offsets.recovery_point, had_clean_shutdown=True)
    index = clean.segments[-1].time_index
    assert [tuple(index.entry(n)) for n in range(index.entries)] == [(5, 0), (6, 1)]
    state = clean.state()
    crash(clean)
    again = reopen_unclean(log_dir, time, recovery_point=offsets.recovery_point)
    index = again.segments[-1].time_index
    assert [tuple(index.entry(n)) for n in range(index.entries)] == [(6, 1)]
    assert again.state() == state  # batches, offsets and epochs are the same
    again.close_handlers()


def test_unclean_load__active_index_rebuilt_beyond_segment_index_bytes__loads_and_rolls_next(
        log_dir: Path, time: MockTime) -> None:
    """KL-CRASH-5, REC-12: the clean reopen resets the live index counter, so the live segment
    fills its 15-entry index after 17 batches where recovery indexes 16 of them. The load keeps
    all 16 (Kafka's resize to segment.index.bytes throws there: the log would never load
    again), every later load does too, and the next append rolls."""
    config = LogConfig(segment_bytes=2048, index_interval_bytes=64, segment_index_bytes=120)
    log = open_log(log_dir, time, config)
    for n in (3, 14):
        for _ in range(n):
            log.append_as_leader(leader("test"), 0)
        if n == 3:
            log.close()
            log = open_log(log_dir, time, config, had_clean_shutdown=True, recovery_point=3)
    assert log.local_log.segments.active_segment().offset_index.is_full()
    log.flush()
    for _ in range(2):
        crash(log)
        log = reopen_unclean(log_dir, time, config=config)
        active = log.local_log.segments.active_segment()
        assert (active.base_offset, active.offset_index.entries) == (0, 16)
        log.check()  # asserts the segments' and indexes' invariants
    log.append_as_leader(leader("test"), 0)
    assert [s.base_offset for s in log.local_log.segments.values()] == [0, 17]
    log.close()


def test_load__empty_swap__replaces_every_file_of_its_base(log_dir: Path, time: MockTime) -> None:
    """An empty cleaned segment's swap range [base, base) covers nothing; the old segment's
    `.txnindex`, of which the swap has no copy, must not stay under the swapped-in segment
    (strict: every plain file at the base of a `.log.swap` is an old segment's). Spec:
    KL-CRASH-15, RCV-4."""
    from kafkalog.impl.index.transaction_index import encode_entry
    from kafkalog.model.values import AbortedTxnEntry

    log = filled_log(log_dir, time, n=30)
    offsets = log.close()
    bases = [int(p.name[:20]) for p in sorted(log_dir.glob("*.log"))]
    old_txn = log_dir / f"{bases[0]:020d}.txnindex"
    old_txn.write_bytes(encode_entry(AbortedTxnEntry(7, 1, 2, 3)))
    (log_dir / f"{bases[0]:020d}.log.swap").write_bytes(b"")
    again = reopen_unclean(log_dir, time, recovery_point=offsets.recovery_point)
    assert not old_txn.exists()
    assert again.segments[0].base_offset == bases[0] and again.segments[0].size() == 0
    again.close()
