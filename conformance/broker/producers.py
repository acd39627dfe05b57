"""The checker's producers as a broker's: producer ids, epochs and transactions over the wire.

The checker's producer actors (conformance/gen/producers.py, transactions.py) choose producer
ids and epochs themselves; a broker assigns them (InitProducerId). `WireProducers` is one run's
translation table (KL-WIRE-11): the first batch of a model producer id asks the broker for a
producer id of its own (in a transaction run, for the transactional id `<topic>-<model id>`,
after FindCoordinator), and every later batch of that model id carries the broker's id. Epochs
and sequence numbers are sent exactly as the checker chose them: a fresh producer id starts at
epoch 0 on both sides, and the log layer checks idempotent epochs and sequences only against
what it stored. Fetched batches and aborted-transaction lists carry the broker's ids, which are
translated back, so the comparison sees the model's ids on both sides.

A transaction is the coordinator's (KL-WIRE-12): a transactional batch first adds the
partition (AddPartitionsToTxn), an `append_marker` is an EndTxn, after which the coordinator
writes the marker on its own; the adapter waits until it is in the log and answers its offset.
What the coordinator cannot be asked is `unsupported`: a transactional batch or marker of
another epoch than the one it assigned (or after an idempotent batch raised the partition's
epoch above it), a marker for a producer whose transaction does not hold the partition, and a
coordinator epoch other than the transaction-state partition's (0 on a fresh cluster).
EndTxn is sent at version 4 and below, so the coordinator ends a transaction without bumping
the epoch (transaction version 1, the model's rules; TV2 is not modelled).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest
from kafkalog.conformance.broker.cluster import WAIT_MS, Broker, error_for
from kafkalog.conformance.broker.kafka_wire import BrokerConnectionError
from kafkalog.conformance.check.sut import UnsupportedError
from kafkalog.conformance.errors import UnexpectedException

#: Coordinator answers that mean "ask again shortly": COORDINATOR_LOAD_IN_PROGRESS,
#: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS (the previous
#: transaction's markers are still being written).
COORDINATOR_RETRIABLE = {14, 15, 16, 51}
#: The coordinator epoch of a fresh cluster's transaction-state partitions (their first leader
#: epoch); a marker fetched back shows the one the coordinator really wrote.
COORDINATOR_EPOCH = 0
#: The broker's largest transaction timeout (`transaction.max.timeout.ms` default): an open
#: transaction must outlive the run, or the coordinator aborts it with a bumped epoch.
TXN_TIMEOUT_MS = 900_000
#: The last EndTxn version whose transactions keep their epoch (v5 asks for TV2's bump).
END_TXN_VERSION = 4
#: AddPartitionsToTxn v4+ is for brokers only; clients send v3 and below.
ADD_PARTITIONS_VERSION = 3
RETRY_S = 0.02
#: How long a coordinator may keep answering "again shortly": the first FindCoordinator creates
#: the 50 transaction-state partitions, which takes seconds on a loaded machine.
COORDINATOR_WAIT_S = 30.0
TRANSACTION_APIS = (FindCoordinatorRequest, AddPartitionsToTxnRequest, EndTxnRequest)


@dataclass
class WireProducer:
    """One model producer id and what the broker assigned it."""

    model_id: int
    broker_id: int
    epoch: int  # the epoch the broker assigned (InitProducerId)
    transactional_id: str | None  # None: an idempotent producer
    in_txn: bool = False  # the partition is in the producer's open transaction
    epoch_raised: bool = False  # an idempotent batch of a higher epoch reached the partition


class WireProducers:
    """One run's producers: model id -> broker id and the coordinator requests (see above)."""

    def __init__(self, broker: Broker, topic: str, transactional: bool) -> None:
        self.broker = broker
        self.topic = topic
        self.transactional = transactional
        self._by_model: dict[int, WireProducer] = {}
        self._to_model: dict[int, int] = {}

    # --- the translation table --------------------------------------------------------------

    def to_model(self, broker_id: int) -> int:
        """The model id of a broker-assigned id; an id this run never got stays as it is, so
        a stray producer shows as a divergence rather than being hidden."""
        return self._to_model.get(broker_id, broker_id)

    def producer(self, model_id: int) -> WireProducer:
        """The broker's producer for `model_id`, asking InitProducerId at its first use."""
        known = self._by_model.get(model_id)
        if known is not None:
            return known
        transactional_id = f"{self.topic}-{model_id}" if self.transactional else None
        broker_id, epoch = self._init_producer_id(transactional_id)
        wire = WireProducer(model_id, broker_id, epoch, transactional_id)
        self._by_model[model_id] = wire
        self._to_model[broker_id] = model_id
        return wire

    # --- batches ----------------------------------------------------------------------------

    def for_batch(self, model_id: int, epoch: int, is_transactional: bool) -> WireProducer:
        """The producer a batch goes out as; a transactional one joins the transaction first.

        Raises UnsupportedError for what a coordinator never lets a client send (KL-WIRE-12).
        """
        if is_transactional and not self.transactional:
            raise UnsupportedError("this run's producers are idempotent only (KL-WIRE-12)")
        wire = self.producer(model_id)
        if is_transactional:
            self._require_coordinator_epoch(wire, epoch, "a transactional batch")
            if not wire.in_txn:
                self._add_partition(wire)
        return wire

    def sent(self, wire: WireProducer, epoch: int) -> None:
        """Note an appended batch: a higher epoch than the coordinator's fences its markers."""
        if epoch > wire.epoch:
            wire.epoch_raised = True

    # --- markers ----------------------------------------------------------------------------

    def end_txn(self, model_id: int, epoch: int, commit: bool, coordinator_epoch: int,
                log_end: Callable[[], int]) -> int:
        """EndTxn, then wait for the coordinator's marker; returns the marker's offset."""
        wire = self._by_model.get(model_id)
        if wire is None or wire.transactional_id is None or not wire.in_txn:
            raise UnsupportedError("the coordinator writes a marker only to a partition in the "
                                   "producer's open transaction (KL-WIRE-12)")
        self._require_coordinator_epoch(wire, epoch, "a marker")
        if coordinator_epoch != COORDINATOR_EPOCH:
            raise UnsupportedError(f"the coordinator epoch is {COORDINATOR_EPOCH}, not "
                                   f"{coordinator_epoch} (KL-WIRE-12)")
        before = log_end()
        self._end_txn(wire, commit)
        return self._await_marker(before, log_end)

    def abort_open(self) -> None:
        """Abort every open transaction (at close, best effort): nothing waits for markers."""
        for wire in self._by_model.values():
            if wire.in_txn:
                self._end_txn(wire, False)

    def _end_txn(self, wire: WireProducer, commit: bool) -> None:
        assert wire.transactional_id is not None

        def request(version: int) -> Any:
            return EndTxnRequest[min(version, END_TXN_VERSION)](
                transactional_id=wire.transactional_id, producer_id=wire.broker_id,
                producer_epoch=wire.epoch, committed=commit)

        wire.in_txn = False
        self._coordinator_call(wire.transactional_id, "EndTxn", request, EndTxnRequest)

    # --- requests ---------------------------------------------------------------------------

    def _require_coordinator_epoch(self, wire: WireProducer, epoch: int, what: str) -> None:
        if epoch != wire.epoch or wire.epoch_raised:
            raise UnsupportedError(
                f"the coordinator assigned epoch {wire.epoch} to producer {wire.model_id}; "
                f"{what} of epoch {epoch} cannot be sent"
                + (" after an idempotent batch raised the partition's epoch"
                   if wire.epoch_raised else "") + " (KL-WIRE-12)")

    def _init_producer_id(self, transactional_id: str | None) -> tuple[int, int]:
        def request(version: int) -> Any:
            return InitProducerIdRequest[min(version, 4)](
                transactional_id=transactional_id, transaction_timeout_ms=TXN_TIMEOUT_MS,
                producer_id=-1, producer_epoch=-1)

        if transactional_id is None:
            response = self._retrying(self.broker.bootstrap, "InitProducerId", request,
                                      InitProducerIdRequest)
        else:
            response = self._coordinator_call(transactional_id, "InitProducerId", request,
                                              InitProducerIdRequest)
        return response.producer_id, response.producer_epoch

    def _add_partition(self, wire: WireProducer) -> None:
        req = AddPartitionsToTxnRequest
        assert wire.transactional_id is not None

        def request(version: int) -> Any:
            return req[min(version, ADD_PARTITIONS_VERSION)](
                v3_and_below_transactional_id=wire.transactional_id,
                v3_and_below_producer_id=wire.broker_id,
                v3_and_below_producer_epoch=wire.epoch,
                v3_and_below_topics=[req.AddPartitionsToTxnTopic(name=self.topic,
                                                                 partitions=[0])])

        self._coordinator_call(wire.transactional_id, "AddPartitionsToTxn", request, req)
        wire.in_txn = True

    def _coordinator(self, transactional_id: str) -> tuple[str, int]:
        """The address of the transaction coordinator of `transactional_id` (FindCoordinator
        creates the transaction-state topic on its first call; retried until it is ready)."""
        req = FindCoordinatorRequest
        deadline = time.monotonic() + COORDINATOR_WAIT_S
        version = min(self._version(self.broker.bootstrap, req), 3)
        while True:
            response = self.broker.call(self.broker.bootstrap,
                                        req[version](key=transactional_id, key_type=1))
            if response.error_code == 0:
                return response.host, response.port
            if response.error_code not in COORDINATOR_RETRIABLE or time.monotonic() > deadline:
                raise error_for(response.error_code, "FindCoordinator")
            time.sleep(RETRY_S)

    def _coordinator_call(self, transactional_id: str, api: str,
                          request: Callable[[int], Any], req_cls: Any) -> Any:
        return self._retrying(self._coordinator(transactional_id), api, request, req_cls)

    def _retrying(self, address: tuple[str, int], api: str, request: Callable[[int], Any],
                  req_cls: Any) -> Any:
        """Send until the answer is not a coordinator's "again shortly" (or its wait passed);
        raises the typed error of any other error code."""
        deadline = time.monotonic() + COORDINATOR_WAIT_S
        version = self._version(address, req_cls)
        while True:
            response = self.broker.call(address, request(version))
            code = _error_code(response)
            if code == 0:
                return response
            if code not in COORDINATOR_RETRIABLE or time.monotonic() > deadline:
                raise error_for(code, api)
            time.sleep(RETRY_S)

    def _version(self, address: tuple[str, int], req_cls: Any) -> int:
        """The newest version both sides speak; a broker without the API is `unsupported`."""
        try:
            return self.broker.connection(address).version(req_cls, req_cls.max_version)
        except BrokerConnectionError as error:
            raise UnsupportedError(f"{error} at {address[0]}:{address[1]}") from None

    def _await_marker(self, before: int, log_end: Callable[[], int]) -> int:
        """The coordinator writes the marker after EndTxn answered: wait until the log end
        moved by exactly the one marker batch (this run is the partition's only writer)."""
        deadline = time.monotonic() + WAIT_MS / 1000
        while True:
            after = log_end()
            if after == before + 1:
                return before
            if after != before or time.monotonic() > deadline:
                raise UnexpectedException(
                    f"EndTxn succeeded but the log end went from {before} to {after} "
                    f"(one marker expected within {WAIT_MS} ms)", where="broker")
            time.sleep(RETRY_S)


def _error_code(response: Any) -> int:
    """The error of a coordinator response: top level, else the one partition's."""
    code = int(getattr(response, "error_code", 0))
    for topic in getattr(response, "results_by_topic_v3_and_below", None) or ():
        for part in topic.results_by_partition:
            code = code or int(part.partition_error_code)
    return code
