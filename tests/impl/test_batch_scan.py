"""The batch-level scans (impl/records/batch_scan.py, impl/records/_scan.c) change no outcome, on
good or hostile
bytes: recovery and checked reads give the same cuts, index entries, epochs and error types on
the compiled scan, on the pure-Python scan and on the per-batch path they replace."""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from crc32c import crc32c
from kafkalog.impl.checkpoint.epoch_cache import LeaderEpochCache
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.producer import rebuild as producer_rebuild
from kafkalog.impl.producer import transaction_recovery as txn_recovery
from kafkalog.impl.records import batch_scan, memory_records
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.segment import recovery as segment_recovery
from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.impl.time import MockTime
from kafkalog.model.errors import KafkalogError
from kafkalog.model.values import LogConfig
from kafkalog.model.values import Record as ValueRecord

try:
    from kafkalog.impl.records import _scan  # type: ignore[attr-defined]
except ImportError:  # the optional extension is not built: the compiled path is not tested
    _scan = None

FS = FileSystem()
NEEDS_C = pytest.mark.skipif(_scan is None, reason="the C extension records._scan is not "
                             "built here (no compiler at install time): nothing to compare")


def _per_batch_recovery_scan(*args: Any) -> tuple[Any, ...]:
    """A scan that vouches for nothing: recovery then runs its per-batch path on every batch,
    which is the walk the scans replaced (the oracle)."""
    return (0, batch_scan.STOP_SLOW, args[4], args[5], args[6], b"", b"", b"", [], -1)


def _per_batch_valid_scan(buf: Any) -> tuple[int, int, int, int]:
    return 0, batch_scan.STOP_SLOW, 0, -1


RECOVERY_SCANS: dict[str, Any] = {"per-batch": _per_batch_recovery_scan,
                                  "python": batch_scan.py_scan_recovery}
VALID_SCANS: dict[str, Any] = {"per-batch": _per_batch_valid_scan,
                               "python": batch_scan.py_scan_valid}
if _scan is not None:
    RECOVERY_SCANS["c"] = _scan.scan_recovery
    VALID_SCANS["c"] = _scan.scan_valid


# --- building and damaging batches -------------------------------------------------------------

def _batch(rng: random.Random, offset: int, epoch: int, ts: int) -> bytes:
    """One v2 batch of 1-4 records; some carry a producer id, some a sequence of timestamps."""
    count = rng.randint(1, 4)
    records = [ValueRecord(None, rng.randbytes(rng.randint(0, 300)), ts + i) for i in range(count)]
    producer = (rng.choice([-1, -1, 7, 8]), 0, offset % 1000) if rng.random() < 0.3 \
        else (-1, -1, -1)
    return MemoryRecords.with_records(records, base_offset=offset, partition_leader_epoch=epoch,
                                      producer=producer).to_bytes()


def _segment_bytes(rng: random.Random, base: int, batches: int) -> tuple[bytearray, list[int]]:
    """A valid segment: increasing offsets, epochs that sometimes rise, timestamps that wander
    (so time-index entries come and go). Returns the bytes and each batch's position."""
    out, positions = bytearray(), []
    offset, epoch, ts = base, rng.choice([-1, 0, 3]), 1_000
    for _ in range(batches):
        positions.append(len(out))
        data = _batch(rng, offset, epoch, ts)
        out += data
        offset += struct.unpack_from(">i", data, 23)[0] + 1 + rng.choice([0, 0, 0, 2])
        if rng.random() < 0.15:
            epoch += 1
        ts += rng.choice([-50, 0, 10, 100])
    return out, positions


def _restamp_crc(data: bytearray, position: int) -> None:
    size = 12 + struct.unpack_from(">i", data, position + 8)[0]
    struct.pack_into(">I", data, position + 17, crc32c(bytes(data[position + 21:position + size])))


