"""The order checks of small indexes (one unpack) find what the chunked scan finds (FMT-12/21).

Conformance runs `check()` on every index after every step, so indexes of up to
`SMALL_CHECK_ENTRIES` entries take a one-unpack path; whenever it is unsure, the chunked scan
decides and names the entry. Both must agree on every content, ordered or not.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index import abstract_index, offset_index, time_index
from kafkalog.impl.index.offset_index import OffsetIndex
from kafkalog.impl.index.time_index import TimeIndex

_SMALL_INT = st.integers(-3, 40)


def _both_ways(index: object, monkeypatch: pytest.MonkeyPatch, module: object) -> None:
    quick = index._first_disorder()  # type: ignore[attr-defined]
    with monkeypatch.context() as m:
        m.setattr(module, "SMALL_CHECK_ENTRIES", 0)
        scanned = index._first_disorder()  # type: ignore[attr-defined]
    assert quick == scanned


# (index class, file name, entry layout, the module whose SMALL_CHECK_ENTRIES it reads, a first
# entry that loads a writable mapping)
_KINDS = {
    "offset": (OffsetIndex, "0.index", ">ii", offset_index, lambda i: i.append(0, 0)),
    "time": (TimeIndex, "0.timeindex", ">qi", time_index, lambda i: i.maybe_append(0, 0)),
}


@pytest.mark.parametrize("kind", sorted(_KINDS))
@settings(max_examples=150, deadline=None)
@given(entries=st.lists(st.tuples(_SMALL_INT, _SMALL_INT), min_size=1, max_size=70))
def test_small_order_check__any_entries__agrees_with_the_chunked_scan(
    tmp_path_factory: pytest.TempPathFactory, kind: str, entries: list[tuple[int, int]],
) -> None:
    cls, name, layout, module, first = _KINDS[kind]
    entry = struct.Struct(layout)
    index = cls(FileSystem(), tmp_path_factory.mktemp(kind) / name, 0, entry.size * 80)
    try:
        first(index)  # a loaded, writable mapping; then the raw entries over it
        buf = index._buf()
        for n, fields in enumerate(entries):
            entry.pack_into(buf, entry.size * n, *fields)
        index._entries = len(entries)
        with pytest.MonkeyPatch.context() as monkeypatch:
            _both_ways(index, monkeypatch, module)
    finally:
        index.close_handler()


def test_entries_struct__is_the_file_layout(tmp_path: Path) -> None:
    assert abstract_index.entries_struct("ii", 2).size == 16
    assert abstract_index.entries_struct("qi", 3).size == 36
