"""Build tests/regressions/WIRE-kafka-wire-*.jsonl: divergences of kafka-wire, as traces.

Run `python tests/regressions/make_kafka_wire_findings.py tests/regressions` (Go installed:
the first start installs the pinned kafka-wire from the Go module proxy; or
$KAFKALOG_KAFKA_WIRE_BIN names a binary of that release). It starts kafka-wire on a free
loopback port and records each scripted scenario below up to its first divergence. The
scenarios are the shrunk traces `kafkalog check --wire-broker kafka-wire` finds, written out by
hand so that each names one finding.

Three of them have one cause: kafka-wire's CreateTopics answers success but ignores the topic
configs (its source says so), so a topic keeps the broker-wide 1 GiB segments and has no
max.message.bytes of its own.

Each trace's header names the broker, with kafka-wire's exact version, in `finding`: the
regression corpus replays it against the model and checks the broker's recorded answer still
differs from the model's (tests/conformance/test_regressions.py). A finding kafka-wire fixed
stops being written and is reported here.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kafkalog.conformance.broker.kafka_wire_broker import KAFKA_WIRE_VERSION, KafkaWireBroker
from kafkalog.model import values as v
from wire_findings import Steps, leader_steps, read_step, record_scenario

BROKER = f"kafka-wire {KAFKA_WIRE_VERSION}"
TOPIC_PREFIX = f"kafkalog-kafka-wire-{KAFKA_WIRE_VERSION}-"


# name: (config family, steps)
SCRIPTED: dict[str, tuple[str, Steps]] = {
    # A batch above the topic's max.message.bytes (300 in `tiny`) is RECORD_TOO_LARGE in Kafka
    # (KL-APPEND-4); kafka-wire, which ignores the topic's configs, appends it.
    "max_message_bytes_ignored": ("tiny", [
        ("append_as_leader",
         {"records": (v.Record(None, b"x" * 300, 1000),), "leader_epoch": 0})]),
    # A batch larger than segment.bytes (64 KiB in `roomy`, below its max.message.bytes) is
    # RECORD_BATCH_TOO_LARGE in Kafka (KL-APPEND-5); kafka-wire's segments are 1 GiB.
    "batch_larger_than_segment_is_appended": ("roomy", [
        ("append_as_leader",
         {"records": (v.Record(None, b"x" * 65500, 1000),), "leader_epoch": 0})]),
    # A Fetch reads one segment (KL-READ-3, KL-READ-5): six 72-byte batches do not fit one
    # 400-byte segment (`tiny`), so Kafka answers offsets 2-4, up to the first segment's end;
    # kafka-wire, with one 1 GiB segment, answers offsets 2-6 up to max bytes.
    "fetch_reads_past_segment_end": ("tiny", [
        *leader_steps(1000, 1001, 1002, 1003, 1004, 1005), read_step(2, 402)]),
    # Kafka fills a Fetch up to max bytes, the last batch cut short (KL-READ-5): 143 bytes
    # here, the first 72-byte batch whole and 71 bytes of the second. kafka-wire trims the
    # answer to whole batches: the first batch, 72 bytes.
    "fetch_sends_no_partial_batch": ("roomy", [*leader_steps(1000, 1001), read_step(0, 143)]),
    # A Fetch above the log end offset is OFFSET_OUT_OF_RANGE in Kafka (KL-READ-1); kafka-wire
    # answers it as "no data yet": no error and no records.
    "fetch_past_log_end_is_not_out_of_range": ("tiny", [read_step(3, 399)]),
    # A by-time lookup answers the timestamp of the record found (KL-TIME-4: 1000 here);
    # kafka-wire answers the offset found with the target timestamp of the request (500).
    "by_time_answers_the_target_timestamp": ("tiny", [
        *leader_steps(1000), ("fetch_offset_by_timestamp", {"timestamp": 500})]),
    # ... and the offset of the record found (KL-TIME-4: offset 1, the first record of
    # 1000/1001/1002 whose timestamp reaches 1001); kafka-wire answers the batch's base offset.
    "by_time_answers_the_batch_base_offset": ("roomy", [
        ("append_as_leader",
         {"records": tuple(v.Record(None, b"x", ts) for ts in (1000, 1001, 1002)),
          "leader_epoch": 0}),
        ("update_high_watermark", {"offset": 3}),
        ("fetch_offset_by_timestamp", {"timestamp": 1001})]),
    # A by-time lookup finds the second batch (KL-TIME-4: offset 1 at 2000). kafka-wire
    # searches only its sparse time index, one entry per 16 KiB of log, which holds the first
    # batch alone, so it finds nothing.
    "by_time_misses_batches_the_time_index_skipped": ("roomy", [
        *leader_steps(1000, 2000), ("fetch_offset_by_timestamp", {"timestamp": 2000})]),
}


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, \
            KafkaWireBroker(Path(tmp) / "kafka-wire.log") as broker:
        for name in SCRIPTED:
            record_scenario(name, *SCRIPTED[name], broker, TOPIC_PREFIX, BROKER, out,
                            "kafka-wire")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
