"""The ApiVersions handshake of the wire client (conformance/broker/kafka_wire.py) against a
stand-in broker on loopback that answers every ApiVersions in the flexible (v3) layout, as nafka
does: the client falls back to v3 on a fresh socket, records that it did, and the probe names it
(KL-WIRE-1). No broker package is needed."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest
from kafka.protocol.metadata import ApiVersionsResponse
from kafkalog.conformance.broker.adapter import _handshake_limits
from kafkalog.conformance.broker.kafka_wire import KafkaConnection
from kafkalog.conformance.broker.sut import Broker

#: ApiVersions, Produce, Fetch, ListOffsets and Metadata, each at one version.
_OFFERED = ((18, 3, 3), (0, 8, 8), (1, 6, 6), (2, 5, 5), (3, 8, 8))


def _flexible_answer(correlation_id: int) -> bytes:
    """An ApiVersions response body in v3's layout behind a v0 response header (ApiVersions
    responses never carry tagged header fields)."""
    cls = ApiVersionsResponse[3]
    body = bytes(cls(error_code=0, throttle_time_ms=0, api_keys=[
        cls.ApiVersion(api_key=key, min_version=low, max_version=high)
        for key, low, high in _OFFERED]).encode())
    frame = struct.pack(">i", correlation_id) + body
    return struct.pack(">i", len(frame)) + frame


def _serve(conn: socket.socket, versions_asked: list[int]) -> None:
    with conn:
        while True:
            size = conn.recv(4, socket.MSG_WAITALL)
            if len(size) < 4:
                return
            request = conn.recv(struct.unpack(">i", size)[0], socket.MSG_WAITALL)
            _, version, correlation_id = struct.unpack(">hhi", request[:8])
            versions_asked.append(version)
            conn.sendall(_flexible_answer(correlation_id))


@pytest.fixture
def flexible_broker() -> Iterator[tuple[int, list[int]]]:
    """A loopback listener answering each ApiVersions in v3's layout; yields its port and the
    versions asked, in order."""
    listener = socket.create_server(("127.0.0.1", 0))
    versions_asked: list[int] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_serve, args=(conn, versions_asked), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1], versions_asked
    finally:
        listener.close()


def test_kafka_connection__v0_answered_in_flexible_layout__falls_back_to_v3(
        flexible_broker: tuple[int, list[int]]) -> None:
    port, versions_asked = flexible_broker
    conn = KafkaConnection("127.0.0.1", port, timeout_s=5)
    try:
        assert versions_asked == [0, 3]
        assert conn.api_versions_version == 3
        assert conn.versions[2] == (5, 5)
    finally:
        conn.close()


def test_handshake_limits__fallback_used__is_named_in_one_line(
        flexible_broker: tuple[int, list[int]]) -> None:
    port, _ = flexible_broker
    broker = Broker(f"127.0.0.1:{port}")
    try:
        assert _handshake_limits(broker) == [
            "the broker answers ApiVersions v0 in a layout that is not v0's (api 18): the "
            "handshake used ApiVersions v3 (KIP-511)"]
    finally:
        broker.close()
