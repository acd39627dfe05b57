"""Idempotent producers and transactions over the wire (KL-WIRE-11, KL-WIRE-12), and the
broker's file times in timestamp lookups (KL-WIRE-5).

The pure projections are checked on values; the producer table and the coordinator's
transactions against one Apache Kafka 4.4 broker started for this module (10-20 s of JVM start).
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_tools import CLI
from kafkalog.conformance.broker.adapter import broker_features
from kafkalog.conformance.broker.kafka import KafkaBroker, kafka_unavailable
from kafkalog.conformance.broker.registry import KAFKA_44
from kafkalog.conformance.broker.sut import Broker, BrokerSut, error_for
from kafkalog.conformance.check import black_box
from kafkalog.conformance.check.sut import ModelSut, StepResult, UnsupportedError
from kafkalog.conformance.gen.configs import config_family
from kafkalog.conformance.gen.producers import is_producer_config
from kafkalog.conformance.gen.transactions import is_txn_config
from kafkalog.model import errors as e
from kafkalog.model import values as v
from kafkalog.model.producer.transaction_entry import marker_record

TS = 1_700_000_000_000
BIG_ID = 2**63 - 1  # a model producer id no broker assigns


def _batch(control: bool, ts: int) -> v.BatchView:
    record = marker_record(False, 0, ts) if control else v.Record(None, b"test", ts)
    return v.BatchView(0, 0, 0, ts, 78, 0, (record,), producer_id=1, producer_epoch=0,
                       is_transactional=True, is_control=control)


def test_project_result__hides_the_coordinators_clock_on_markers_only() -> None:
    """A marker's timestamps are the coordinator's wall clock; a data batch's are compared
    (KL-WIRE-12)."""
    def read(batch: v.BatchView) -> v.FetchDataInfo:
        return black_box.project_result(v.FetchDataInfo(v.LogOffsetMetadata(0), 78, (batch,)))

    assert read(_batch(True, TS)) == read(_batch(True, TS + 10**11))
    assert read(_batch(False, TS)) != read(_batch(False, TS + 1))


def test_project_states__compares_the_lso_once_the_model_hw_caught_up() -> None:
    """Right after an append only the broker's HW has moved; the LSO is compared in the HW
    step that follows (KL-WIRE-2, KL-WIRE-12), then every step."""
    pending = v.LogStateView(0, 1, 2, -1, (), (), (), last_stable_offset=1)
    broker = v.LogStateView(0, 2, 2, -1, (), (), (), last_stable_offset=2)
    model, impl = black_box.project_states(pending, broker)
    assert model == impl
    caught_up = dataclasses.replace(pending, high_watermark=2)
    model, impl = black_box.project_states(caught_up, broker)
    assert model != impl and model.last_stable_offset == 1


def test_with_broker_file_times__an_untimestamped_segment_dated_now_answers_the_lookup() -> None:
    """A segment without timestamps counts its file's mtime (SEG-19): the broker's wall clock,
    so Kafka answers "none" where the model's clock lets the lookup reach the next segment
    (KL-WIRE-5)."""
    model = ModelSut(config_family("tiny"), TS)
    black_box.become_leader(model, 0)
    model.append_as_leader((v.Record(None, b"test", -1),), 0)
    model.roll()
    model.append_as_leader((v.Record(None, b"test", TS + 1000),), 0)
    model.update_high_watermark(2)
    before = model.partition_state
    args = {"timestamp": TS + 1000}
    assert model.fetch_offset_by_timestamp(**args) is not None
    broker = StepResult(value=None)
    explained = black_box.with_broker_file_times(model, "fetch_offset_by_timestamp", args,
                                                 before, broker)
    assert explained is not None and explained.value is None
    other = StepResult(value=v.TimestampAndOffset(TS + 1000, 0, 0))
    assert black_box.with_broker_file_times(model, "fetch_offset_by_timestamp", args, before,
                                            other) is None


def test_family_predicates__hold_under_any_kafka_version_profile() -> None:
    """`--wire-broker kafka-3.9` checks against the 3.9 profile: its producer and transaction
    families still get their producer actors."""
    producers = dataclasses.replace(config_family("producers"), kafka_version="3.9")
    txn = dataclasses.replace(config_family("transactions_wire"), kafka_version="3.9")
    assert is_producer_config(producers) and is_txn_config(txn)
    assert not is_txn_config(dataclasses.replace(config_family("tiny"), kafka_version="3.9"))


def test_error_for__producer_codes__are_the_models_errors() -> None:
    """OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE (PSE-1..3)."""
    assert isinstance(error_for(45, "Produce"), e.OutOfOrderSequenceError)
    assert isinstance(error_for(47, "Produce"), e.InvalidProducerEpochError)
    assert isinstance(error_for(48, "Produce"), e.InvalidTxnStateError)


# --- against Apache Kafka 4.4 ---------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka44(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    reason = kafka_unavailable(KAFKA_44)
    if reason is not None:
        pytest.skip(f"Kafka {KAFKA_44} cannot be started here: {reason}")
    with KafkaBroker(KAFKA_44, tmp_path_factory.mktemp("kafka44") / "kafka.log") as broker:
        yield broker


@pytest.fixture
def txn_log(kafka44: KafkaBroker) -> Iterator[BrokerSut]:
    conn = Broker(kafka44.address, segment_key="internal.segment.bytes")
    log = BrokerSut(conn, broker_features(conn), config_family("transactions_wire"))
    try:
        yield log
    finally:
        log.close()
        conn.close()


def _one(log: BrokerSut, pid: int, epoch: int, seq: int, txn: bool = False) -> v.LogAppendInfo:
    return log.append_as_leader((v.Record(None, b"test", TS),), 0, pid, epoch, seq, txn)


def test_kafka_44__idempotent_batches__duplicates_gaps_and_fencing_as_the_model(
        txn_log: BrokerSut) -> None:
    """The model's producer id travels as the broker's and comes back as the model's; a retry
    answers the original offset, a gap OUT_OF_ORDER_SEQUENCE_NUMBER, a stale epoch
    INVALID_PRODUCER_EPOCH (KL-WIRE-11)."""
    assert _one(txn_log, BIG_ID, 0, 0).first_offset == 0
    assert _one(txn_log, BIG_ID, 0, 0).first_offset == 0  # duplicate: the original offset
    with pytest.raises(e.OutOfOrderSequenceError):
        _one(txn_log, BIG_ID, 0, 5)
    assert _one(txn_log, BIG_ID, 1, 0).first_offset == 1
    with pytest.raises(e.InvalidProducerEpochError):
        _one(txn_log, BIG_ID, 0, 1)
    read = txn_log.read(0, 1 << 16, v.Isolation.HIGH_WATERMARK, True)
    assert [(b.producer_id, b.producer_epoch) for b in read.batches] == [(BIG_ID, 0), (BIG_ID, 1)]


def test_kafka_44__aborted_transaction__marker_lso_and_read_committed(txn_log: BrokerSut) -> None:
    """A transactional batch holds the LSO; EndTxn makes the coordinator write the ABORT marker
    at the next offset; read_committed lists the aborted transaction under the model's id; a
    second marker with none open cannot be asked of the coordinator (KL-WIRE-12)."""
    _one(txn_log, 7, 0, 0)
    assert _one(txn_log, 1, 0, 0, txn=True).first_offset == 1
    assert txn_log.state().last_stable_offset == 1
    marker = txn_log.append_marker(1, 0, False, 0, 0)
    assert (marker.first_offset, marker.last_offset) == (2, 2)
    assert txn_log.state().last_stable_offset == 3
    read = txn_log.read(0, 1 << 16, v.Isolation.TXN_COMMITTED, True)
    assert read.aborted_transactions == (v.AbortedTransaction(1, 1),)
    assert [b.is_control for b in read.batches] == [False, False, True]
    with pytest.raises(UnsupportedError, match="open transaction"):
        txn_log.append_marker(1, 0, True, 0, 0)
    with pytest.raises(UnsupportedError, match="wall clock"):
        txn_log.fetch_offset_by_timestamp(TS)


def test_kafka_44__transactional_batch_of_another_epoch__is_unsupported(
        txn_log: BrokerSut) -> None:
    """The coordinator assigned epoch 0; a transactional batch of epoch 3 cannot be sent
    (KL-WIRE-12)."""
    with pytest.raises(UnsupportedError, match="assigned epoch 0"):
        _one(txn_log, 2, 3, 0, txn=True)


def test_check__kafka_44__producer_and_transaction_families__conform(
        kafka44: KafkaBroker, tmp_path: Path) -> None:
    """Four runs over both families conform, and coordinator-written markers were compared
    (KL-WIRE-11, KL-WIRE-12)."""
    adapter = (f"kafkalog wire-adapter --bootstrap {kafka44.address} "
               "--segment-bytes-config internal.segment.bytes")
    done = subprocess.run(
        [*CLI, "check", "--adapter", adapter, "--family", "transactions_wire", "--family",
         "producers", "--examples", "4", "--steps", "60", "--seed", "3", "--time-limit", "60",
         "--out", str(tmp_path)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "all runs conformed" in done.stderr
    assert "append_marker" in done.stderr and "KL-PROD-2" in done.stderr
