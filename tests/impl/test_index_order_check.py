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
from kafkalog.impl import abstract_index, offset_index, time_index
from kafkalog.impl.fs import FileSystem
from kafkalog.impl.offset_index import OffsetIndex
from kafkalog.impl.time_index import TimeIndex

_SMALL_INT = st.integers(-3, 40)


def _both_ways(index: object, monkeypatch: pytest.MonkeyPatch, module: object) -> None:
    quick = index._first_disorder()  # type: ignore[attr-defined]
    with monkeypatch.context() as m:
        m.setattr(module, "SMALL_CHECK_ENTRIES", 0)
        scanned = index._first_disorder()  # type: ignore[attr-defined]
    assert quick == scanned


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_SMALL_INT, _SMALL_INT), min_size=1, max_size=70))
def test_offset_index__small_order_check__agrees_with_the_chunked_scan(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[int, int]],
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        index = OffsetIndex(FileSystem(), tmp_path_factory.mktemp("o") / "0.index", 0, 8 * 80)
        try:
            index.append(0, 0)  # a loaded, writable mapping; then the raw entries over it
            buf = index._buf()
            for n, (rel, pos) in enumerate(entries):
                struct.pack_into(">ii", buf, 8 * n, rel, pos)
            index._entries = len(entries)
            _both_ways(index, monkeypatch, offset_index)
        finally:
            index.close_handler()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_SMALL_INT, _SMALL_INT), min_size=1, max_size=70))
def test_time_index__small_order_check__agrees_with_the_chunked_scan(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[int, int]],
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        index = TimeIndex(FileSystem(), tmp_path_factory.mktemp("t") / "0.timeindex", 0,
                          12 * 80)
        try:
            index.maybe_append(0, 0)
            buf = index._buf()
            for n, (ts, rel) in enumerate(entries):
                struct.pack_into(">qi", buf, 12 * n, ts, rel)
            index._entries = len(entries)
            _both_ways(index, monkeypatch, time_index)
        finally:
            index.close_handler()


def test_entries_struct__is_the_file_layout(tmp_path: Path) -> None:
    assert abstract_index.entries_struct("ii", 2).size == 16
    assert abstract_index.entries_struct("qi", 3).size == 36
