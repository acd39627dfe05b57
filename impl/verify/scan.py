"""The shallow (and `--deep`) scan of one `.log` for `kafkalog verify` (FMT-52, FMT-46, SEG-2).

Pure over bytes (`scan_bytes`); `scan_segment` only maps the file read-only. Split from verifier.py,
which re-exports every public name.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.records.memory_records import batch_of, next_batch_size
from kafkalog.impl.verify.findings import Finding
from kafkalog.impl.verify.findings import problem as _problem
from kafkalog.model.errors import CorruptRecordError, KafkalogError

INT32_MAX = 2**31 - 1



@dataclass(frozen=True)
class BatchFacts:
    """The header facts of one batch at `position` in its `.log` (what every check needs)."""

    position: int
    size: int
    base_offset: int
    last_offset: int  # inclusive
    magic: int
    partition_leader_epoch: int  # -1 for v0/v1
    max_timestamp: int


@dataclass(frozen=True)
class SegmentScan:
    """Every whole batch of one `.log`, and what scanning found wrong with it."""

    path: str
    base_offset: int
    file_size: int
    batches: tuple[BatchFacts, ...]
    findings: tuple[Finding, ...]

    @property
    def valid_bytes(self) -> int:
        return self.batches[-1].position + self.batches[-1].size if self.batches else 0

    @property
    def next_offset(self) -> int:
        """SEG-12: the last batch's last offset + 1, or the base offset when empty."""
        return self.batches[-1].last_offset + 1 if self.batches else self.base_offset


def scan_bytes(buf: memoryview | bytes, base_offset: int, path: str,
               deep: bool = False) -> SegmentScan:
    """Shallow-scan `buf` as a `.log` of a segment at `base_offset`. Pure; O(batches).

    Checks: size field >= 14 (FMT-52), CRC (FMT-46), no torn tail, offsets strictly increasing
    and within [base, base + Int.MAX] (SEG-2, LOG-2). With `deep`, every record is decoded too.
    """
    view = memoryview(buf)
    facts: list[BatchFacts] = []
    findings: list[Finding] = []
    pos, end = 0, len(view)
    while True:
        try:
            size = next_batch_size(view, pos, end, 0, path)
        except CorruptRecordError as error:
            findings.append(_problem("corrupt_batch_size", path, pos, error.message, "FMT-52"))
            return SegmentScan(path, base_offset, end, tuple(facts), tuple(findings))
        if size is None:
            break
        batch = batch_of(view[pos : pos + size], pos, path)
        try:
            fact = BatchFacts(pos, size, batch.base_offset, batch.last_offset, batch.magic,
                              batch.partition_leader_epoch if batch.magic >= 2 else -1,
                              batch.max_timestamp)
            findings.extend(_check_batch(batch, fact, facts[-1] if facts else None,
                                         base_offset, path, deep))
            facts.append(fact)
        except KafkalogError as error:
            # A legacy wrapper's offsets come from its compressed inner messages, which may not
            # decode; the size field still says where the next batch starts.
            findings.append(_problem("corrupt_batch", path, pos, error.message, "FMT-51"))
        finally:
            del batch  # release the view into `buf` (an mmap cannot close while views exist)
        pos += size
    if pos < end:
        findings.append(_problem("torn_tail", path, pos,
                                 f"{end - pos} bytes after the last whole batch", "FMT-52"))
    return SegmentScan(path, base_offset, end, tuple(facts), tuple(findings))


def _check_batch(batch: Any, fact: BatchFacts, previous: BatchFacts | None, base_offset: int,
                 path: str, deep: bool) -> Iterator[Finding]:
    pos = fact.position
    if not batch.is_valid():
        yield _problem("crc_mismatch", path, pos,
                       f"batch {fact.base_offset}..{fact.last_offset} fails its CRC/size check "
                       f"(stored crc {batch.crc}, computed {batch.compute_checksum()})", "FMT-46")
    elif deep:
        try:
            for _ in batch.records():
                pass
        except KafkalogError as error:
            yield _problem("corrupt_records", path, pos, error.message, "FMT-49")
    if fact.last_offset < fact.base_offset:
        yield _problem("negative_offset_delta", path, pos,
                       f"last offset {fact.last_offset} < base offset {fact.base_offset}", "FMT-45")
    if fact.base_offset < base_offset or fact.last_offset - base_offset > INT32_MAX:
        yield _problem("offset_outside_segment", path, pos,
                       f"batch {fact.base_offset}..{fact.last_offset} is outside "
                       f"[{base_offset}, {base_offset} + Int.MAX]", "SEG-2")
    if previous is not None and fact.base_offset <= previous.last_offset:
        yield _problem("offsets_not_increasing", path, pos,
                       f"batch starts at {fact.base_offset} but the previous one ends at "
                       f"{previous.last_offset}", "LOG-2")


def scan_segment(fs: FileSystem, path: Path, base_offset: int, deep: bool = False) -> SegmentScan:
    """Scan a `.log` through a read-only mapping (never written, never read whole into memory)."""
    handle = fs.open_file(path, create=False, writable=False)
    try:
        size = handle.size()
        if size == 0:
            return SegmentScan(str(path), base_offset, 0, (), ())
        mapped = handle.mmap(size, writable=False)
        try:
            view = memoryview(mapped)
            try:
                return scan_bytes(view, base_offset, str(path), deep)
            finally:
                view.release()
        finally:
            mapped.close()
    finally:
        handle.close()

