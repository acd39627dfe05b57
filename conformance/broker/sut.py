"""A partition log reached through a Kafka broker's API: the action vocabulary as Kafka requests.

`Broker` holds the connections to one cluster (bootstrap, then the partition leader). Each
`BrokerSut` is one run's log: a fresh single-partition topic created with the run's config
(`topic_configs`, KL-WIRE-4). Actions map to requests (specs/wire.md):

| action | request |
|---|---|
| append_as_leader | Produce, acks=all, the batch bytes of the built-in codec (KL-WIRE-6); with a
producer id, the broker's (InitProducerId) and, if transactional, AddPartitionsToTxn first
(producers.py, KL-WIRE-11, KL-WIRE-12) |
| append_marker | EndTxn; the coordinator writes the marker (KL-WIRE-12) |
| read | Fetch, read_uncommitted (read_committed for TXN_COMMITTED), partition_max_bytes =
max_bytes (KL-WIRE-7) |
| update_high_watermark | ListOffsets LATEST: the HW the broker moved itself (KL-WIRE-2) |
| maybe_increment_log_start_offset | DeleteRecords |
| fetch_offset_by_timestamp | ListOffsets (earliest, latest, max timestamp, by time) |
| end_offset_for_epoch | OffsetForLeaderEpoch (only when the broker offers it) |
| state | ListOffsets EARLIEST and LATEST, and LATEST at read_committed: the LSO (KL-WIRE-3) |

Broker error codes become the typed errors of specs/errors.md (`KAFKA_ERRORS`); a code without a
counterpart, or a connection the broker dropped while still accepting new ones, is an
`UnexpectedException` result quoting the broker's log tail (KL-WIRE-8); a broker that no longer
answers at all is an `AdapterCrashedError`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from typing import Any

from kafka.protocol.admin import CreateTopicsRequest, DeleteRecordsRequest, DeleteTopicsRequest
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafkalog.conformance.adapter.json_codec import ACTIONS
from kafkalog.conformance.broker.cluster import (
    ACKS_ALL,
    KAFKA_ERRORS,
    SEGMENT_BYTES,
    WAIT_MS,
    Broker,
    error_for,
)
from kafkalog.conformance.broker.kafka_wire import BrokerConnectionError
from kafkalog.conformance.broker.producers import WireProducers
from kafkalog.conformance.check.impl_sut import batch_view
from kafkalog.conformance.check.sut import UnsupportedError
from kafkalog.conformance.errors import UnexpectedException
from kafkalog.conformance.gen.transactions import is_txn_config
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.model import errors as e
from kafkalog.model import values as v
from kafkalog.model.bounds import require_int32

#: Fetch and ListOffsets isolation level 1: bounded by the last stable offset (KL-WIRE-12).
READ_COMMITTED = 1
#: A marker's control batch: 61 bytes of header and one 17-byte record (PST-27).
MARKER_BATCH_BYTES = 78

__all__ = ["KAFKA_ERRORS", "SEGMENT_BYTES", "Broker", "BrokerSut", "error_for", "topic_configs"]


def topic_configs(config: v.LogConfig, segment_key: str = SEGMENT_BYTES) -> dict[str, str]:
    """The topic configs of a run's LogConfig (KL-WIRE-4).

    Size limits, the timestamp type and everything that shapes the segment layout (size, time,
    index size and interval) map one to one: the layout shows through Fetch, which reads one
    segment at a time, and through ListOffsets by timestamp, which searches only the first
    segment whose largest timestamp reaches the target. Retention is switched off: the broker
    applies it on its own wall clock and in the background, where the model applies it only in
    `delete_old_segments` on its mock clock, which a black box cannot be asked (KL-WIRE-5).
    """
    return {
        segment_key: str(config.segment_bytes),
        "segment.ms": str(config.segment_ms),
        "segment.jitter.ms": str(config.segment_jitter_ms),
        "segment.index.bytes": str(config.segment_index_bytes),
        "index.interval.bytes": str(config.index_interval_bytes),
        "max.message.bytes": str(config.max_message_bytes),
        "message.timestamp.type": config.message_timestamp_type.value,
        "retention.ms": "-1",
        "retention.bytes": "-1",
    }


class BrokerSut:
    """One run's log: a fresh one-partition topic on the broker (specs/wire.md)."""

    name = "broker"

    def __init__(self, broker: Broker, features: frozenset[str], config: v.LogConfig,
                 log_start_offset: int = 0, exclude: frozenset[str] = frozenset()) -> None:
        if log_start_offset != 0:
            raise e.IllegalArgumentError("a fresh topic starts at offset 0 (KL-WIRE-4)")
        if config.message_timestamp_type is v.TimestampType.LOG_APPEND_TIME:
            raise e.IllegalArgumentError(
                "LogAppendTime topics stamp the broker's wall clock; they are left out of wire "
                "runs (KL-WIRE-5)")
        if config.segment_jitter_ms != 0:
            raise e.IllegalArgumentError(
                "a broker draws each segment's roll jitter at random; runs with "
                "segment_jitter_ms > 0 are left out of wire runs (KL-WIRE-5)")
        self.broker = broker
        self.features = features
        self.exclude = exclude
        self.topic = f"{broker.topic_prefix}{uuid.uuid4().hex[:12]}"
        self._auto_create_topic = False
        self._create(config)
        self.leader, self.leader_epoch = self._await_leader()
        self.producers = WireProducers(broker, self.topic, "transactions" in features
                                       and is_txn_config(config))
        self._marker_written = False  # a marker carries the coordinator's clock (KL-WIRE-12)

    # --- set-up -----------------------------------------------------------------------------

    def _create(self, config: v.LogConfig) -> None:
        req_cls = CreateTopicsRequest
        if not self.broker.control.supports(req_cls):
            self._auto_create(config)
            return
        topic_cls = req_cls.CreatableTopic
        configs = [topic_cls.CreatableTopicConfig(name=k, value=val)
                   for k, val in topic_configs(config, self.broker.segment_key).items()]
        version = self.broker.control.version(req_cls, 5)
        response = self.broker.call(self.broker.bootstrap, req_cls[version](
            topics=[topic_cls(name=self.topic, num_partitions=1, replication_factor=1,
                              assignments=[], configs=configs)],
            timeout_ms=WAIT_MS, validate_only=False))
        code = response.topics[0].error_code
        if code != 0:
            raise self.broker.crashed(f"CreateTopics {self.topic} failed with error {code}: "
                                      f"{response.topics[0].error_message}")

    def _auto_create(self, config: v.LogConfig) -> None:
        """Without CreateTopics the topic is the one the broker creates on Metadata, with the
        broker's defaults: only a run whose config is Kafka's topic defaults is checkable
        (KL-WIRE-4, the `kafka_defaults` family)."""
        defaults = topic_configs(v.LogConfig())
        if topic_configs(config) != defaults:
            raise e.IllegalArgumentError(
                "the broker offers no CreateTopics, so a run's topic has the broker's default "
                "configs: only the kafka_defaults family can be checked (KL-WIRE-4)")
        self._auto_create_topic = True

    def _await_leader(self) -> tuple[tuple[str, int], int]:
        """The partition leader's address and epoch, once Metadata names one."""
        deadline = time.monotonic() + WAIT_MS / 1000
        version = self.broker.control.version(MetadataRequest, 8)
        auto = self._auto_create_topic
        while True:
            response = self.broker.call(self.broker.bootstrap, MetadataRequest[version](
                topics=[MetadataRequest.MetadataRequestTopic(name=self.topic)],
                allow_auto_topic_creation=auto))
            nodes = {b.node_id: (b.host, b.port) for b in response.brokers}
            for topic in response.topics:
                for part in topic.partitions:
                    if part.error_code == 0 and part.leader_id in nodes:
                        return nodes[part.leader_id], part.leader_epoch
            if time.monotonic() > deadline:
                raise self.broker.crashed(f"no leader for {self.topic}-0 within {WAIT_MS} ms")
            time.sleep(0.05)

    def __getattribute__(self, name: str) -> Any:
        if name in object.__getattribute__(self, "__dict__").get("exclude", ()):
            raise UnsupportedError(f"{name} is excluded (--exclude-action)")
        return object.__getattribute__(self, name)

    def _send(self, message: Any) -> Any:
        return self.broker.call(self.leader, message)

    def _version(self, req_cls: Any, wanted: int) -> int:
        try:
            return self.broker.connection(self.leader).version(req_cls, wanted)
        except BrokerConnectionError as error:
            raise UnsupportedError(str(error)) from None

    # --- actions ----------------------------------------------------------------------------

    def append_as_leader(self, records: tuple[v.Record, ...], leader_epoch: int,
                         producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                         is_transactional: bool = False) -> v.LogAppendInfo:
        idempotent = producer_id != -1 or is_transactional
        if idempotent and "producer_state" not in self.features:
            raise UnsupportedError("the broker offers no InitProducerId: batches go without a "
                                   "producer id (KL-WIRE-6)")
        self._require_leader_epoch(leader_epoch)
        if not records:
            raise UnsupportedError("a producer never sends an empty batch")
        wire, transactional_id = None, None
        if idempotent:  # KL-WIRE-11: the broker's producer id, the checker's epoch and sequence
            wire = self.producers.for_batch(producer_id, producer_epoch, is_transactional)
            producer_id = wire.broker_id
            transactional_id = wire.transactional_id if is_transactional else None
        data = MemoryRecords.with_records(  # KL-WIRE-6: the exact batch
            records, producer=(producer_id, producer_epoch, base_sequence),
            is_transactional=is_transactional).to_bytes()
        first, log_append_time = self._produce(data, transactional_id)
        if wire is not None:
            self.producers.sent(wire, producer_epoch)
        return v.LogAppendInfo(
            first_offset=first, last_offset=first + len(records) - 1,
            max_timestamp=-1, offset_of_max_timestamp=-1,  # not on the wire (KL-WIRE-3)
            log_append_time=log_append_time, valid_bytes=len(data), record_count=len(records))

    def _require_leader_epoch(self, leader_epoch: int) -> None:
        if leader_epoch != self.leader_epoch:
            raise UnsupportedError(f"the broker's leader epoch is {self.leader_epoch}, "
                                   f"not {leader_epoch}")

    def _produce(self, data: bytes, transactional_id: str | None) -> tuple[int, int]:
        """One Produce (acks=all) of one batch: the base offset and log-append time answered.

        Produce v12 and later add the partition to a transaction implicitly (TV2), so the
        version stays below it (KL-WIRE-12)."""
        req = ProduceRequest
        part = req.TopicProduceData.PartitionProduceData(index=0, records=data)
        response = self._send(req[self._version(req, 9)](
            transactional_id=transactional_id, acks=ACKS_ALL, timeout_ms=WAIT_MS,
            topic_data=[req.TopicProduceData(name=self.topic, partition_data=[part])]))
        result = response.responses[0].partition_responses[0]
        if result.error_code != 0:
            raise error_for(result.error_code, "Produce")
        return int(result.base_offset), int(result.log_append_time_ms)

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int, leader_epoch: int) -> v.LogAppendInfo:
        """EndTxn: the coordinator writes the marker, the adapter waits for it (KL-WIRE-12)."""
        self._require_leader_epoch(leader_epoch)
        offset = self.producers.end_txn(producer_id, producer_epoch, commit, coordinator_epoch,
                                        self._log_end)
        self._marker_written = True
        return v.LogAppendInfo(first_offset=offset, last_offset=offset, max_timestamp=-1,
                               offset_of_max_timestamp=-1, log_append_time=-1,
                               valid_bytes=MARKER_BATCH_BYTES, record_count=1)

    def _log_end(self) -> int:
        return self._list_offset(v.LATEST_TIMESTAMP)[1]

    def read(self, start_offset: int, max_bytes: int, isolation: v.Isolation,
             min_one_message: bool) -> v.FetchDataInfo:
        if not min_one_message:
            raise UnsupportedError("Fetch v4+ always returns at least one batch (KIP-74)")
        if max_bytes < 0:
            raise UnsupportedError("Fetch has no negative max bytes")
        committed = isolation is v.Isolation.TXN_COMMITTED and "transactions" in self.features
        part = self._fetch(start_offset, max_bytes, READ_COMMITTED if committed else 0)
        records = MemoryRecords(part.records or b"")
        with_producer = "producer_state" in self.features
        batches = tuple(self._model_ids(batch_view(batch, 0, with_producer))
                        for batch in records.batches())
        aborted = None
        if committed and part.aborted_transactions is not None:  # KL-WIRE-12
            aborted = tuple(v.AbortedTransaction(self.producers.to_model(a.producer_id),
                                                 a.first_offset)
                            for a in part.aborted_transactions)
        return v.FetchDataInfo(
            fetch_offset_metadata=v.LogOffsetMetadata(start_offset),
            size_in_bytes=records.size_in_bytes, batches=batches,
            first_entry_incomplete=False, aborted_transactions=aborted)

    def _fetch(self, start_offset: int, max_bytes: int, isolation_level: int) -> Any:
        """One Fetch of the partition (KL-WIRE-7); its partition data."""
        req = FetchRequest
        part = req.FetchTopic.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=start_offset, log_start_offset=-1,
            partition_max_bytes=max_bytes)
        # max_wait_ms=1, min_bytes=0: answer at once (KL-WIRE-7).
        response = self._send(req[self._version(req, 12)](
            replica_id=-1, max_wait_ms=1, min_bytes=0, max_bytes=max_bytes,
            isolation_level=isolation_level, session_id=0, session_epoch=-1,
            topics=[req.FetchTopic(topic=self.topic, partitions=[part])],
            forgotten_topics_data=[], rack_id=""))
        if response.error_code != 0:
            raise error_for(response.error_code, "Fetch")
        parts = [p for t in response.responses for p in t.partitions]
        if not parts:
            raise UnexpectedException("Fetch answered without the partition", where="broker")
        if parts[0].error_code != 0:
            raise error_for(parts[0].error_code, "Fetch")
        return parts[0]

    def _model_ids(self, batch: v.BatchView) -> v.BatchView:
        """A fetched batch with the model's producer id for the broker's (KL-WIRE-11)."""
        if batch.producer_id < 0:
            return batch
        return dataclasses.replace(batch, producer_id=self.producers.to_model(batch.producer_id))

    def _list_offset(self, timestamp: int, isolation_level: int = 0) -> tuple[int, int, int]:
        """(timestamp, offset, leader epoch) of one ListOffsets lookup; at read_committed
        LATEST answers the last stable offset."""
        req = ListOffsetsRequest
        part = req.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=timestamp, max_num_offsets=1)
        version = self._version(req, 7)
        if timestamp == v.MAX_TIMESTAMP and version < 7:
            raise UnsupportedError("ListOffsets MAX_TIMESTAMP needs version 7 (KIP-734)")
        response = self._send(req[version](
            replica_id=-1, isolation_level=isolation_level,
            topics=[req.ListOffsetsTopic(name=self.topic, partitions=[part])]))
        result = response.topics[0].partitions[0]
        if result.error_code != 0:
            raise error_for(result.error_code, "ListOffsets")
        return result.timestamp, result.offset, getattr(result, "leader_epoch", -1)

    def update_high_watermark(self, offset: int) -> int:
        _, high_watermark, _ = self._list_offset(v.LATEST_TIMESTAMP)
        if offset < high_watermark:
            raise UnsupportedError("a client cannot lower a broker's high watermark")
        return high_watermark

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        if offset < 0:
            raise UnsupportedError("DeleteRecords reads a negative offset as 'the HW'")
        _, before, _ = self._list_offset(v.EARLIEST_TIMESTAMP)
        req = DeleteRecordsRequest
        response = self._send(req[self._version(req, 2)](
            topics=[req.DeleteRecordsTopic(name=self.topic, partitions=[
                req.DeleteRecordsTopic.DeleteRecordsPartition(partition_index=0, offset=offset)])],
            timeout_ms=WAIT_MS))
        result = response.topics[0].partitions[0]
        if result.error_code != 0:
            raise error_for(result.error_code, "DeleteRecords")
        return bool(result.low_watermark > before)

    def fetch_offset_by_timestamp(self, timestamp: int) -> v.TimestampAndOffset | None:
        if timestamp < v.MAX_TIMESTAMP:
            raise UnsupportedError(f"ListOffsets target {timestamp} is not sent by this adapter")
        if self._marker_written:
            raise UnsupportedError("a marker in the log carries the coordinator's wall clock, "
                                   "which the model's clock cannot predict (KL-WIRE-12)")
        ts, offset, epoch = self._list_offset(timestamp)
        if offset < 0:
            return None
        return v.TimestampAndOffset(ts, offset, None if epoch < 0 else epoch)

    def end_offset_for_epoch(self, epoch: int) -> v.EpochEndOffset | None:
        # The request's epoch is an INT32: a client refuses a wider one before sending (KL-BOUND-1)
        require_int32(epoch, "epoch", "end_offset_for_epoch")
        req = OffsetForLeaderEpochRequest
        topic = req.OffsetForLeaderTopic
        part = topic.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1,
                                              leader_epoch=epoch)
        response = self._send(req[self._version(req, 4)](
            replica_id=-1, topics=[topic(topic=self.topic, partitions=[part])]))
        result = response.topics[0].partitions[0]
        if result.error_code != 0:
            raise error_for(result.error_code, "OffsetForLeaderEpoch")
        if result.leader_epoch < 0 and result.end_offset < 0:
            return None  # UNDEFINED on the wire is "no answer" in the model (KL-WIRE-3)
        return v.EpochEndOffset(result.leader_epoch, result.end_offset)

    def __getattr__(self, action: str) -> Any:
        # roll, truncate_*, flush, delete_old_segments, advance_clock, close_and_reopen,
        # append_as_follower, maybe_increment_high_watermark, assign_epoch: no client API.

        if action not in ACTIONS:
            raise AttributeError(action)

        def unsupported(*_: Any, **__: Any) -> Any:
            raise UnsupportedError(f"Kafka's client API has no counterpart of {action}")

        return unsupported

    # --- session ----------------------------------------------------------------------------

    def state(self) -> v.LogStateView:
        _, log_start, _ = self._list_offset(v.EARLIEST_TIMESTAMP)
        _, log_end, _ = self._list_offset(v.LATEST_TIMESTAMP)
        stable = None  # the LSO: ListOffsets LATEST at read_committed (KL-WIRE-12)
        if "transactions" in self.features:
            stable = self._list_offset(v.LATEST_TIMESTAMP, READ_COMMITTED)[1]
        return v.LogStateView(log_start_offset=log_start, high_watermark=log_end,
                              log_end_offset=log_end, recovery_point=-1, segments=(),
                              epoch_entries=(), pending_deletions=(),
                              last_stable_offset=stable)

    def check(self) -> list[str]:
        return []

    def verify(self) -> list[str]:
        return []

    def close(self) -> None:
        """Abort open transactions and delete the run's topic (best effort: the verdict is
        already decided)."""
        req = DeleteTopicsRequest
        with contextlib.suppress(UnsupportedError, e.KafkalogError):
            self.producers.abort_open()
        try:
            version = self._version(req, 5)
            self._send(req[version](topic_names=[self.topic], timeout_ms=WAIT_MS))
        except (UnsupportedError, e.KafkalogError):
            pass
