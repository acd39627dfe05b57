"""Configs at and beyond Kafka's bounds: the model and the implementation both refuse one outside
its Java type or below its validator with IllegalArgumentError, a replay or an adapter `open`
reports that typed error (keeping the request's id), and the file layer never lets an
OverflowError or a bare OSError out."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.adapter.server import serve
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.crash.fault_fs import RecordingFileSystem
from kafkalog.conformance.fuzz.mutators import config_edges
from kafkalog.conformance.traces.replay import replay_trace
from kafkalog.conformance.traces.trace import loads_trace
from kafkalog.impl import bounds as impl_bounds
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir
from kafkalog.impl.time import MockTime
from kafkalog.model import bounds as model_bounds
from kafkalog.model import log
from kafkalog.model import values as v
from kafkalog.model.errors import IllegalArgumentError, KafkaStorageError

#: Kafka's LogConfig / TransactionLogConfig definitions: (Java type width, atLeast minimum).
KAFKA = {
    "segment_bytes": (32, 14),
    "segment_ms": (64, 1),
    "segment_jitter_ms": (64, 0),
    "index_interval_bytes": (32, 0),
    "segment_index_bytes": (32, 12),  # Kafka: 4; kafkalog: room for one time-index entry
    "retention_ms": (64, -1),
    "retention_bytes": (64, None),
    "max_message_bytes": (32, 0),
    "file_delete_delay_ms": (64, 0),
    "producer_id_expiration_ms": (32, 1),
    "producer_id_expiration_check_interval_ms": (32, 1),
    "min_compaction_lag_ms": (64, 0),
    "max_compaction_lag_ms": (64, 1),
    "delete_retention_ms": (64, 0),
}
EDGES = [(name, value) for name, (bits, minimum) in KAFKA.items()
         for value in config_edges(bits, minimum)]


def _legal(name: str, value: int) -> bool:
    bits, minimum = KAFKA[name]
    low = -(2 ** (bits - 1)) if minimum is None else minimum
    return low <= value < 2 ** (bits - 1)


def test_config_bounds__model_and_impl_tables__are_kafkas() -> None:
    """Spec: KL-STATE-2, KL-BOUND-1 (every integer config of LogConfig, with Kafka's bounds)."""
    integers = {f.name for f in dataclasses.fields(v.LogConfig) if f.type in ("int", int)}
    assert set(KAFKA) == integers
    for table in (model_bounds.CONFIG_BOUNDS, impl_bounds.CONFIG_BOUNDS):
        assert {name: (bits, minimum) for name, bits, minimum in table} == KAFKA


@pytest.mark.parametrize(("name", "value"), EDGES, ids=[f"{n}={x}" for n, x in EDGES])
def test_validate_config__edge_value__model_and_impl_agree(name: str, value: int) -> None:
    """Spec: KL-STATE-2, KL-BOUND-1 (IllegalArgumentError on both sides, exactly outside)."""
    config = dataclasses.replace(v.LogConfig(), **{name: value})
    outcomes = []
    for validate in (log.validate_config, impl_bounds.validate_config):
        try:
            validate(config)
            outcomes.append("ok")
        except IllegalArgumentError:
            outcomes.append("refused")
    assert outcomes == ["ok" if _legal(name, value) else "refused"] * 2


@pytest.mark.parametrize("value", [2**80, 2**63, 2**63 - 1, 2**31, 11])
def test_log_dir_open__segment_index_bytes_out_of_bounds__illegal_argument_before_any_file(
        tmp_path: Path, value: int) -> None:
    """Spec: KL-STATE-2 (the implementation refuses the config before touching the directory)."""
    config = v.LogConfig(segment_index_bytes=value)
    with pytest.raises(IllegalArgumentError, match="segment_index_bytes"):
        LogDir.open(FileSystem(), tmp_path, config, MockTime(0))
    with pytest.raises(IllegalArgumentError, match="segment_index_bytes"):
        LogDir.open(FileSystem(), tmp_path, v.LogConfig(), MockTime(0),
                    topic_configs={"t": config})
    assert list(tmp_path.iterdir()) == []


def test_replay__header_config_past_long__typed_adapter_error(tmp_path: Path) -> None:
    """Spec: KL-BOUND-1 (was `OverflowError: Python int too large to convert to C long`)."""
    header = json.dumps({"kafkalog_trace": 1, "config": {"segment_index_bytes": 2**63}})
    trace = loads_trace(header + '\n{"step":1,"action":"roll","args":{}}\n', "<test>")
    result = replay_trace(trace)
    assert result.adapter_error is not None and not result.untyped
    assert result.adapter_error.startswith("IllegalArgumentError: segment_index_bytes")


def _serve(lines: list[str]) -> list[dict[str, Any]]:
    out = io.StringIO()
    serve(ImplSut, "impl", frozenset(FEATURES), stdin=io.StringIO("\n".join(lines) + "\n"),
          stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("value", [2**80, 2**63, 2**63 - 1])
def test_serve__open_with_index_bytes_past_int__typed_reply_with_the_request_id(
        value: int) -> None:
    """Spec: KL-BOUND-1, adapter protocol (id kept; no internal adapter error)."""
    replies = _serve(['{"id":1,"action":"handshake","args":{"protocol_version":1}}',
                      json.dumps({"id": 2, "action": "open",
                                  "args": {"config": {"segment_index_bytes": value}}}),
                      '{"id":3,"action":"open","args":{}}', '{"id":4,"action":"roll"}'])
    assert [r["id"] for r in replies] == [1, 2, 3, 4]
    assert "IllegalArgumentError" in replies[1]["error"]["message"]
    assert replies[2] == {"id": 3, "ok": None} and replies[3] == {"id": 4, "ok": 0}


def test_serve__factory_raises_untyped__reply_keeps_the_request_id() -> None:
    """Adapter protocol: the reply's id is the request's whenever it is readable."""
    def broken_factory(config: v.LogConfig, now_ms: int, log_start_offset: int) -> Any:
        raise RuntimeError("boom")

    out = io.StringIO()
    requests = ('{"id":1,"action":"handshake","args":{"protocol_version":1}}\n'
                '{"id":2,"action":"open","args":{}}\n')
    serve(broken_factory, "x", frozenset(FEATURES), stdin=io.StringIO(requests), stdout=out)
    reply = json.loads(out.getvalue().splitlines()[1])
    assert (reply["id"], reply["error"]["code"]) == (2, "ProtocolError")
    assert reply["error"]["message"].startswith("internal adapter error")


@pytest.mark.parametrize("recording", [False, True])
def test_file_handle__size_past_off_t_or_map_past_the_file__kafka_storage_error(
        tmp_path: Path, recording: bool) -> None:
    """ERR-36: a truncate past the platform's off_t and a mapping longer than the file are
    storage errors, on the real and on the recording file system alike."""
    fs = RecordingFileSystem(tmp_path) if recording else FileSystem()
    handle = fs.open_file(tmp_path / "00000000000000000000.index", create=True)
    try:
        with pytest.raises(KafkaStorageError, match="truncate failed"):
            handle.truncate(2**63)
        handle.truncate(8)
        with pytest.raises(KafkaStorageError, match="mmap"):
            handle.mmap(16, writable=True)
        with pytest.raises(KafkaStorageError, match="mmap"):
            handle.mmap(2**63, writable=True)
    finally:
        handle.close()


_NO_ADDRESS_SPACE = """
import resource, sys
from pathlib import Path
from kafkalog.conformance.crash.fault_fs import RecordingFileSystem
from kafkalog.model.errors import KafkaStorageError
root = Path(sys.argv[1])
handle = RecordingFileSystem(root).open_file(root / "00000000000000000000.index", create=True)
handle.truncate(2**33)
resource.setrlimit(resource.RLIMIT_AS, (2**32, resource.RLIM_INFINITY))
try:
    handle.mmap(2**33, writable=True)
except KafkaStorageError as error:
    print("typed:", error)
"""


def test_recording_handle__mmap_without_address_space__kafka_storage_error(
        tmp_path: Path) -> None:
    """ERR-36: ENOMEM from a mapping under an address-space limit is typed on the recording
    file system too (it mapped its own mmap type without the seam's conversion)."""
    done = subprocess.run([sys.executable, "-c", _NO_ADDRESS_SPACE, str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("typed: mmap failed"), done.stdout
