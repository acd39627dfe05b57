"""Build tests/regressions/WIRE-nafka-*.jsonl: divergences of nafka, as traces.

Run `python tests/regressions/make_nafka_findings.py tests/regressions` (the first start makes
nafka's own virtual environment from PyPI, conformance/broker/nafka_broker.py; or
$KAFKALOG_NAFKA_PYTHON names an interpreter that imports nafka 0.1). It starts nafka on a free
loopback port and records each scripted scenario below up to its first divergence. The
scenarios are the shrunk traces `kafkalog check --wire-broker nafka` finds, written out by hand
so that each names one finding.

nafka offers no CreateTopics, so every run is on a topic its Metadata "auto-creates", with
Kafka's default configs: the `kafka_defaults` family. Most rows have one of two causes read from
its source: it stores records, not batches, and a Fetch re-encodes what it finds into one new
batch whose base offset is 0; and its ListOffsets answers the request's timestamp and, when no
record qualifies, the log end offset.

Each trace's header names the broker, with nafka's exact version, in `finding`: the regression
corpus replays it against the model and checks the broker's recorded answer still differs from
the model's (tests/conformance/test_regressions.py). A finding nafka fixed stops being written
and is reported here.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kafkalog.conformance.broker.nafka_broker import NAFKA_VERSION, NafkaBroker
from kafkalog.model import values as v
from wire_findings import Steps, leader_steps, read_step, record_scenario

BROKER = f"nafka {NAFKA_VERSION}"
TOPIC_PREFIX = f"kafkalog-nafka-{NAFKA_VERSION}-"
FAMILY = "kafka_defaults"  # no CreateTopics: the broker's defaults are Kafka's (KL-WIRE-4)
#: Kafka's default max.message.bytes (the kafka_defaults family's).
MAX_MESSAGE_BYTES = 1048588


def _by_time(timestamp: int) -> tuple[str, dict[str, object]]:
    return ("fetch_offset_by_timestamp", {"timestamp": timestamp})


# name: steps (all in the kafka_defaults family)
SCRIPTED: dict[str, Steps] = {
    # A batch above max.message.bytes (Kafka's default, 1,048,588) is MESSAGE_TOO_LARGE in
    # Kafka (KL-APPEND-4); nafka checks no size and appends it.
    "max_message_bytes_ignored": [
        ("append_as_leader", {"records": (v.Record(None, b"x" * MAX_MESSAGE_BYTES, 1000),),
                              "leader_epoch": 0})],
    # A Fetch answers the batches as the producer wrote them (KL-READ-2): two one-record
    # batches at 0 and 1. nafka re-encodes the records it finds into one batch of both.
    "fetch_merges_batches": [*leader_steps(1000, 1001), read_step(0, 1 << 20)],
    # A Fetch from 1 answers the batch at 1 (base offset 1); nafka's new batch has base offset
    # 0, its record at delta 1, so the batch starts at an offset the log does not hold there.
    "fetch_batch_base_offset_0": [*leader_steps(1000, 1001), read_step(1, 1 << 20)],
    # Kafka fills a Fetch up to max bytes, the last batch cut short (KL-READ-5): 80 bytes
    # here, the first 72-byte batch whole and 8 bytes of the second. nafka stops adding records
    # to its new batch before it outgrows max bytes (two records would take 83): the first
    # record alone, 72 bytes, a batch equal to the producer's.
    "fetch_sends_no_partial_batch": [*leader_steps(1000, 1001), read_step(0, 80)],
    # A Fetch at the log end answers no records (KL-READ-1); nafka waits max_wait_ms for one to
    # arrive and then answers without the partition at all.
    "fetch_at_log_end_answers_no_partition": [*leader_steps(1000), read_step(1, 1 << 20)],
    # ... and so on an empty log, where the read at offset 0 is bounded by the HW the model
    # materialises (KL-HW-4).
    "fetch_on_empty_log_answers_no_partition": [read_step(0, 1 << 20)],
    # A Fetch above the log end is OFFSET_OUT_OF_RANGE (KL-READ-1); nafka answers without the
    # partition, as at the log end.
    "fetch_past_log_end_answers_no_partition": [read_step(3, 1 << 20)],
    # ListOffsets EARLIEST answers timestamp -1 and the log start offset (KL-TIME-1); nafka
    # answers the request's target, -2, as the timestamp.
    "earliest_answers_the_request_timestamp": [_by_time(v.EARLIEST_TIMESTAMP)],
    # A by-time lookup answers the timestamp of the record found (KL-TIME-4: offset 1 at 1000
    # for a target of 700); nafka answers the target.
    "by_time_answers_the_target_timestamp": [*leader_steps(500, 1000), _by_time(700)],
    # A by-time lookup past every record's timestamp finds no offset (KL-TIME-4: -1, -1);
    # nafka answers the log end offset.
    "by_time_past_last_record_answers_log_end": [*leader_steps(1000), _by_time(2000)],
    # A by-time lookup whose first qualifying record is offset 0 answers offset 0 (KL-TIME-4);
    # nafka answers the log end offset: it reads its SQL result `min(offset)` with `or`, and
    # offset 0 is false.
    "by_time_match_at_offset_0_answers_log_end": [*leader_steps(1000, 1001), _by_time(500)],
}


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, NafkaBroker(Path(tmp) / "nafka.log") as broker:
        for name in SCRIPTED:
            record_scenario(name, FAMILY, SCRIPTED[name], broker, TOPIC_PREFIX, BROKER, out,
                            "nafka")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
