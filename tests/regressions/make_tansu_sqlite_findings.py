"""Build tests/regressions/WIRE-tansu-sqlite-*.jsonl: divergences of Tansu's SQLite engine.

Run `python tests/regressions/make_tansu_sqlite_findings.py tests/regressions [NAME ...]`
(cargo installed: the first start builds Tansu 0.6.0 with its SQLite engine, about 40 minutes;
or set KAFKALOG_TANSU_SQLITE_BIN). It starts the broker on a free loopback port and records each
scripted scenario (the NAMEs given, or all) up to its first divergence: the shrunk traces
`kafkalog check --wire-broker tansu-sqlite` finds, written out so that each names one finding.
Most are the in-memory Tansu's findings (make_wire_findings.py) met again through the other
engine. Each scenario gets a broker of its own: a panic in the engine ends its storage service
for the broker's lifetime.

Each trace's header names the broker, with its pinned version, in `finding`: the regression
corpus replays it against the model and checks the broker's recorded answer still differs from
the model's (tests/conformance/test_regressions.py). A finding the broker fixed stops being
written and is reported here.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kafkalog.conformance.broker.tansu_sqlite import TANSU_VERSION, TansuSqliteBroker
from kafkalog.model import values as v
from make_wire_findings import SCRIPTED as TANSU_SCRIPTED
from make_wire_findings import _idempotent, _leader
from wire_findings import read_step, record_scenario

BROKER = f"tansu-sqlite {TANSU_VERSION}"
TOPIC_PREFIX = f"kafkalog-tansu-sqlite-{TANSU_VERSION}-"

# name: (config family, steps)
SCRIPTED = {
    **{name: TANSU_SCRIPTED[name] for name in (
        "by_time_answers_offset_0_with_wall_clock", "latest_answers_wall_clock_timestamp",
        "max_timestamp_drops_connection", "fresh_producer_sequence_1_is_out_of_order")},
    # A by-time lookup on an empty partition: Kafka finds no offset (KL-TIME-4).
    "by_time_on_empty_log_answers_offset_0": ("tiny", [
        ("fetch_offset_by_timestamp", {"timestamp": 1000})]),
    # ListOffsets EARLIEST answers the first record's timestamp (the engine's query selects it);
    # Kafka answers timestamp -1 with the log start offset (KL-TIME-1).
    "earliest_answers_first_record_timestamp": ("roomy", [
        *_leader(1000), ("fetch_offset_by_timestamp", {"timestamp": v.EARLIEST_TIMESTAMP})]),
    # As in the in-memory engine, a fetched batch carries partition leader epoch -1; Kafka
    # stamps the leader's epoch, 0 here (KL-READ-1).
    "fetched_batches_carry_epoch_minus_1": ("roomy", [*_leader(1000), read_step(0, 1 << 20)]),
    # A 416-byte batch with max.message.bytes=300: Kafka answers MESSAGE_TOO_LARGE (KL-APPEND-4).
    "max_message_bytes_ignored": ("producers", [
        ("append_as_leader", {"records": (v.Record(None, b"x" * 350, 1000),),
                              "leader_epoch": 0})]),
    # The in-memory engine fences a higher idempotent epoch (PRODUCER_FENCED); this one looks up
    # the producer's row for the batch's epoch, finds none for an epoch it never assigned and
    # panics (`more or less than one row`): Produce answers UNKNOWN_SERVER_ERROR, and the
    # storage service has ended, so every later request of any topic fails (`SendError`).
    # Kafka starts the epoch at sequence 0 (KL-PROD-4, KL-PROD-7).
    "idempotent_higher_epoch_is_unknown_error": ("producers", [
        _idempotent(producer_epoch=32767, base_sequence=0)]),
    # A record without a timestamp (-1, FMT-22): the engine stores it as sent but reads every
    # timestamp back as unsigned milliseconds, so a Fetch over it fails (`SansIo(TryFromInt)`)
    # and drops the connection; Kafka returns the batch (KL-READ-1). The record sits between two
    # with a timestamp because ListOffsets EARLIEST and LATEST read the first and the last
    # record's timestamp: as either, it fails the adapter's state query after the append (the
    # two scenarios that follow).
    "read_of_record_without_timestamp_drops_connection": ("roomy", [
        ("append_as_leader", {"records": (v.Record(None, b"test", 1000),
                                          v.Record(None, b"test", v.NO_TIMESTAMP),
                                          v.Record(None, b"test", 1000)),
                              "leader_epoch": 0}),
        ("update_high_watermark", {"offset": 3}),
        read_step(0, 1 << 20)]),
    # The same record as the log's first: the adapter's state query after the append
    # (ListOffsets EARLIEST, KL-WIRE-3) fails (`SansIo(TryFromInt)`) and drops the connection,
    # a `state()` divergence; Kafka answers the log start offset (KL-TIME-1).
    "earliest_over_record_without_timestamp_drops_connection": ("roomy", [
        ("append_as_leader", {"records": (v.Record(None, b"test", v.NO_TIMESTAMP),),
                              "leader_epoch": 0})]),
    # As the log's last record, after one with a timestamp: ListOffsets LATEST in the state
    # query fails the same way; Kafka answers the log end offset (KL-TIME-2).
    "latest_over_record_without_timestamp_drops_connection": ("roomy", [
        *_leader(1000),
        ("append_as_leader", {"records": (v.Record(None, b"test", v.NO_TIMESTAMP),),
                              "leader_epoch": 0})]),
    # The engine's `delete_records` is `todo!()`: its panic ends the storage service, so every
    # later request of any topic fails (why each scenario gets a broker of its own).
    "delete_records_panics": ("tiny", [
        *_leader(1000), ("maybe_increment_log_start_offset", {"offset": 1})]),
}


def main(out: Path, names: list[str]) -> None:
    for name in names or SCRIPTED:
        with tempfile.TemporaryDirectory() as tmp, \
                TansuSqliteBroker(Path(tmp) / "tansu-sqlite.log") as broker:
            record_scenario(name, *SCRIPTED[name], broker, TOPIC_PREFIX, BROKER, out,
                            "tansu-sqlite")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