def _damage(rng: random.Random, data: bytearray, positions: list[int]) -> bytearray:
    """One kind of hostile change, at a random batch."""
    at = rng.choice(positions)
    kind = rng.choice(["none", "crc", "length", "truncate", "zeros", "magic", "offset-back",
                       "offset-range", "offset-limit", "short-tail"])
    if kind == "crc":
        data[rng.randrange(at + 21, len(data))] ^= 1 << rng.randrange(8)
    elif kind == "length":
        bogus = rng.choice([-1, 0, 1, 13, 14, 48, 49, 50, 2**31 - 1, len(data)])
        struct.pack_into(">i", data, at + 8, bogus)
    elif kind == "truncate":
        del data[rng.randrange(at, len(data)):]
    elif kind == "zeros":
        cut = rng.randrange(at, len(data))
        data[cut:] = bytes(len(data) - cut)
    elif kind == "magic":
        data[at + 16] = rng.choice([0, 1, 3])
    elif kind in ("offset-back", "offset-range", "offset-limit"):
        old = struct.unpack_from(">q", data, at)[0]  # the base offset is outside the CRC
        new = {"offset-back": max(0, old - rng.randint(1, 40)),
               "offset-range": old + 2**31 + rng.randint(0, 9),
               "offset-limit": 2**63 - 1 - rng.randint(0, 2)}[kind]
        struct.pack_into(">q", data, at, new)
    elif kind == "short-tail":
        data += _batch(rng, 10**6, 0, 0)[: rng.randint(1, 60)]
    if rng.random() < 0.2:
        _restamp_crc_if_whole(data, at)
    return data


def _restamp_crc_if_whole(data: bytearray, at: int) -> None:
    if at + 61 <= len(data) and 61 <= 12 + struct.unpack_from(">i", data, at + 8)[0] \
            <= len(data) - at:
        _restamp_crc(data, at)


# --- recovery ----------------------------------------------------------------------------------

