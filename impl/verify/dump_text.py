"""kafka-dump-log-style text lines for one `dump.dump_path` result, and finding lines.

`kafkalog dump` prints them; the file fuzzer renders every dump it makes, so a damaged file that
breaks the rendering is found too.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from kafkalog.impl.verify.verifier import Severity
from kafkalog.model.values import TimestampType

PAYLOAD_PREVIEW = 80


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _payload(encoded: str | None) -> str:
    if encoded is None:
        return "null"
    text = base64.b64decode(encoded).decode("utf-8", errors="replace")
    return text if len(text) <= PAYLOAD_PREVIEW else text[:PAYLOAD_PREVIEW] + "..."


def _render_batch(b: dict[str, Any]) -> Iterator[str]:
    if "error" in b:
        yield f"position: {b['position']} error: {b['error']}"
        return
    ts_name = "LogAppendTime" if b["timestamp_type"] == TimestampType.LOG_APPEND_TIME.value \
        else "CreateTime"
    last_seq = b["base_sequence"] + b["last_offset"] - b["base_offset"] \
        if b["base_sequence"] >= 0 else -1
    yield (f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: {b['count']} "
           f"baseSequence: {b['base_sequence']} lastSequence: {last_seq} "
           f"producerId: {b['producer_id']} producerEpoch: {b['producer_epoch']} "
           f"partitionLeaderEpoch: {b['partition_leader_epoch']} "
           f"isTransactional: {_bool(b['is_transactional'])} "
           f"isControl: {_bool(b['is_control'])} position: {b['position']} "
           f"{ts_name}: {b['max_timestamp']} size: {b['size']} magic: {b['magic']} "
           f"compresscodec: {b['compression']} crc: {b['crc']} isvalid: {_bool(b['is_valid'])}")
    for r in b.get("records", []):
        line = (f"| offset: {r['offset']} {ts_name}: {r['timestamp']} keySize: {r['key_size']} "
                f"valueSize: {r['value_size']} sequence: {r['sequence']} "
                f"headerKeys: [{','.join(r['header_keys'])}]")
        control = r.get("control")
        if control:
            line += (f" endTxnMarker: {control['end_txn_marker']} "
                     f"coordinatorEpoch: {control['coordinator_epoch']}")
        else:
            line += f" payload: {_payload(r['value'])}"
        yield line


def render_text(dumped: dict[str, Any]) -> Iterator[str]:
    """kafka-dump-log-style lines for one `dump_path` result."""
    kind = dumped["type"]
    yield f"Dumping {dumped['path']}"
    if kind == "log":
        yield f"Log starting offset: {dumped['base_offset']}"
        for batch in dumped["batches"]:
            yield from _render_batch(batch)
    elif kind == "index":
        yield from (f"offset: {e['offset']} position: {e['position']}" for e in dumped["entries"])
    elif kind == "timeindex":
        yield from (f"timestamp: {e['timestamp']} offset: {e['offset']}"
                    for e in dumped["entries"])
    elif kind == "leader-epoch-checkpoint":
        yield from (f"epoch: {e['epoch']} startOffset: {e['start_offset']}"
                    for e in dumped["entries"])
    elif kind == "offset-checkpoint":
        yield from (f"{e['topic']}-{e['partition']} offset: {e['offset']}"
                    for e in dumped["entries"])
    elif kind == "txnindex":  # as kafka-dump-log prints AbortedTxn
        yield from (f"version: 0 producerId: {e['producer_id']} firstOffset: "
                    f"{e['first_offset']} lastOffset: {e['last_offset']} lastStableOffset: "
                    f"{e['last_stable_offset']}" for e in dumped["entries"])
    elif kind == "producer-snapshot":
        yield from (
            f"producerId: {e['producer_id']} producerEpoch: {e['epoch']} coordinatorEpoch: "
            f"{e['coordinator_epoch']} currentTxnFirstOffset: {e['current_txn_first_offset']} "
            f"lastTimestamp: {e['timestamp']} lastSequence: {e['last_sequence']} lastOffset: "
            f"{e['last_offset']} offsetDelta: {e['offset_delta']}" for e in dumped["entries"])
    elif kind == "partition":
        yield from _render_partition(dumped)
    else:
        yield f"clean shutdown marker: {_bool(dumped['clean_shutdown'])}"
        yield from (f"{p['partition']}: segments: {p['segments']} "
                    f"logEndOffset: {p['log_end_offset']} epochs: {p['epochs']}"
                    for p in dumped["partitions"])
    yield from render_findings(dumped["findings"])


def _render_partition(dumped: dict[str, Any]) -> Iterator[str]:
    yield f"Partition {dumped['topic']}-{dumped['partition']} logEndOffset: " \
          f"{dumped['log_end_offset']}"
    for s in dumped["segments"]:
        yield (f"segment baseOffset: {s['base_offset']} size: {s['size']} "
               f"batches: {s['batches']} nextOffset: {s['next_offset']}")
        for batch in s.get("dump", []):
            yield from ("  " + line for line in _render_batch(batch))
    yield from (f"epoch: {e['epoch']} startOffset: {e['start_offset']}" for e in dumped["epochs"])


def render_findings(findings: list[dict[str, Any]]) -> Iterator[str]:
    ordered = sorted(findings, key=lambda f: f["severity"] != Severity.PROBLEM.value)
    for f in ordered:
        where = f["path"] if f["position"] is None else f"{f['path']}@{f['position']}"
        rule = f" [{f['rule']}]" if f["rule"] else ""
        yield f"{f['severity']}: {f['kind']}: {where}: {f['message']}{rule}"
