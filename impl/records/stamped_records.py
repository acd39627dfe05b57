"""A leader append's stamped batches without a copy of them.

A leader stamps each client batch's base offset and partition leader epoch (LOG-18). Both lie in
the batch's first 16 bytes, outside the CRC (FMT-45, FMT-47), and the caller's buffer is never
modified (docs/design.md). Copying a 1 MiB append only to change 16 bytes a batch cost as much as
a fifth of the write itself, so `StampedRecords` keeps the caller's bytes and the new first 16
bytes of every batch side by side; the segment file receives them interleaved in one vectored
write (`FileHandle.write_stamped`), and the stamped bytes are built only if something reads them.
"""

from __future__ import annotations

from kafkalog.impl.records.memory_records import BatchFacts, ScannedRecords

STAMP_BYTES = 16  # baseOffset, batchLength, partitionLeaderEpoch (FMT-45)


def stamped_bytes(source: memoryview, headers: bytes, facts: list[BatchFacts]) -> bytearray:
    """`source` with each batch's first 16 bytes replaced by its 16 bytes of `headers`. O(n)."""
    out = bytearray(source)
    for i, fact in enumerate(facts):
        at = fact[0]
        out[at : at + STAMP_BYTES] = headers[STAMP_BYTES * i : STAMP_BYTES * (i + 1)]
    return out


class StampedRecords(ScannedRecords):
    """Whole validated batches: `source` (the caller's bytes) under the stamps in `headers`
    (16 bytes a batch, in batch order); `facts` describe them after the stamps.

    `buffer` (the stamped bytes) is built on first use and kept: the append path itself reads
    only `facts`, `after_stamps` and the vectored write, so a plain append never builds it.
    """

    __slots__ = ("source", "headers", "_stamped")

    def __init__(self, source: memoryview, headers: bytes, facts: list[BatchFacts]) -> None:
        # No super().__init__: `buffer` is this class's lazily built property.
        self.source = memoryview(source)
        self.headers = headers
        self.facts = facts
        self._stamped: memoryview | None = None

    @property  # type: ignore[override]
    def buffer(self) -> memoryview:
        if self._stamped is None:
            self._stamped = memoryview(stamped_bytes(self.source, self.headers, self.facts))
        return self._stamped

    @property
    def after_stamps(self) -> memoryview:
        return self.source

    @property
    def size_in_bytes(self) -> int:
        return len(self.source)

    def __len__(self) -> int:
        return len(self.source)
