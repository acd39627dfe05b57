"""The one error hierarchy shared by the model, the implementation and every adapter.

Names follow the spec's error catalogue (specs/errors.md), which maps each to Kafka's exception and
to the rule that raises it (ERR-n in the reference). Model and implementation raise the same type
for the same input; conformance compares errors by their `code` (the class name), so a class here is
part of the adapter protocol's contract and must never be renamed.

Programmer errors are `assert`s and never appear here. Errors caused by outside input (a file, a
trace, a protocol message, a CLI argument) carry `where` (a path, a position, a line) so the CLI can
print one line that says what was wrong and where.
"""

from __future__ import annotations


class KafkalogError(Exception):
    """Root of every typed error kafkalog raises; the CLI turns these into one line and exit 2."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    @property
    def code(self) -> str:
        """The catalogue name used in the adapter protocol and in traces (the class name)."""
        return type(self).__name__

    def __str__(self) -> str:
        return f"{self.message} ({self.where})" if self.where else self.message


# --- Log-semantics errors: raised by actions, compared by conformance (specs/errors.md) ---


class OffsetOutOfRangeError(KafkalogError):
    """ERR-30/31/32: an offset outside what the log holds (read, log-start increment)."""


class CorruptRecordError(KafkalogError):
    """ERR-19/20/21: a batch whose size field or CRC is invalid; `where` names file and position."""


class RecordTooLargeError(KafkalogError):
    """ERR-23: a batch larger than max.message.bytes on the leader path."""


class RecordBatchTooLargeError(KafkalogError):
    """ERR-24: one append larger than segment.bytes."""


class UnexpectedAppendOffsetError(KafkalogError):
    """ERR-26: a follower append whose first offset is below the log end offset."""

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class OffsetsOutOfOrderError(KafkalogError):
    """ERR-25: a follower append whose batches' last offsets do not strictly increase."""


class InvalidRecordError(KafkalogError):
    """ERR-22: a client batch with base offset != 0, or a raft batch with the wrong epoch."""


class InvalidOffsetError(KafkalogError):
    """ERR-4/ERR-8: an index append whose offset does not increase."""


class IndexOffsetOverflowError(KafkalogError):
    """ERR-2: an offset that cannot be stored relative to an index's base offset."""


class LogSegmentOffsetOverflowError(KafkalogError):
    """ERR-14: a batch whose last offset cannot be stored relative to its segment's base."""


class CorruptIndexError(KafkalogError):
    """ERR-10/11/12: an index file that fails its sanity check (the loader rebuilds it)."""


class OutOfOrderSequenceError(KafkalogError):
    """PSE-2: a client batch whose first sequence does not follow the producer's last one."""


class InvalidProducerEpochError(KafkalogError):
    """PSE-1: a batch whose producer epoch is below the producer's current epoch."""


class InvalidTxnStateError(KafkalogError):
    """PSE-3: a non-transactional data batch while the producer has an open transaction."""


class TransactionCoordinatorFencedError(KafkalogError):
    """PSE-4: a marker whose coordinator epoch is below the producer's stored coordinator epoch."""


class IllegalArgumentError(KafkalogError):
    """Kafka's IllegalArgumentException: a bad argument to an action (ERR-27/28/29/33, ...)."""


class IllegalStateError(KafkalogError):
    """Kafka's IllegalStateException: an operation the object's state forbids (ERR-5/9/37/40)."""


class InvalidRollError(KafkalogError):
    """ERR-34: roll to an offset whose segment exists, or below the active segment's base."""


class KafkaStorageError(KafkalogError):
    """ERR-35/36: an I/O failure, or any mutation after the log's handlers were closed."""


class LogClosedError(KafkaStorageError):
    """ERR-35: an action on a log that was closed or deleted."""


# --- Bad input from outside: files, names and directories (impl; never compared as results) ---


class CorruptSnapshotError(KafkalogError):
    """PSE-8: a producer `.snapshot` file with a bad version, size or CRC (PSF-5)."""


class CorruptCheckpointError(KafkalogError):
    """ERR-43: a checkpoint file with a bad version, malformed line or wrong entry count."""


class InvalidFileNameError(KafkalogError):
    """ERR-48: a segment or index file name that is not a 20-digit offset plus a known suffix."""


class InvalidLogDirNameError(KafkalogError):
    """ERR-42: a partition directory name that is not `<topic>-<partition>` (FMT-3)."""


class LogDirError(KafkalogError):
    """A log directory that is missing, unreadable or not a directory."""


#: Every error type that conformance may compare as an action's result, by catalogue name.
ACTION_ERRORS: dict[str, type[KafkalogError]] = {
    cls.__name__: cls
    for cls in (
        OffsetOutOfRangeError,
        CorruptRecordError,
        RecordTooLargeError,
        RecordBatchTooLargeError,
        UnexpectedAppendOffsetError,
        OffsetsOutOfOrderError,
        InvalidRecordError,
        InvalidOffsetError,
        IndexOffsetOverflowError,
        LogSegmentOffsetOverflowError,
        CorruptIndexError,
        IllegalArgumentError,
        IllegalStateError,
        InvalidRollError,
        KafkaStorageError,
        LogClosedError,
        OutOfOrderSequenceError,
        InvalidProducerEpochError,
        InvalidTxnStateError,
        TransactionCoordinatorFencedError,
    )
}
