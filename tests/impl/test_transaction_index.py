"""`.txnindex` files, markers and read_committed in the implementation (KL-TXN-*, PSF-8..10)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.transaction_index import TransactionIndex, decode_entries, encode_entry
from kafkalog.impl.log.log import Log
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.impl.verify.verifier import verify_log_dir
from kafkalog.model.errors import IllegalArgumentError
from kafkalog.model.values import AbortedTxnEntry, Isolation, LogConfig, Record

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.memory_records import MemoryRecords as KafkaMemoryRecords

ONE = (Record(None, b"v", 5),)
TXN_PART = ("k3.7-kraft-clean-txn", "_confluent-ksql-default__command_topic-0")


def test_aborted_txn_entry__is_kafkas_34_bytes() -> None:
    """Spec: KL-TXN-4 — PSF-8 vector AbortedTxn(983493, 137, 299, 200)."""
    raw = encode_entry(AbortedTxnEntry(983493, 137, 299, 200))
    assert raw.hex() == ("0000" "00000000000f01c5" "0000000000000089" "000000000000012b"
                         "00000000000000c8")
    assert decode_entries(raw + b"\x00" * 10, "t") == [AbortedTxnEntry(983493, 137, 299, 200)]


def test_transaction_index__truncates_and_refuses_non_increasing_appends(tmp_path: Path) -> None:
    """Spec: KL-TXN-8 — TIT.testTruncate / testLastOffsetMustIncrease (PSF-9, PSF-10)."""
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(FileSystem(), lambda: path, 0)
    for pid, first, last, lso in [(0, 0, 10, 2), (1, 5, 15, 16), (2, 18, 35, 25),
                                  (3, 32, 50, 40)]:
        index.append(AbortedTxnEntry(pid, first, last, lso))
    with pytest.raises(IllegalArgumentError):
        index.append(AbortedTxnEntry(4, 40, 50, 51))
    index.truncate_to(51)
    assert len(index.entries()) == 4
    index.truncate_to(50)
    assert [e.last_offset for e in index.entries()] == [10, 15, 35]
    assert path.stat().st_size == 3 * 34
    index.append(AbortedTxnEntry(4, 40, 50, 51))  # the last offset is 35 again
    fresh = TransactionIndex(FileSystem(), lambda: path, 0)
    assert [e.producer_id for e in fresh.entries()] == [0, 1, 2, 4]


def _aborting(sut: ModelSut | ImplSut) -> None:
    sut.append_as_leader(ONE, 0, 7, 0, 0, True)
    sut.append_as_leader(ONE, 0)
    sut.append_as_leader(ONE, 0, 8, 0, 0, True)
    sut.append_marker(7, 0, False, 1, 0)
    sut.append_as_leader(ONE, 0, 9, 0, 0, True)
    sut.append_marker(8, 0, False, 1, 0)
    sut.append_marker(9, 0, True, 1, 0)


def test_impl__matches_the_model_on_aborts_reads_and_truncation() -> None:
    """Spec: KL-TXN-4, KL-TXN-9 — same index, LSO and read_committed answers as the model."""
    config = LogConfig(segment_bytes=250)
    model, impl = ModelSut(config), ImplSut(config)
    try:
        for sut in (model, impl):
            _aborting(sut)
            sut.update_high_watermark(5)
        assert impl.state() == model.state()
        for start in range(0, 7):
            for size in (1, 80, 10_000):
                assert impl.read(start, size, Isolation.TXN_COMMITTED, False) == \
                    model.read(start, size, Isolation.TXN_COMMITTED, False), (start, size)
        for sut in (model, impl):
            sut.truncate_to(4)
        assert impl.state() == model.state()
        assert impl.check() == []
    finally:
        impl.close()


def test_unclean_recovery__rebuilds_the_txn_index(tmp_path: Path) -> None:
    """Spec: KL-TXN-8 — PSR-7: a recovered segment's `.txnindex` is rebuilt from its markers."""
    fs, time, config = FileSystem(), MockTime(1_000), LogConfig(segment_bytes=250)
    log = Log.open(fs, tmp_path / "t-0", config, time)

    def marker(pid: int, commit: bool) -> None:
        log.append_as_leader(MemoryRecords.end_txn_marker(pid, 0, commit, 1, 1_000), 0,
                             origin=_coordinator())

    for pid in (7, 8):
        log.append_as_leader(MemoryRecords.with_records(ONE, producer=(pid, 0, 0),
                                                        is_transactional=True), 0)
    marker(7, False)
    log.append_as_leader(MemoryRecords.with_records(ONE, producer=(9, 0, 0),
                                                    is_transactional=True), 0)
    marker(8, False)
    marker(9, False)
    before = log.state().aborted_txns
    assert before is not None and len(before) == 3
    log.local_log.flush(log.log_end_offset)
    log.close_handlers()  # a crash: no clean-shutdown work
    for f in (tmp_path / "t-0").glob("*.txnindex"):
        f.write_bytes(b"")
    for f in (tmp_path / "t-0").glob("*.snapshot"):
        f.unlink()
    again = Log.open(fs, tmp_path / "t-0", config, time, recovery_point=0)
    try:
        assert again.state().aborted_txns == before
    finally:
        again.close()


