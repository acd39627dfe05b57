"""`kafkalog wire-adapter`: the adapter protocol on stdin/stdout, Kafka's wire protocol to a broker.

The checker drives this process exactly as it drives `kafkalog serve-adapter` (server.py is the
loop); the log behind it is a topic on a real broker, reached with the requests of
broker_sut.py. The handshake lists `black_box` instead of `core` (black_box.py, specs/wire.md),
plus `timestamps` (ListOffsets) and `leader_epochs` (OffsetForLeaderEpoch) when the broker
offers those APIs, so the checker never asks for what a broker cannot do.
"""

from __future__ import annotations

from pathlib import Path

from kafka.protocol.consumer import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafkalog.conformance.adapter.server import serve
from kafkalog.conformance.broker.sut import Broker, BrokerSut
from kafkalog.conformance.check.black_box import BLACK_BOX
from kafkalog.model import values as v

from kafkalog import __version__


def broker_features(broker: Broker) -> frozenset[str]:
    """The handshake features for the APIs this broker offers (KL-WIRE-1)."""
    features = {BLACK_BOX}
    if broker.control.supports(ListOffsetsRequest):
        features.add("timestamps")
    if broker.control.supports(OffsetForLeaderEpochRequest):
        features.add("leader_epochs")
    return frozenset(features)


def serve_broker(bootstrap: str, topic_prefix: str = "kafkalog-",
                 broker_log: Path | None = None, exclude: frozenset[str] = frozenset()) -> int:
    """Serve the adapter protocol until end of input; returns the exit status.

    `exclude` names actions answered `unsupported` although the broker offers them: a way to
    look past a divergence already recorded as a finding (docs/brokers.md).
    """
    broker = Broker(bootstrap, broker_log=broker_log, topic_prefix=topic_prefix)
    features = broker_features(broker)

    def open_log(config: v.LogConfig, now_ms: int, log_start_offset: int) -> BrokerSut:
        return BrokerSut(broker, features, config, log_start_offset, exclude=exclude)

    try:
        return serve(open_log, f"kafka-wire {bootstrap} (kafkalog {__version__})", features)
    finally:
        broker.close()
