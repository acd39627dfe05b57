"""`kafkalog wire-adapter`: the adapter protocol on stdin/stdout, Kafka's wire protocol to a broker.

The checker drives this process exactly as it drives `kafkalog serve-adapter` (server.py is the
loop); the log behind it is a topic on a real broker, reached with the requests of
sut.py. The handshake lists `black_box` instead of `core` (black_box.py, specs/wire.md),
plus `timestamps` (ListOffsets), `leader_epochs` (OffsetForLeaderEpoch), `producer_state`
(InitProducerId) and `transactions` (FindCoordinator, AddPartitionsToTxn, EndTxn) when the broker
offers those APIs, so the checker never asks for what a broker cannot do.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kafka.protocol.admin import CreateTopicsRequest, DeleteRecordsRequest
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafkalog.conformance.adapter.server import serve
from kafkalog.conformance.broker.producers import TRANSACTION_APIS
from kafkalog.conformance.broker.sut import SEGMENT_BYTES, Broker, BrokerSut
from kafkalog.conformance.check.black_box import BLACK_BOX
from kafkalog.conformance.errors import AdapterError, BrokerUnavailableError
from kafkalog.model import values as v

from kafkalog import __version__


def broker_features(broker: Broker) -> frozenset[str]:
    """The handshake features for the APIs this broker offers (KL-WIRE-1)."""
    features = {BLACK_BOX}
    if broker.control.supports(ListOffsetsRequest):
        features.add("timestamps")
    if broker.control.supports(OffsetForLeaderEpochRequest):
        features.add("leader_epochs")
    if broker.control.supports(InitProducerIdRequest):  # KL-WIRE-11
        features.add("producer_state")
        if all(broker.control.supports(req) for req in TRANSACTION_APIS):  # KL-WIRE-12
            features.add("transactions")
    return frozenset(features)


#: APIs a check can do without, and what is left out when the broker lacks one (KL-WIRE-1).
OPTIONAL_APIS: tuple[tuple[Any, str], ...] = (
    (CreateTopicsRequest, "runs use the topics it auto-creates on Metadata, with its default "
                          "configs: only the kafka_defaults family"),
    (DeleteRecordsRequest, "maybe_increment_log_start_offset is left out"),
    (OffsetForLeaderEpochRequest, "end_offset_for_epoch is left out"),
    (InitProducerIdRequest, "the producer and transaction families run without producer "
                            "actors"),
    *((req, "the transaction family runs without transactions") for req in TRANSACTION_APIS),
)
#: APIs without which no run can be checked at all.
REQUIRED_APIS: tuple[Any, ...] = (ProduceRequest, FetchRequest, ListOffsetsRequest,
                                  MetadataRequest)


#: ListOffsets MAX_TIMESTAMP (-3) exists from v7 on (KIP-734).
MAX_TIMESTAMP_LIST_OFFSETS = 7


def broker_limits(broker: Broker) -> list[str]:
    """One line per optional API the broker does not offer, naming what is left out."""
    lines = [f"the broker offers no {req.__name__.removesuffix('Request')} (api {req.API_KEY}): "
             f"{what}" for req, what in OPTIONAL_APIS if not broker.control.supports(req)]
    return _handshake_limits(broker) + lines + _list_offsets_limits(broker)


def _handshake_limits(broker: Broker) -> list[str]:
    """A broker that answers ApiVersions v0 in another layout (kafka_wire.py) is named once:
    the handshake then used the flexible version, which a Kafka client would send first."""
    used = broker.control.api_versions_version
    if used == 0:
        return []
    return [f"the broker answers ApiVersions v0 in a layout that is not v0's (api "
            f"{ApiVersionsRequest.API_KEY}): the handshake used ApiVersions v{used} (KIP-511)"]


def _list_offsets_limits(broker: Broker) -> list[str]:
    """A ListOffsets below v7 cannot ask for MAX_TIMESTAMP: sut.py answers those lookups
    `unsupported`, and this says so once."""
    if not broker.control.supports(ListOffsetsRequest):
        return []
    highest = broker.control.versions[ListOffsetsRequest.API_KEY][1]
    if highest >= MAX_TIMESTAMP_LIST_OFFSETS:
        return []
    return [f"the broker offers ListOffsets up to v{highest} only (api "
            f"{ListOffsetsRequest.API_KEY}): fetch_offset_by_timestamp for MAX_TIMESTAMP (v7, "
            "KIP-734) is left out"]


def probe_broker(bootstrap: str) -> list[str]:
    """Connect once and list what the broker lacks; raises BrokerUnavailableError when it
    cannot be reached or lacks an API every run needs."""
    try:
        broker = Broker(bootstrap)
    except AdapterError as error:
        raise BrokerUnavailableError(error.message, where=f"broker {bootstrap}") from None
    try:
        missing = [req.__name__.removesuffix("Request") for req in REQUIRED_APIS
                   if not broker.control.supports(req)]
        if missing:
            raise BrokerUnavailableError(f"the broker offers no {', '.join(missing)}: "
                                         "no run can be checked", where=f"broker {bootstrap}")
        return broker_limits(broker)
    finally:
        broker.close()


def serve_broker(bootstrap: str, topic_prefix: str = "kafkalog-",
                 broker_log: Path | None = None, exclude: frozenset[str] = frozenset(),
                 segment_key: str = SEGMENT_BYTES) -> int:
    """Serve the adapter protocol until end of input; returns the exit status.

    `exclude` names actions answered `unsupported` although the broker offers them: a way to
    look past a divergence already recorded as a finding (docs/brokers.md). `segment_key` is the
    topic config that carries the run's segment size (KL-WIRE-4).
    """
    broker = Broker(bootstrap, broker_log=broker_log, topic_prefix=topic_prefix,
                    segment_key=segment_key)
    features = broker_features(broker)
    for line in broker_limits(broker):
        print(f"wire-adapter: {line}", file=sys.stderr)

    def open_log(config: v.LogConfig, now_ms: int, log_start_offset: int) -> BrokerSut:
        return BrokerSut(broker, features, config, log_start_offset, exclude=exclude)

    try:
        return serve(open_log, f"kafka-wire {bootstrap} (kafkalog {__version__})", features)
    finally:
        broker.close()