def _recover_with(scan: Any, directory: Path, data: bytes, base: int, interval: int,
                  index_bytes: int, with_cache: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Everything recovery decides, from one run of `LogSegment.recover` with `scan`."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / f"{base:020d}.log").write_bytes(data)
    config = LogConfig(index_interval_bytes=interval, segment_index_bytes=index_bytes)
    seg = LogSegment.open(FS, directory, base, config, MockTime(), file_already_exists=True)
    cache = LeaderEpochCache(None) if with_cache else None
    monkeypatch.setattr(segment_recovery, "scan_recovery", scan)
    try:
        truncated: Any = seg.recover(cache)
    except KafkalogError as e:
        truncated = (type(e).__name__, str(e))
    oi, ti = seg.offset_index, seg.time_index
    seen = seg.recovered_batches
    outcome = (truncated, seg.log.size_in_bytes,
               [oi.entry(i) for i in range(oi.entries)], [ti.entry(i) for i in range(ti.entries)],
               oi.length(), ti.length(), seg._max_ts_and_offset,
               None if cache is None else cache.epoch_entries(),
               None if seen is None else (seen.size, seen.producer_positions, seen.v2_end))
    seg.close_handlers()
    return outcome


def test_recovery__hostile_segments__same_cut_entries_epochs_and_errors_on_every_scan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SEG-15 on damaged segments (CRC flips, bogus lengths, torn and zero-filled tails, legacy
    magic, offsets going back or out of range): every scan matches the per-batch walk."""
    rng = random.Random(17)
    for case in range(120):
        base = rng.choice([0, 100, 2**31])
        data, positions = _segment_bytes(rng, base, rng.randint(1, 25))
        data = _damage(rng, data, positions)
        interval = rng.choice([0, 1, 200, 4096])
        index_bytes = rng.choice([24, 10 * 1024 * 1024])
        with_cache = rng.random() < 0.7
        outcomes = {name: _recover_with(scan, tmp_path / "p", bytes(data), base, interval,
                                        index_bytes, with_cache, monkeypatch)
                    for name, scan in RECOVERY_SCANS.items()}
        reference = outcomes.pop("per-batch")
        for name, outcome in outcomes.items():
            assert outcome == reference, f"case {case}: the {name} scan differs"


def test_recovery__segment_larger_than_a_chunk__walks_across_chunk_boundaries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches that straddle the 1 MiB chunk boundary, and one batch larger than a chunk, are
    recovered whole, and a CRC flip past the first chunk cuts exactly there."""
    rng = random.Random(3)
    big = MemoryRecords.with_records([ValueRecord(None, rng.randbytes(1_300_000), 5)],
                                     base_offset=0).to_bytes()
    data, positions = bytearray(big), [0]
    offset = 1
    while len(data) < 3 * 1024 * 1024:
        positions.append(len(data))
        data += _batch(rng, offset, 0, 10 + offset)
        offset += struct.unpack_from(">i", data, positions[-1] + 23)[0] + 1
    damaged = bytearray(data)
    flip = next(p for p in positions if p > 2 * 1024 * 1024)
    damaged[flip + 70] ^= 0xFF
    for image in (data, damaged):
        outcomes = {name: _recover_with(scan, tmp_path / "p", bytes(image), 0, 4096,
                                        10 * 1024 * 1024, True, monkeypatch)
                    for name, scan in RECOVERY_SCANS.items()}
        reference = outcomes.pop("per-batch")
        assert all(o == reference for o in outcomes.values())
    assert reference[1] == flip  # the damaged image is cut at the flipped batch


# --- checked reads ----------------------------------------------------------------------------

def _ensure_valid_with(scan: Any, data: bytes, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(memory_records, "scan_valid", scan)
    try:
        return MemoryRecords(data).ensure_valid_batches()
    except KafkalogError as e:
        return type(e).__name__, str(e)


def test_ensure_valid_batches__hostile_buffers__same_result_or_error_on_every_scan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """FMT-46, FMT-52: a checked read of damaged bytes raises the per-batch walk's error (type
    and message, naming the batch) or returns its batch count and next offset."""
    rng = random.Random(29)
    for case in range(300):
        data, positions = _segment_bytes(rng, rng.choice([0, 5000]), rng.randint(1, 12))
        data = _damage(rng, data, positions)
        if rng.random() < 0.5:
            del data[rng.randrange(len(data) + 1):]  # a read cut anywhere, as max_bytes does
        results = {name: _ensure_valid_with(scan, bytes(data), monkeypatch)
                   for name, scan in VALID_SCANS.items()}
        reference = results.pop("per-batch")
        for name, result in results.items():
            assert result == reference, f"case {case}: the {name} scan differs"


def test_ensure_valid_batches__crc_flip__raises_corrupt_record_naming_the_batch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """ERR-20 through the one-pass check: the second batch's flipped byte is reported at its
    position, whichever scan is active."""
    rng = random.Random(2)
    data, positions = _segment_bytes(rng, 0, 3)
    data[positions[1] + 40] ^= 0x01
    for scan in VALID_SCANS.values():
        name, message = _ensure_valid_with(scan, bytes(data), monkeypatch)
        assert name == "CorruptRecordError" and f"@{positions[1]}" in message


# --- the two scan implementations ---------------------------------------------------------------

@NEEDS_C
def test_compiled_and_python_scans__random_damaged_buffers__return_identical_values() -> None:
    """The C twin returns exactly the Python reference's tuples, including on garbage."""
    rng = random.Random(41)
    for _ in range(400):
        data, positions = _segment_bytes(rng, rng.choice([0, 2**31]), rng.randint(0, 10))
        if positions:
            data = _damage(rng, data, positions)
        if rng.random() < 0.1:
            data = bytearray(rng.randbytes(rng.randint(0, 200)))
        buf = bytes(data)
        assert _scan.scan_valid(buf) == batch_scan.py_scan_valid(buf)
        args = (rng.randint(0, 10**6), rng.choice([0, 2**31]), rng.choice([0, 100, 4096]),
                rng.choice([0, -5000]), rng.choice([-1, 1500]), rng.choice([-1, 7]),
                rng.randint(0, 3), rng.choice([3, 10**6]), rng.choice([0, 2**31 + 3]),
                rng.randint(0, 2), rng.choice([3, 10**6]), rng.choice([-1, 999, 2000]),
                rng.choice([0, 2**31 + 5]), rng.random() < 0.5, rng.choice([None, 0, 2, 9]))
        assert _scan.scan_recovery(buf, *args) == batch_scan.py_scan_recovery(buf, *args)


@NEEDS_C
def test_compiled_crc32c__any_length_and_alignment__matches_the_crc32c_package() -> None:
    """FMT-46's CRC-32C from the extension's interleaved hardware path (and its table path)."""
    rng = random.Random(5)
    for n in [*range(70), 255, 256, 767, 768, 769, 3072, 12288, 16366, 24576, 100_003]:
        data = rng.randbytes(n + 7)
        for skew in range(0, 8, 3):
            assert _scan.crc32c(data[skew:skew + n]) == crc32c(data[skew:skew + n])


def test_active_scan__is_named_for_doctor_and_bench_lines() -> None:
    """`batch_scan.ACTIVE` says which path runs; KAFKALOG_PURE_PYTHON=1 selects Python."""
    assert batch_scan.ACTIVE.startswith("C extension" if batch_scan.COMPILED else "pure Python")


# --- the later passes of an unclean load ---------------------------------------------------------

def _transactional_log(directory: Path) -> None:
    """Several segments mixing plain, idempotent and transactional batches with aborts and
    commits, left as a crash leaves them, without `.txnindex` or snapshot files."""
    from kafkalog.impl.log.log import Log
    from kafkalog.impl.producer.producer_state_manager import AppendOrigin

    config = LogConfig(segment_bytes=400)
    log = Log.open(FS, directory, config, MockTime(1_000))
    one = (ValueRecord(None, b"v", 5),)
    for round_ in range(4):
        log.append_as_leader(MemoryRecords.with_records(one), 0)
        for pid in (7, 8):
            log.append_as_leader(MemoryRecords.with_records(
                one, producer=(pid, 0, round_), is_transactional=True), 0)
        log.append_as_leader(MemoryRecords.with_records(one, producer=(3, 0, round_)), 0)
        for pid, commit in ((7, round_ % 2 == 0), (8, False)):
            log.append_as_leader(MemoryRecords.end_txn_marker(pid, 0, commit, 1, 1_000), 0,
                                 origin=AppendOrigin.COORDINATOR)
    log.local_log.flush(log.log_end_offset)
    log.close_handlers()
    for f in [*directory.glob("*.txnindex"), *directory.glob("*.snapshot")]:
        f.unlink()


def _unclean_load(directory: Path) -> tuple[Any, dict[str, bytes]]:
    from kafkalog.impl.log.log import Log

    log = Log.open(FS, directory, LogConfig(segment_bytes=400), MockTime(1_000),
                   recovery_point=0, had_clean_shutdown=False)
    try:
        state = log.state()
    finally:
        log.close()
    files = {f.name: f.read_bytes() for f in sorted(directory.iterdir())
             if f.suffix in (".txnindex", ".snapshot", ".index", ".timeindex")}
    return state, files


def test_unclean_load__remembered_producer_batches__same_txn_index_snapshots_and_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PSR-7, KL-TXN-8: the `.txnindex` rebuild and producer-state recovery that read only the
    batches the recovery walk remembered leave the same files and state as full walks."""
    _transactional_log(tmp_path / "t-0")
    shutil.copytree(tmp_path / "t-0", tmp_path / "copy" / "t-0")
    remembered = _unclean_load(tmp_path / "t-0")
    for module in (producer_rebuild, txn_recovery):  # every later pass walks it all
        monkeypatch.setattr(module, "recovered_batches_of", lambda segment: None)
    walked = _unclean_load(tmp_path / "copy" / "t-0")
    assert remembered == walked
    assert remembered[0].aborted_txns, "the log must have aborted transactions to rebuild"


def test_recovery_walk__more_producer_batches_than_remembered__later_passes_walk_the_segment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory stays bounded: past MAX_REMEMBERED producer batches the walk's facts are dropped
    and no longer describe the segment, so the later passes read it whole."""
    monkeypatch.setattr(segment_recovery, "MAX_REMEMBERED", 1)
    data = bytearray()
    for offset in range(3):
        data += MemoryRecords.with_records([ValueRecord(None, b"v", 5)], base_offset=offset,
                                           producer=(7, 0, offset)).to_bytes()
    (tmp_path / f"{0:020d}.log").write_bytes(bytes(data))
    seg = LogSegment.open(FS, tmp_path, 0, LogConfig(), MockTime(), file_already_exists=True)
    try:
        assert seg.recover() == 0
        seen = seg.recovered_batches
        assert seen is not None and not seen.complete and seen.producer_positions == []
        assert segment_recovery.recovered_batches_of(seg) is None
    finally:
        seg.close_handlers()


def test_recovery__segment_based_at_the_int64_limit__every_scan_matches_the_per_batch_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Offsets that pass the int64 limit inside a segment based just below it (hostile bytes)
    are left to the per-batch path's integers; no scan overflows."""
    base = 2**63 - 20
    data = bytearray()
    for offset in (base, base + 5, 2**63 - 1, base + 10):  # the third one ends at 2**63
        batch = bytearray(MemoryRecords.with_records([ValueRecord(None, b"v" * 300, 5)] * 2,
                                                     base_offset=0).to_bytes())
        struct.pack_into(">q", batch, 0, offset)  # outside the CRC (FMT-47)
        data += batch
    outcomes = {name: _recover_with(scan, tmp_path / "p", bytes(data), base, 0, 10 * 1024 * 1024,
                                    True, monkeypatch)
                for name, scan in RECOVERY_SCANS.items()}
    reference = outcomes.pop("per-batch")
    assert all(o == reference for o in outcomes.values())
    assert reference[0][0] == "InvalidOffsetError"  # the fourth batch goes back: RCV-6 empties


def _plain_segment(batches: int) -> tuple[bytearray, list[int]]:
    data, positions = bytearray(), []
    for offset in range(batches):
        positions.append(len(data))
        data += MemoryRecords.with_records([ValueRecord(None, b"x" * 500, 10 + offset)],
                                           base_offset=offset, partition_leader_epoch=0).to_bytes()
    return data, positions


@pytest.mark.parametrize("damage", ["crc flip", "length below 14", "length below the header",
                                    "length past the end", "truncated header", "legacy magic"])
def test_recovery__damaged_third_batch__cut_before_it_on_every_scan(
        damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SEG-15 step 4, FMT-52, ERR-19/20: recovery keeps exactly the two batches before the
    damage and rebuilds their index entries, whichever scan runs."""
    data, positions = _plain_segment(6)
    at = positions[2]
    if damage == "crc flip":
        data[at + 100] ^= 0x40
    elif damage == "length below 14":
        struct.pack_into(">i", data, at + 8, 13)
    elif damage == "length below the header":
        struct.pack_into(">i", data, at + 8, 30)
    elif damage == "length past the end":
        struct.pack_into(">i", data, at + 8, 10**6)
    elif damage == "truncated header":
        del data[at + 40:]
    else:
        data[at + 16] = 1
    outcomes = {name: _recover_with(scan, tmp_path / "p", bytes(data), 0, 0, 10 * 1024 * 1024,
                                    True, monkeypatch)
                for name, scan in RECOVERY_SCANS.items()}
    for name, outcome in outcomes.items():
        truncated, size, offset_entries = outcome[:3]
        assert size == at and truncated == len(data) - at, name
        assert [e.offset for e in offset_entries] == [1], name  # batch 1, at position > 0
        assert outcome == outcomes["per-batch"], name
