"""Build tests/regressions/WIRE-kfake-*.jsonl: divergences of franz-go's kfake, as traces.

Run `python tests/regressions/make_kfake_findings.py tests/regressions` (Go installed: the
first start builds brokers/kfake). It starts kfake on a free loopback port and records each
scripted scenario below up to its first divergence. The scenarios are the shrunk traces
`kafkalog check --wire-broker kfake` finds, written out by hand so that each names one finding
(the check shrinks every by-epoch divergence to the empty-log one).

Each trace's header names the broker, with kfake's exact version, in `finding`: the regression
corpus replays it against the model and checks the broker's recorded answer still differs from
the model's (tests/conformance/test_regressions.py). A finding kfake fixed stops being written
and is reported here.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kafkalog.conformance.broker.kfake import KFAKE_VERSION, KfakeBroker
from kafkalog.model import values as v
from wire_findings import record_scenario

BROKER = f"kfake {KFAKE_VERSION}"
TOPIC_PREFIX = f"kafkalog-kfake-{KFAKE_VERSION}-"


def _leader(*timestamps: int) -> list[tuple[str, dict[str, object]]]:
    """One-record batches, each followed by the HW step the checker adds (KL-WIRE-2)."""
    steps: list[tuple[str, dict[str, object]]] = []
    for i, ts in enumerate(timestamps, start=1):
        steps.append(("append_as_leader",
                      {"records": (v.Record(None, b"test", ts),), "leader_epoch": 0}))
        steps.append(("update_high_watermark", {"offset": i}))
    return steps


# name: (config family, steps)
SCRIPTED = {
    # Kafka answers UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET for the undefined epoch -1
    # (KL-EPOCH-2); kfake answers its current epoch 0 and offset 0 on an empty log ...
    "epoch_minus_1_on_empty_log_answers_epoch_0": ("tiny", [
        ("end_offset_for_epoch", {"epoch": -1})]),
    # ... and epoch -1 with the log start offset once the log has a batch.
    "epoch_minus_1_answers_log_start_offset": ("tiny", [
        *_leader(1000), ("end_offset_for_epoch", {"epoch": -1})]),
    # A batch larger than segment.bytes is RECORD_BATCH_TOO_LARGE in Kafka (KL-APPEND-5, below
    # max.message.bytes); kfake, which keeps no segments of that size, appends it.
    "batch_larger_than_segment_is_appended": ("roomy", [
        ("append_as_leader",
         {"records": (v.Record(None, b"x" * 65500, 1000),), "leader_epoch": 0})]),
    # Kafka fills a Fetch up to max bytes, the last batch cut short (KL-READ-5): 100 bytes
    # here, the first 72-byte batch whole and 28 bytes of the second. kfake sends whole batches
    # only: the first batch, 72 bytes.
    # A Fetch reads one segment (KL-READ-3, KL-READ-5: the slice is capped at the segment end):
    # batches of 270 and 170 bytes do not fit one 400-byte segment, so Kafka answers the first
    # batch only. kfake answers both.
    "fetch_reads_past_segment_end": ("tiny", [
        ("append_as_leader", {"records": (v.Record(None, b"a" * 200, 1000),), "leader_epoch": 0}),
        ("update_high_watermark", {"offset": 1}),
        ("append_as_leader", {"records": (v.Record(None, b"b" * 100, 1001),), "leader_epoch": 0}),
        ("update_high_watermark", {"offset": 2}),
        ("read", {"start_offset": 0, "max_bytes": 1000, "isolation": v.Isolation.HIGH_WATERMARK,
                  "min_one_message": True})]),
    # DeleteRecords below the log start offset moves nothing and succeeds in Kafka (KL-LSO-1:
    # only an offset above the HW is out of range); kfake answers OFFSET_OUT_OF_RANGE.
    "delete_records_below_log_start_is_out_of_range": ("tiny", [
        *_leader(1000, 1001),
        ("maybe_increment_log_start_offset", {"offset": 2}),
        ("maybe_increment_log_start_offset", {"offset": 1})]),
    "fetch_sends_no_partial_batch": ("roomy", [
        *_leader(1000, 1001),
        ("read", {"start_offset": 0, "max_bytes": 100, "isolation": v.Isolation.HIGH_WATERMARK,
                  "min_one_message": True})]),
    # A batch with a producer id but no sequence (-1) is INVALID_RECORD in Kafka (KL-PROD-2,
    # PSE-5); kfake answers OUT_OF_ORDER_SEQUENCE_NUMBER.
    "producer_batch_without_sequence_is_out_of_order": ("producers", [
        ("append_as_leader",
         {"records": (v.Record(None, b"test", 1000),), "leader_epoch": 0, "producer_id": 1,
          "producer_epoch": 0, "base_sequence": -1})]),
    # A read_committed Fetch lists the aborted transactions it overlaps, an empty list when
    # there are none (KL-TXN-9); on an empty partition kfake answers a null list.
    "read_committed_empty_answers_null_aborted_list": ("transactions_wire", [
        ("read", {"start_offset": 0, "max_bytes": 1000, "isolation": v.Isolation.TXN_COMMITTED,
                  "min_one_message": True})]),
}


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, KfakeBroker(Path(tmp) / "kfake.log") as broker:
        for name in SCRIPTED:
            record_scenario(name, *SCRIPTED[name], broker, TOPIC_PREFIX, BROKER, out, "kfake")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
