"""Connections to one Kafka cluster and its error codes (split from sut.py).

`Broker` holds one connection per broker address (the bootstrap broker, then partition leaders
and coordinators); a dropped connection is a result while the broker still accepts new ones,
an `AdapterCrashedError` quoting its log tail once it does not (KL-WIRE-8). `KAFKA_ERRORS`
maps the protocol's error codes to the typed errors of specs/errors.md.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from kafkalog.conformance.broker.kafka_wire import BrokerConnectionError, KafkaConnection
from kafkalog.conformance.errors import AdapterCrashedError, UnexpectedException
from kafkalog.model import errors as e

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

#: Kafka's numeric error codes (the protocol's error table) -> specs/errors.md names.
KAFKA_ERRORS: dict[int, type[e.KafkalogError]] = {
    1: e.OffsetOutOfRangeError,  # OFFSET_OUT_OF_RANGE
    2: e.CorruptRecordError,  # CORRUPT_MESSAGE
    10: e.RecordTooLargeError,  # MESSAGE_TOO_LARGE
    18: e.RecordBatchTooLargeError,  # RECORD_LIST_TOO_LARGE
    42: e.IllegalArgumentError,  # INVALID_REQUEST
    56: e.KafkaStorageError,  # KAFKA_STORAGE_ERROR
    87: e.InvalidRecordError,  # INVALID_RECORD
    # Producer state and transactions (PSE-1..PSE-3; KL-WIRE-11, KL-WIRE-12).
    45: e.OutOfOrderSequenceError,  # OUT_OF_ORDER_SEQUENCE_NUMBER
    47: e.InvalidProducerEpochError,  # INVALID_PRODUCER_EPOCH
    48: e.InvalidTxnStateError,  # INVALID_TXN_STATE
}
#: Codes that mean "the partition is not ready yet" right after CreateTopics: retried at open.
RETRIABLE = {3, 5, 6, 7, 19}
ACKS_ALL = -1
WAIT_MS = 5_000


def error_for(code: int, api: str) -> e.KafkalogError:
    """The typed error of a broker error code; codes without a counterpart are untyped."""
    import kafka.errors

    name = kafka.errors.for_code(code).__name__
    cls = KAFKA_ERRORS.get(code)
    if cls is None:
        return UnexpectedException(f"{api} answered error {code} ({name})", where="broker")
    return cls(f"{api} answered error {code} ({name})", where="broker")


#: The topic config that sets the segment size; Kafka 4.1+ refuses `segment.bytes` below 1 MiB
#: and takes any size as `internal.segment.bytes` (KL-WIRE-4).
SEGMENT_BYTES = "segment.bytes"


class Broker:
    """Connections to one cluster: the bootstrap broker and, per node id, the others."""

    def __init__(self, bootstrap: str, broker_log: Path | None = None,
                 topic_prefix: str = "kafkalog-", segment_key: str = SEGMENT_BYTES) -> None:
        host, _, port = bootstrap.rpartition(":")
        if not host or not port.isdigit():
            raise e.IllegalArgumentError(f"--bootstrap must be HOST:PORT, got {bootstrap!r}")
        self.bootstrap = (host, int(port))
        self.broker_log = broker_log
        self.topic_prefix = topic_prefix
        self.segment_key = segment_key
        self._nodes: dict[int, tuple[str, int]] = {}
        self._connections: dict[tuple[str, int], KafkaConnection] = {}
        self.control = self.connection(self.bootstrap)

    def log_size(self) -> int:
        try:
            return self.broker_log.stat().st_size if self.broker_log is not None else 0
        except OSError:
            return 0

    def log_tail(self, since: int = 0, limit: int = 600) -> str:
        """What the broker logged since byte `since` (its last `limit` characters, colours
        stripped), when the adapter was told where the broker's log is."""
        if self.broker_log is None:
            return ""
        try:
            data = self.broker_log.read_bytes()
        except OSError:
            return ""
        text = _ANSI.sub("", data[since:][-8 * limit:].decode("utf-8", "replace"))
        return " ".join(text.split())[-limit:]

    def connection(self, address: tuple[str, int]) -> KafkaConnection:
        conn = self._connections.get(address)
        if conn is None:
            try:
                conn = KafkaConnection(*address)
            except BrokerConnectionError as error:
                raise self.crashed(str(error)) from None
            self._connections[address] = conn
        return conn

    def crashed(self, what: str) -> AdapterCrashedError:
        tail = self.log_tail()
        return AdapterCrashedError(f"{what}" + (f"; broker log: {tail}" if tail else ""),
                                   where=f"broker {self.bootstrap[0]}:{self.bootstrap[1]}")

    def call(self, address: tuple[str, int], message: Any) -> Any:
        """Send one request; a dropped connection is a result if the broker still answers."""
        since = self.log_size()
        try:
            return self.connection(address).request(message)
        except BrokerConnectionError as error:
            self._connections.pop(address).close()
            self.connection(address)  # raises AdapterCrashedError if the broker is gone
            time.sleep(0.05)  # the broker logs the failure after it closed the socket
            tail = self.log_tail(since)
            raise UnexpectedException(
                f"{error} (the broker accepts new connections: its request handler failed)"
                + (f"; broker log: {tail}" if tail else ""), where="broker") from None

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
