"""One pass of whole-column facts over an append's `BatchFacts`.

The append path asks the same questions of every batch: are all CRCs good, are all base offsets
0 (a client's), does any batch exceed a size, do last offsets strictly increase, is there one
epoch. Asked row by row in Python that cost ~0.5 µs a batch; asked of whole columns once, it is
one C call (impl/records/_scan_append.c) or a few C-speed builtins (the reference below). Callers
use the
summary only to take a fast path when nothing is wrong; anything else goes to their row loops,
so errors keep their batch order.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

from kafkalog.impl.index.abstract_index import non_decreasing, strictly_increasing
from kafkalog.impl.records.batch_scan import compiled_facts_summary
from kafkalog.impl.records.memory_records import BatchFacts


class FactsSummary(NamedTuple):
    count: int
    crc_all_ok: bool
    bases_all_zero: bool
    max_size: int
    max_epoch: int
    min_epoch: int
    lasts_increasing: bool  # base + delta strictly increases batch to batch
    bases_non_decreasing: bool
    last_offset: int  # of the last batch
    total_size: int
    total_records: int
    max_timestamp: int
    max_timestamp_index: int  # the first batch holding max_timestamp


def py_facts_summary(facts: list[BatchFacts]) -> FactsSummary | None:
    """The summary of non-empty `facts` (None for none): the reference of the compiled
    `facts_summary`. O(n) in C-speed builtins."""
    if not facts:
        return None
    _, sizes, bases, deltas, epochs, max_tss, counts, crc_oks = zip(*facts, strict=True)
    lasts = list(map(operator.add, bases, deltas))
    top = max(max_tss)
    return FactsSummary(
        len(facts), all(crc_oks), not any(bases), max(sizes), max(epochs), min(epochs),
        strictly_increasing(lasts), non_decreasing(list(bases)), lasts[-1], sum(sizes),
        sum(counts), top, max_tss.index(top))


def facts_summary(facts: list[BatchFacts]) -> FactsSummary | None:
    """`py_facts_summary`, by the compiled twin where it can decide (every value in int64)."""
    got = None if compiled_facts_summary is None else compiled_facts_summary(facts)
    return py_facts_summary(facts) if got is None else FactsSummary._make(got)
