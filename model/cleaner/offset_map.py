"""The cleaner's offset map (CLN-25..CLN-28): the newest dirty offset of each key.

Keys compare exactly (Kafka compares MD5 hashes, CLN-25). The map's capacity is a broker
setting the model does not fix: `end_offset_options` lists every end offset some capacity gives,
and `build_offset_map` builds the map for one of them. Rules: KL-CLEAN-4.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..state import PartitionState
from ..values import AbortedTxnEntry
from .transactions import TxnTracker, add_aborted, on_control_batch, on_data_batch


@dataclass(frozen=True)
class OffsetMap:
    """A built map: each key's newest offset in [first dirty, end), and Kafka's latestOffset."""

    offsets: tuple[tuple[bytes, int], ...]  # sorted by key
    latest_offset: int  # CLN-28: end offset - 1

    def get(self, key: bytes) -> int:
        """SOM `get`: the key's offset, or -1 when absent."""
        return dict(self.offsets).get(key, -1)


def _scan(state: PartitionState, first_dirty: int, first_uncleanable: int,
          aborted: tuple[AbortedTxnEntry, ...]) -> Iterator[tuple[str, bytes, int]]:
    """CLN-27 steps 2-6 as events: ("put", key, offset) before each put, ("latest", b"", o)
    for each latestOffset update; control and aborted batches put nothing."""
    tracker = add_aborted(TxnTracker(), aborted)
    segments = [s for s in state.segments if s.base_offset < first_uncleanable]
    start = max((i for i, s in enumerate(segments) if s.base_offset <= first_dirty), default=0)
    dirty = segments[start:]
    for i, segment in enumerate(dirty):
        next_base = dirty[i + 1].base_offset if i + 1 < len(dirty) else first_uncleanable
        for batch in segment.batches:
            if batch.last_offset < first_dirty:
                continue  # CLN-27 step 3: the scan starts at the batch holding first dirty
            if batch.is_control:
                tracker, _, _ = on_control_batch(tracker, batch)
            else:
                tracker, is_aborted = on_data_batch(tracker, batch)
                if not is_aborted:
                    for j, record in enumerate(batch.records):
                        offset = batch.record_offset(j)
                        if record.key is not None and offset >= first_dirty:
                            yield "put", record.key, offset
            yield "latest", b"", batch.last_offset
        yield "latest", b"", next_base - 1


def end_offset_options(state: PartitionState, first_dirty: int, first_uncleanable: int,
                       aborted: tuple[AbortedTxnEntry, ...]) -> list[int]:
    """CLN-85: every end offset a map capacity of at least one entry gives, the unbounded map's
    (the first uncleanable offset, KL-CLEAN-4) first, then the others ascending."""
    keys: set[bytes] = set()
    latest = -1
    stops: list[int] = []
    for kind, key, offset in _scan(state, first_dirty, first_uncleanable, aborted):
        if kind == "latest":
            latest = offset
            continue
        capacity = len(keys)
        if capacity >= 1 and len(stops) < capacity:
            stops.append(latest + 1)
        keys.add(key)
        latest = offset
    full = latest + 1
    return [full, *sorted({s for s in stops if s != full})]


def build_offset_map(state: PartitionState, first_dirty: int, first_uncleanable: int,
                     aborted: tuple[AbortedTxnEntry, ...], end_offset: int) -> OffsetMap:
    """CLN-27, CLN-28: the map whose build stops where the end offset is `end_offset` (one of
    `end_offset_options`): each keyed, non-aborted data record in [first dirty, end offset)
    mapped to its key's newest offset there. Spec: KL-CLEAN-4."""
    offsets: dict[bytes, int] = {}
    latest = -1
    for kind, key, offset in _scan(state, first_dirty, first_uncleanable, aborted):
        if kind == "put" and latest + 1 == end_offset and offsets:
            break  # the capacity check before this put fails (CLN-26)
        if kind == "put":
            offsets[key] = offset
        latest = offset
    return OffsetMap(tuple(sorted(offsets.items())), latest)
