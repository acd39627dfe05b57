"""What the checker observes beyond `Log.state()`: exact index entries.

The model keeps every offset- and time-index entry byte-exactly (model/segment.py), so the
checker compares them: an implementation that indexes once per append instead of once per batch,
or keeps a stale entry after truncation, writes a legal-looking sparse index that no read result
shows. `with_indexes` adds the entries to the implementation's view, reading an index that is not
loaded from its file without opening it (so observing never creates a lazy index file, FMT-31),
and `comparable` drops the model's entries where an adapter does not report them (the field is
optional in the adapter protocol, so version-1 adapters without it keep working).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Hashable
from typing import Any

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.log.log import Log
from kafkalog.impl.producer.snapshot import decode as decode_snapshot
from kafkalog.model import values as v
from kafkalog.model.errors import KafkalogError
from kafkalog.model.producer.producer_entry import decrement_sequence

_OFFSET_ENTRY = struct.Struct(">ii")  # FMT-10: relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # FMT-19: timestamp, relative offset

Entries = tuple[tuple[int, int], ...]


#: Index entries by index path, with the fingerprint they were read under.
IndexMemo = dict[str, tuple[Hashable, Entries]]


def with_indexes(view: v.LogStateView, log: Log, fs: FileSystem,
                 memo: IndexMemo | None = None) -> v.LogStateView:
    """`view` with each segment's exact index entries, as the implementation holds them. With
    `memo`, an index whose file version (`fs.version_of`: every mapped store is journalled),
    load state and entry count are unchanged is not read again."""
    with log.lock:
        segments = list(log.local_log.segments)
        # Built directly: dataclasses.replace costs ~9 µs a call, and this runs every step.
        observed = tuple(
            v.SegmentView(seen.base_offset, seen.size_in_bytes, seen.next_offset,
                          _remembered(segment, segment._offset_index, fs, memo, _offset_entries),
                          _remembered(segment, segment._time_index, fs, memo, _time_entries))
            for seen, segment in zip(view.segments, segments, strict=True)
        )
    return _with(view, segments=observed)


def _with(view: v.LogStateView, **fields: Any) -> v.LogStateView:
    """`dataclasses.replace` for a view, which has no `__post_init__` to run: a fifth of its
    cost, and conformance replaces fields of the implementation's view after every step."""
    copy = object.__new__(type(view))
    copy.__dict__.update(view.__dict__, **fields)
    return copy


def _remembered(segment: Any, lazy: Any, fs: FileSystem, memo: IndexMemo | None,
                read: Any) -> Entries:
    path = str(lazy.path)
    version = None if memo is None else fs.version_of(path)
    if memo is None or version is None:
        return read(segment, fs)  # type: ignore[no-any-return]
    loaded = lazy.is_loaded()
    fingerprint = (version, loaded, lazy.get().entries if loaded else -1, segment.base_offset)
    known = memo.get(path)
    if known is not None and known[0] == fingerprint:
        return known[1]
    entries: Entries = read(segment, fs)
    memo[path] = (fingerprint, entries)
    return entries


Table = tuple[v.ProducerView, ...]
#: A decoded snapshot file by path, with the file's version when it was read.
SnapshotMemo = dict[str, tuple[Hashable, Table]]


def with_snapshot_tables(view: v.LogStateView, log: Log, fs: FileSystem,
                         memo: SnapshotMemo | None = None) -> v.LogStateView:
    """`view` with what each live `.snapshot` file holds, read from the file (PSF-4), so a
    snapshot written wrong shows when it is written, not only when a reload reads it back.
    With `memo`, a file whose `fs.version_of` is unchanged is not read again (a rewrite in
    place changes it)."""
    paths = log.producer_state.snapshots
    tables = tuple(_remembered_table(fs, paths[offset], memo) for offset in sorted(paths))
    return _with(view, producer_snapshot_tables=tables)


def _remembered_table(fs: FileSystem, path: Any, memo: SnapshotMemo | None) -> Table:
    key = str(path)  # once: the manager keeps Paths, and each str() of one is a Python call
    version = None if memo is None else fs.version_of(key)
    if memo is None or version is None:
        return _snapshot_table(fs, path)
    known = memo.get(key)
    if known is not None and known[0] == version:
        return known[1]
    table = _snapshot_table(fs, path)
    memo[key] = (version, table)
    return table


_UNREADABLE = (v.ProducerView(-1, -1, -1, -1, -1, ()),)


def _snapshot_table(fs: FileSystem, path: Any) -> tuple[v.ProducerView, ...]:
    try:  # read_file, as for index files: no handle, so the crash journal sees nothing
        entries = decode_snapshot(fs.read_file(path), str(path))
    except (KafkalogError, OSError):
        return _UNREADABLE
    table = []
    for e in sorted(entries, key=lambda e: e.producer_id):
        batches = () if e.last_offset < 0 else (v.ProducerBatchView(
            decrement_sequence(e.last_sequence, e.offset_delta), e.last_sequence,
            e.last_offset - e.offset_delta, e.last_offset, e.timestamp),)
        table.append(v.ProducerView(e.producer_id, e.epoch, e.coordinator_epoch, e.timestamp,
                                    e.current_txn_first_offset, batches))
    return tuple(table)


def _offset_entries(segment: Any, fs: FileSystem) -> Entries:
    lazy = segment._offset_index
    base = segment.base_offset
    raw = lazy.get().raw_entries() if lazy.is_loaded() else _file_entries(fs, lazy.path,
                                                                           _OFFSET_ENTRY)
    return tuple((base + rel, pos) for rel, pos in raw)


def _time_entries(segment: Any, fs: FileSystem) -> Entries:
    lazy = segment._time_index
    base = segment.base_offset
    raw = lazy.get().raw_entries() if lazy.is_loaded() else _file_entries(fs, lazy.path,
                                                                           _TIME_ENTRY)
    return tuple((ts, base + rel) for ts, rel in raw)


def _file_entries(fs: FileSystem, path: str, entry: struct.Struct) -> list[tuple[int, int]]:
    """The entries an index would load from its file: whole entries of its length (FMT-28)."""
    if not fs.exists(path):
        return []
    data = fs.read_file(path)
    count = len(data) // entry.size
    return [entry.unpack_from(data, n * entry.size) for n in range(count)]  # type: ignore[misc]


def comparable(model: v.LogStateView, impl: v.LogStateView
               ) -> tuple[v.LogStateView, v.LogStateView]:
    """Both views without what is not compared: observations the implementation does not
    report (an adapter without the optional index fields, or an index file not created yet).

    Every segment's time index is compared exactly, inactive ones included: the model carries
    Kafka's lazily loaded max timestamp (KL-TRUNC-3), so a truncation that forgets the batches
    before the cut (LogSegment.truncateTo, SEG-13) shows in its entries the same way on both
    sides.
    """
    if len(model.segments) != len(impl.segments):
        return model, impl
    ours_out, dropped = [], False
    for ours, theirs in zip(model.segments, impl.segments, strict=True):
        if theirs.offset_index is None:
            ours, dropped = dataclasses.replace(ours, offset_index=None), True
        if theirs.time_index is None:
            ours, dropped = dataclasses.replace(ours, time_index=None), True
        ours_out.append(ours)
    if not dropped:  # the usual case after every step: nothing to drop, no copies
        return model, impl
    return dataclasses.replace(model, segments=tuple(ours_out)), impl
