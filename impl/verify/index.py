"""Index checks of `kafkalog verify`: offset index (FMT-10..18) and time index (FMT-19..25).

Pure over parsed entries and a `SegmentScan`; split from verifier.py, which re-exports every public
name (and opens the index files).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

from kafkalog.impl.verify.findings import Finding, Severity
from kafkalog.impl.verify.findings import note as _note
from kafkalog.impl.verify.findings import problem as _problem
from kafkalog.impl.verify.scan import SegmentScan

# Per index file: after this many problems the rest of the file is summarised in one note, so a
# garbage index of any size costs bounded memory and output.
MAX_INDEX_PROBLEMS = 100
OFFSET_INDEX_ENTRY = struct.Struct(">ii")  # FMT-10: relative offset, position
TIME_INDEX_ENTRY = struct.Struct(">qi")  # FMT-19: timestamp, relative offset



def length_findings(path: str, left_over: int, zeros: int, entry_size: int,
                    rule: str) -> Iterator[Finding]:
    """FMT-18, FMT-25, FMT-27: an index length that is no multiple of its entry, or a
    zero-filled preallocated tail."""
    if left_over:
        yield _problem("index_wrong_length", path, None,
                       f"length is not a multiple of {entry_size} ({left_over} extra bytes)", rule)
    if zeros:
        yield _problem("index_not_trimmed", path, None,
                       f"{zeros} zero-filled preallocated entries at the end (unclean shutdown; "
                       f"recovery rebuilds the index)", "FMT-27")


class _ProblemBudget:
    """Stops an index check after MAX_INDEX_PROBLEMS problems, adding one note that says so.
    Counts only the findings added since the last call, so each entry costs O(1)."""

    def __init__(self, findings: list[Finding], path: str, count: int) -> None:
        self.findings, self.path, self.count = findings, path, count
        self.seen = self.problems = 0

    def exhausted(self, n: int) -> bool:
        for finding in self.findings[self.seen :]:
            self.problems += finding.severity is Severity.PROBLEM
        self.seen = len(self.findings)
        if self.problems < MAX_INDEX_PROBLEMS:
            return False
        self.findings.append(_note("index_check_stopped", self.path, None,
                                   f"stopped after {MAX_INDEX_PROBLEMS} problems; entries "
                                   f"{n}..{self.count - 1} not checked", "FMT-18"))
        return True


def check_offset_index(entries: Sequence[tuple[int, int]], scan: SegmentScan,
                       path: str) -> list[Finding]:
    """Every entry points at a batch start keyed by that batch's last offset (FMT-12).

    Keys and positions strictly increase (FMT-14). A key beyond the batch at its position is
    anchor-era per-append keying (SEG-4): legal by BUG-26's rule (lookup never lands past the
    batch containing the key), so it is a note; a key below that batch's base is a problem.
    """
    by_position = {b.position: b for b in scan.batches}
    last_offsets = {b.last_offset for b in scan.batches}
    findings: list[Finding] = []
    previous: tuple[int, int] | None = None
    budget = _ProblemBudget(findings, path, len(entries))
    for n, (relative, position) in enumerate(entries):
        if budget.exhausted(n):
            break
        at, key = n * OFFSET_INDEX_ENTRY.size, scan.base_offset + relative
        if relative < 0:
            findings.append(_problem("index_offset_below_base", path, at,
                                     f"relative offset {relative} < 0", "FMT-18"))
        if previous is not None and (key <= previous[0] or position <= previous[1]):
            findings.append(_problem("index_not_increasing", path, at,
                                     f"entry ({key}, {position}) does not follow "
                                     f"({previous[0]}, {previous[1]})", "FMT-14"))
        previous = (key, position)
        batch = by_position.get(position)
        if batch is None:
            findings.append(_problem("index_entry_not_batch_start", path, at,
                                     f"entry ({key}, {position}) points at no batch start in "
                                     f"{scan.path}", "FMT-12"))
        elif key < batch.base_offset or (key > batch.last_offset and key >= scan.next_offset):
            findings.append(_problem("index_key_outside_batch", path, at,
                                     f"key {key} is outside batch {batch.base_offset}.."
                                     f"{batch.last_offset} at position {position}", "BUG-26"))
        elif key != batch.last_offset:
            detail = "an anchor-era per-append key" if key in last_offsets else "mid-batch"
            findings.append(_note("index_key_not_batch_last_offset", path, at,
                                  f"key {key} is {detail}; batch at {position} ends at "
                                  f"{batch.last_offset}", "SEG-4"))
    return findings


def check_time_index(entries: Sequence[tuple[int, int]], scan: SegmentScan, path: str,
                     expect_final_entry: bool = False) -> list[Finding]:
    """(T, O): T is the largest timestamp of the batches up to the one holding O (FMT-19).

    Timestamps strictly increase and offsets never decrease (FMT-22); O lies in the segment.
    With `expect_final_entry` (a rolled segment, or any segment after a clean shutdown) the last
    entry carries the segment's largest timestamp (SEG-16, SEG-17): timestamp lookups and time
    retention read a segment's largest timestamp from there (SEG-19).
    """
    findings = _time_index_entry_findings(entries, scan, path)
    largest = max((b.max_timestamp for b in scan.batches), default=-1)
    last = entries[-1][0] if entries else -1
    if expect_final_entry and largest >= 0 and not entries:
        # Legal: LogSegment.truncateTo re-derives the max timestamp only if the truncated time
        # index kept an entry, so a segment cut back below its first entry (after a reload, when
        # the max was not yet loaded) rolls with no entry at all (SEG-13); lookups then scan.
        findings.append(_note("time_index_empty", path, None,
                              f"no entry, though the segment's largest timestamp is {largest}",
                              "SEG-13"))
    elif expect_final_entry and largest >= 0 and last > largest:
        # Per-append indexing (before 3.9.2): a truncation's remnant entry (see
        # `_truncation_remnant_start`) becomes the segment's max timestamp so far, and so its
        # final entry, above every batch left.
        findings.append(_note(TRUNCATION_REMNANT, path, None,
                              f"last entry has timestamp {last}, above the segment's largest "
                              f"{largest}: a per-append truncation remnant", "KL-TRUNC-3"))
    elif expect_final_entry and largest >= 0 and last != largest:
        findings.append(_problem("time_index_missing_final_entry", path, None,
                                 f"last entry has timestamp {last} but the segment's largest "
                                 f"timestamp is {largest}", "SEG-17"))
    return _explain_forgotten_prefix(findings, entries, scan, path, expect_final_entry)


_PREFIX_KINDS = ("time_index_timestamp_mismatch", "time_index_missing_final_entry")


def _explain_forgotten_prefix(findings: list[Finding], entries: Sequence[tuple[int, int]],
                              scan: SegmentScan, path: str, final: bool) -> list[Finding]:
    """Timestamp mismatches that Kafka itself produces become one note.

    After a reload a segment's max timestamp is loaded lazily; a truncation that empties its
    time index then forgets the batches before the cut (LogSegment.truncateTo re-derives the
    max only if it is already >= 0, SEG-13), so every later entry, the final one included, is
    the max over the batches from some batch k on. Any other mismatch stays a problem.
    """
    if not any(f.kind in _PREFIX_KINDS for f in findings):
        return findings
    batches = scan.batches
    for k in range(1, len(batches)):
        def since_k(offset: int, k: int = k) -> int:
            return max((b.max_timestamp for b in batches[k:] if b.base_offset <= offset),
                       default=-1)

        if all(ts == since_k(scan.base_offset + rel) for ts, rel in entries) and (
            not final or (entries[-1][0] if entries else -1) == since_k(scan.next_offset)
        ):
            kept = [f for f in findings if f.kind not in _PREFIX_KINDS]
            return [*kept, _note("time_index_forgot_prefix", path, None,
                                 f"entries describe only the batches from offset "
                                 f"{batches[k].base_offset} on (a reload, then a truncation "
                                 "that emptied the time index)", "SEG-13")]
    return findings


#: A note, since Kafka before 3.9.2 leaves such entries itself; a checker that knows the writer
#: indexes per batch (where a truncation can leave none) treats it as a problem.
TRUNCATION_REMNANT = "time_index_entry_past_truncation"


def _truncation_remnant_start(entries: Sequence[tuple[int, int]], scan: SegmentScan) -> int:
    """Index of the first of the trailing entries that all lie past the segment's last batch.

    Per-append indexing pairs an append's max timestamp with that record's own offset, which
    may lie below the append's last offset; LogSegment.truncateTo cuts the time index at the
    truncation target while the log loses the whole batch holding the target (KL-TRUNC-2, 3),
    so entries between the segment's new end and the target stay. Only a trailing run can be
    such a remnant (any later entry would have been appended after the truncation), and its
    timestamps, maxima so far of the segment, are at least every kept batch's.
    """
    kept_max = max((b.max_timestamp for b in scan.batches), default=-1)
    n = len(entries)
    while (n > 0 and scan.base_offset + entries[n - 1][1] >= scan.next_offset
           and entries[n - 1][0] >= kept_max):
        n -= 1
    return n


def _inside_a_batch(offset: int, scan: SegmentScan) -> bool:
    """Whether a batch of the segment holds `offset` (entries that per-append or per-batch
    indexing writes always point into one; only a truncation remnant may not)."""
    return any(b.base_offset <= offset <= b.last_offset for b in scan.batches)


def _time_index_entry_findings(entries: Sequence[tuple[int, int]], scan: SegmentScan,
                               path: str) -> list[Finding]:
    findings: list[Finding] = []
    previous: tuple[int, int] | None = None
    budget = _ProblemBudget(findings, path, len(entries))
    remnant_from = _truncation_remnant_start(entries, scan)
    for n, (timestamp, relative) in enumerate(entries):
        if budget.exhausted(n):
            break
        at, offset = n * TIME_INDEX_ENTRY.size, scan.base_offset + relative
        if previous is not None and (timestamp <= previous[0] or offset < previous[1]):
            findings.append(_problem("time_index_not_increasing", path, at,
                                     f"entry ({timestamp}, {offset}) does not follow "
                                     f"({previous[0]}, {previous[1]})", "FMT-22"))
        previous = (timestamp, offset)
        if n == remnant_from:
            findings.append(_note(TRUNCATION_REMNANT, path, at,
                                  f"{len(entries) - n} entries from offset {offset} on lie past "
                                  f"the segment's end {scan.next_offset}: a truncation below them "
                                  "under per-append indexing (before 3.9.2) cuts the time index "
                                  "at its target, not at the batch it removed", "KL-TRUNC-3"))
        if n >= remnant_from:
            continue
        if relative < 0 or offset >= scan.next_offset:
            findings.append(_problem("time_index_entry_outside_segment", path, at,
                                     f"offset {offset} is outside [{scan.base_offset}, "
                                     f"{scan.next_offset})", "FMT-25"))
            continue
        seen = max((b.max_timestamp for b in scan.batches if b.base_offset <= offset), default=-1)
        if timestamp > seen and not _inside_a_batch(offset, scan):
            # A per-append truncation remnant that later appends passed: the truncation emptied
            # the batch holding its offset and the log went on at the target, so the offset lies
            # in the hole between the kept batches and the target (KL-TRUNC-3).
            findings.append(_note(TRUNCATION_REMNANT, path, at,
                                  f"entry ({timestamp}, {offset}) points into the hole a "
                                  "truncation left inside the segment: a per-append truncation "
                                  "remnant", "KL-TRUNC-3"))
        elif timestamp > seen and n == len(entries) - 1:
            # A per-append truncation remnant that later appends reached (they add no entry
            # below its timestamp): see `_truncation_remnant_start`.
            findings.append(_note(TRUNCATION_REMNANT, path, at,
                                  f"entry ({timestamp}, {offset}) is above every timestamp up to "
                                  f"offset {offset} ({seen}): a per-append truncation remnant",
                                  "KL-TRUNC-3"))
        elif seen != timestamp:
            findings.append(_problem("time_index_timestamp_mismatch", path, at,
                                     f"entry ({timestamp}, {offset}) but the largest timestamp "
                                     f"up to offset {offset} is {seen}", "FMT-19"))
    return findings

