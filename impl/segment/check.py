"""A segment's own invariants (SEG-2) and its next offset (SEG-12) on header facts.

Conformance checks every segment after every step and observes each one's next offset, so both
walks read the batch headers in C (`scan_headers`, `facts_summary`) when the bytes are plain v2
batches of a bounded size. Anything else, or any doubt, takes the batch-by-batch walk, which
raises what it always raised and names the first problem.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from kafkalog.impl.records.facts_summary import facts_summary
from kafkalog.impl.records.memory_records import scan_headers

# Bytes read in one pread for a header walk; larger spans walk batch by batch.
QUICK_WALK_BYTES = 8 << 20


def check_segment_unless_unchanged(segment: Any) -> int:
    """`check_segment`, skipped while the segment's files and in-memory sizes are as the last
    check saw them, on a file system that can tell (`FileSystem.version_of`: a rewrite in place
    changes the version, so an old segment rewritten is checked again)."""
    fingerprint = _fingerprint(segment)
    last = segment.last_check
    if fingerprint is not None and last is not None and last[0] == fingerprint:
        return int(last[1])
    next_offset = check_segment(segment)
    segment.last_check = None if fingerprint is None else (fingerprint, next_offset)
    return next_offset


def next_offset_unless_unchanged(segment: Any) -> int:
    """`segment.read_next_offset()`, or the next offset the last passing check found while the
    fingerprint it was taken under holds (the same walk's answer for unchanged files)."""
    last = segment.last_check
    if last is not None and last[0] == _fingerprint(segment):
        return int(last[1])
    return int(segment.read_next_offset())


def _fingerprint(segment: Any) -> Hashable | None:
    """The segment's file versions, sizes and loaded index entries, or None when the file
    system cannot tell a file's version."""
    offsets, times = segment._offset_index, segment._time_index
    versions = _file_versions(segment, (segment.log.path, offsets.path, times.path))
    if None in versions:
        return None
    loaded = (offsets.get().entries if offsets.is_loaded() else -1,
              times.get().entries if times.is_loaded() else -1)
    return versions, segment.size(), loaded, segment.base_offset


def _file_versions(segment: Any, paths: tuple[str, str, str]) -> tuple[Hashable | None, ...]:
    """`fs.version_of` of each path. No answer changes while the file system's `generation()`
    holds, and state() and check() fingerprint every segment each step: asked once per
    generation and paths."""
    fs = segment.fs
    generation = fs.generation()
    seen = segment.versions_seen
    if generation is not None and seen is not None and seen[:3] == (fs, generation, paths):
        return seen[3]  # type: ignore[no-any-return]
    versions = tuple(fs.version_of(path) for path in paths)
    segment.versions_seen = None if generation is None else (fs, generation, paths, versions)
    return versions


def check_segment(segment: Any) -> int:
    """Assert `segment`'s invariants in O(n): offsets within its relative range and strictly
    increasing, no torn bytes, both indexes' own checks. Returns the offset after its last
    batch (the base offset when empty)."""
    size = segment.size()
    if size <= QUICK_WALK_BYTES:
        facts = scan_headers(segment.log.read_bytes(0, size))
        summary = facts_summary(facts) if facts else None
        if (summary is not None and summary.lasts_increasing
                and facts[0][2] + facts[0][3] >= segment.base_offset
                and segment.can_convert_to_relative_offset(summary.last_offset)
                and summary.total_size == size):
            _check_indexes(segment)
            return summary.last_offset + 1
    return _check_batch_by_batch(segment)


def _check_batch_by_batch(segment: Any) -> int:
    base = segment.base_offset
    previous_last = base - 1
    position = 0
    for batch in segment.log.batches(0):
        assert segment.can_convert_to_relative_offset(batch.last_offset), (
            f"segment {base}: batch at {position} ends at {batch.last_offset}"
        )
        assert batch.last_offset > previous_last, (
            f"segment {base}: offsets not increasing at {position}"
        )
        previous_last = batch.last_offset
        position += batch.size_in_bytes
    assert position == segment.size(), f"segment {base}: torn bytes after {position}"
    _check_indexes(segment)
    return previous_last + 1


def _check_indexes(segment: Any) -> None:
    segment._offset_index.check_if_loaded()
    segment._time_index.check_if_loaded()


def next_offset_from(segment: Any, position: int) -> int:
    """The offset after the last whole batch at or after `position`, else the base offset
    (SEG-12's walk from the last index entry)."""
    tail = segment.size() - position
    if 0 < tail <= QUICK_WALK_BYTES:
        facts = scan_headers(segment.log.read_bytes(position, tail))
        if facts:
            return facts[-1][2] + facts[-1][3] + 1
    next_offset = segment.base_offset
    for batch in segment.log.batches(position):
        next_offset = batch.next_offset
    return int(next_offset)