def test_unclean_load__txn_begun_below_the_log_start__indexed_alike_by_every_load(
        tmp_path: Path) -> None:
    """KL-CRASH-11, KL-CRASH-7: a transaction's first batch (offset 0) is gone with its segment,
    its abort marker is at 2. The log-start checkpoint reads 0 (FMT-40: the log start is the
    first base), so Kafka's recovery pass would read the snapshot at the log start (1) and index
    first offset 0, and the same load deletes that snapshot, so the next load indexes 1. Both
    passes start at the loaded log start instead: every load indexes 1."""
    fs, time, config = FileSystem(), MockTime(1_000), LogConfig(segment_bytes=250)
    d = tmp_path / "t-0"
    log = Log.open(fs, d, config, time)
    for seq in (0, 1):
        log.append_as_leader(MemoryRecords.with_records(ONE, producer=(1, 0, seq),
                                                        is_transactional=True), 0)
        if seq == 0:
            log.roll()
            log.update_high_watermark(1)
            log.maybe_increment_log_start_offset(1)
            assert log.delete_old_segments() == 1
    log.append_as_leader(MemoryRecords.end_txn_marker(1, 0, False, 1, 1_000), 0,
                         origin=_coordinator())
    assert log.state().aborted_txns == (AbortedTxnEntry(1, 0, 2, 3),)  # as Kafka writes it
    loads = []
    for _ in range(2):
        log.flush()
        log.close_handlers()  # a crash: no clean-shutdown work
        log = Log.open(fs, d, config, time, log_start_offset=0, recovery_point=0)
        loads.append(log.state().aborted_txns)
    log.close()
    assert loads == [(AbortedTxnEntry(1, 1, 2, 3),)] * 2


def _coordinator():  # type: ignore[no-untyped-def]
    from kafkalog.impl.producer.producer_state_manager import AppendOrigin
    return AppendOrigin.COORDINATOR


def _consumer_view(data: bytes, aborted: list[tuple[int, int]]) -> list[tuple[int, bytes]]:
    """TXN-18: kafka-python's batches filtered as a read_committed consumer filters them."""
    parsed, out = KafkaMemoryRecords(data), []
    pending = sorted(aborted, key=lambda a: a[1])
    aborted_pids: set[int] = set()
    while (batch := parsed.next_batch()) is not None:
        while pending and pending[0][1] <= batch.base_offset + batch.last_offset_delta:
            aborted_pids.add(pending.pop(0)[0])
        if batch.is_control_batch:
            record = next(iter(batch))
            if record.abort:
                aborted_pids.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborted_pids:
            continue
        out.extend((r.offset, r.value) for r in batch)
    return out


def test_fixture_transactional_partition__reads_committed_as_kafka_python_parses_it(
        kafka_fixtures: Path, tmp_path: Path) -> None:
    """Spec: KL-TXN-9 — the broker's transactional batch + COMMIT marker, read_committed."""
    part = kafka_fixtures.joinpath(*TXN_PART)
    target = tmp_path / part.name
    shutil.copytree(part, target)
    for f in target.iterdir():
        f.chmod(0o644)
    log = Log.open(FileSystem(), target, LogConfig(), MockTime(1_700_000_000_000),
                   had_clean_shutdown=True, high_watermark=2)
    try:
        assert (log.last_stable_offset, log.producer_state.first_unstable_offset()) == (2, None)
        info = log.read(0, 1 << 20, Isolation.TXN_COMMITTED, True)
        assert info.aborted_transactions == ()
        data = bytes(info.records.buffer)
        ours = [(b.base_offset, b.is_transactional, b.is_control_batch)
                for b in info.records.batches()]
        assert ours == [(0, True, False), (1, True, True)]
        committed = _consumer_view(data, [(a.producer_id, a.first_offset)
                                          for a in info.aborted_transactions])
        whole = _consumer_view(part.joinpath("00000000000000000000.log").read_bytes(), [])
        assert committed == whole and len(committed) == 1
        assert log.read(2, 100, Isolation.TXN_COMMITTED, True).aborted_transactions == ()
    finally:
        log.close()
    report = verify_log_dir(FileSystem(), kafka_fixtures / TXN_PART[0])
    assert report.problems == []  # its .log, indexes and snapshots verify


def test_verify_and_dump__read_txn_index_files(tmp_path: Path) -> None:
    """Spec: KL-TXN-4 — verify accepts a written index and flags one naming no ABORT marker;
    dump prints kafka-dump-log's AbortedTxn lines."""
    from click.testing import CliRunner

    from kafkalog.cli.inspect_cmds import dump, verify

    impl = ImplSut(LogConfig())
    try:
        _aborting(impl)
        impl.log.close()
        part = impl.partition_dir
        index = part / "00000000000000000000.txnindex"
        result = CliRunner().invoke(dump, [str(index)])
        assert result.exit_code == 0
        assert "version: 0 producerId: 7 firstOffset: 0 lastOffset: 3 lastStableOffset: 2" \
            in result.output
        assert CliRunner().invoke(verify, [str(impl.root)]).exit_code == 0
        index.write_bytes(index.read_bytes() + encode_entry(AbortedTxnEntry(7, 0, 4, 5)))
        result = CliRunner().invoke(verify, [str(impl.root)])
        assert result.exit_code == 1 and "txn_index_no_abort_marker" in result.output
    finally:
        shutil.rmtree(impl.root, ignore_errors=True)
