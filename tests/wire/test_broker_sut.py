"""The wire adapter against a real broker (tansu): requests, results, errors, crashes."""

from __future__ import annotations

import pytest
from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess
from kafkalog.conformance.broker.adapter import broker_features
from kafkalog.conformance.broker.process import TansuBroker
from kafkalog.conformance.broker.sut import Broker, BrokerSut, error_for, topic_configs
from kafkalog.conformance.check.sut import UnsupportedError
from kafkalog.conformance.errors import AdapterCrashedError, UnexpectedException
from kafkalog.conformance.gen.configs import config_family
from kafkalog.model import errors as e
from kafkalog.model import values as v

from kafkalog.cli.wire_cmds import wire_adapter_command

TINY = config_family("tiny")


def _log(broker: TansuBroker) -> tuple[Broker, BrokerSut]:
    conn = Broker(broker.address, broker_log=broker.log_path)
    return conn, BrokerSut(conn, broker_features(conn), TINY)


def test_error_for__maps_kafka_codes_to_the_error_catalogue() -> None:
    """OFFSET_OUT_OF_RANGE, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE have specs/errors.md names;
    a code without one is an untyped failure that never conforms."""
    assert isinstance(error_for(1, "Fetch"), e.OffsetOutOfRangeError)
    assert isinstance(error_for(10, "Produce"), e.RecordTooLargeError)
    assert isinstance(error_for(18, "Produce"), e.RecordBatchTooLargeError)
    assert isinstance(error_for(6, "Produce"), UnexpectedException)


def test_topic_configs__map_sizes_and_switch_off_broker_clock_retention() -> None:
    """Size limits map one to one (KL-WIRE-4); retention is off because it runs on the
    broker's clock (KL-WIRE-5)."""
    configs = topic_configs(TINY)
    assert configs["max.message.bytes"] == "300"
    assert configs["segment.bytes"] == "400"
    assert configs["retention.ms"] == configs["retention.bytes"] == "-1"


def test_wire_adapter__handshake__lists_black_box_and_only_apis_the_broker_offers(
        tansu: TansuBroker) -> None:
    """Tansu offers ListOffsets, InitProducerId and the transaction APIs but not
    OffsetForLeaderEpoch (KL-WIRE-1, KL-WIRE-11, KL-WIRE-12)."""
    process = AdapterProcess(wire_adapter_command(tansu.address))
    try:
        assert process.features == frozenset({"black_box", "timestamps", "producer_state",
                                              "transactions"})
        assert "core" not in process.features
    finally:
        process.close()


def test_broker_log__append_then_read__returns_the_records_produced(tansu: TansuBroker) -> None:
    """Produce carries the exact batch (KL-WIRE-6); Fetch returns it with the offsets the broker
    assigned (KL-WIRE-7) and the HW at the LEO (KL-WIRE-2)."""
    conn, log = _log(tansu)
    try:
        records = (v.Record(None, b"test", 1000), v.Record(b"k", b"v", 1001,
                                                             (v.Header("h", b"x"),)))
        info = log.append_as_leader(records, 0)
        assert (info.first_offset, info.last_offset) == (0, 1)
        again = log.append_as_leader((v.Record(None, b"test", 1002),), 0)
        assert again.first_offset == 2
        read = log.read(0, 1 << 20, v.Isolation.HIGH_WATERMARK, True)
        assert [b.base_offset for b in read.batches] == [0, 2]
        assert read.batches[0].records == records
        assert log.update_high_watermark(3) == 3
    finally:
        log.close()
        conn.close()


def test_broker_log__actions_without_a_client_api__are_unsupported(tansu: TansuBroker) -> None:
    """Truncation, another leader epoch, empty batches, a read without min_one_message:
    skipped, never compared (KL-WIRE-1, KL-WIRE-7)."""
    conn, log = _log(tansu)
    try:
        with pytest.raises(UnsupportedError):
            log.read(0, 100, v.Isolation.HIGH_WATERMARK, False)
        with pytest.raises(UnsupportedError):
            log.truncate_to(0)
        with pytest.raises(UnsupportedError):
            log.append_as_leader((v.Record(None, b"test", 1000),), 7)
        with pytest.raises(UnsupportedError):
            log.append_as_leader((), 0)
    finally:
        log.close()
        conn.close()


def test_broker_log__a_dropped_request__is_an_untyped_result_quoting_the_broker_log(
        tansu: TansuBroker) -> None:
    """DeleteRecords makes tansu 0.6.0 panic and drop the connection while it keeps serving:
    an UnexpectedException result carrying the panic, never a silent pass (KL-WIRE-8)."""
    conn, log = _log(tansu)
    try:
        log.append_as_leader((v.Record(None, b"test", 1000),), 0)
        log.update_high_watermark(1)
        with pytest.raises(UnexpectedException, match="panicked"):
            log.maybe_increment_log_start_offset(1)
        assert log.state().log_end_offset == 1  # the broker still answers
    finally:
        log.close()
        conn.close()


def test_broker_log__a_stopped_broker__is_an_adapter_error_with_its_log_tail(
        own_tansu: TansuBroker) -> None:
    """A broker that no longer accepts connections is an AdapterCrashedError (KL-WIRE-8)."""
    conn, log = _log(own_tansu)
    try:
        own_tansu.stop(grace_s=0)  # SIGKILL at once: a crash
        with pytest.raises(AdapterCrashedError, match="broker log: .*tansu"):
            log.read(0, 100, v.Isolation.HIGH_WATERMARK, True)
    finally:
        conn.close()


def test_broker_log__a_log_append_time_config__is_refused(tansu: TansuBroker) -> None:
    """LogAppendTime batches carry the broker's wall clock: left out of wire runs (KL-WIRE-5),
    and a fresh topic starts at offset 0 (KL-WIRE-4)."""
    conn = Broker(tansu.address)
    try:
        with pytest.raises(e.IllegalArgumentError, match="KL-WIRE-5"):
            BrokerSut(conn, frozenset({"black_box"}), config_family("log_append_time"))
        with pytest.raises(e.IllegalArgumentError, match="KL-WIRE-4"):
            BrokerSut(conn, frozenset({"black_box"}), TINY, log_start_offset=3)
    finally:
        conn.close()


def test_wire_adapter__broker_gone_mid_run__is_an_adapter_error_quoting_the_broker_log(
        own_tansu: TansuBroker) -> None:
    """Through the adapter protocol, a dead broker is an AdapterError (the run ends as
    adapter_error, never as a pass or a divergence) whose message carries the broker's log
    (KL-WIRE-8)."""
    from kafkalog.conformance.adapter.subprocess_sut import SubprocessSut
    from kafkalog.conformance.errors import AdapterError

    process = AdapterProcess(wire_adapter_command(own_tansu.address,
                                                  broker_log=own_tansu.log_path))
    try:
        log = SubprocessSut(process, TINY)
        own_tansu.stop(grace_s=0)
        with pytest.raises(AdapterError, match="broker log: .*tansu"):
            log.read(start_offset=0, max_bytes=100, isolation=v.Isolation.HIGH_WATERMARK,
                     min_one_message=True)
    finally:
        process.close()
