"""Index details where kafkalog once differed from Kafka, per its source.

- `AbstractIndex.updateParentDir` / `LazyIndex.IndexFile.updateParentDir`:
  `file = new File(parentDir, file.getName())` — the same name under the new directory.
- `OffsetIndex.lookup` / `TimeIndex.lookup` read `mmap().duplicate()`; `closeHandler` ->
  `safeForceUnmap` -> `forceUnmap` sets `mmap = null`, so a lookup after it fails even when the
  index is empty.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.index.lazy_index import LazyIndex
from kafkalog.impl.index.offset_index import OffsetIndex
from kafkalog.impl.index.time_index import TimeIndex
from kafkalog.model.errors import KafkaStorageError


@pytest.fixture
def fs() -> FileSystem:
    return FileSystem()


def test_update_parent_dir__loaded_and_lazy__keep_the_file_name_under_the_new_dir(
    tmp_path: Path, fs: FileSystem
) -> None:
    """Spec: FMT-31 (Kafka: new File(parentDir, file.getName()))."""
    name = "00000000000000000045.index"
    loaded = OffsetIndex(fs, tmp_path / name, 45, 240)
    loaded.update_parent_dir(tmp_path / "moved")
    assert loaded.path == str(tmp_path / "moved" / name)
    loaded.close_handler()  # the file was not moved: nothing to trim
    lazy = LazyIndex.for_offset(fs, tmp_path / name, 45, 240)
    lazy.update_parent_dir(tmp_path / "moved")
    assert lazy.path == str(tmp_path / "moved" / name)


@pytest.mark.parametrize("kind", [OffsetIndex, TimeIndex])
def test_lookup__empty_index_after_close_handler__raises_kafka_storage_error(
    tmp_path: Path, fs: FileSystem, kind: type
) -> None:
    """Spec: FMT-13, FMT-23 (a closed index fails every lookup, empty or not)."""
    index = kind(fs, tmp_path / "00000000000000000000.index", 0, 240)
    index.close_handler()
    with pytest.raises(KafkaStorageError):
        index.lookup(0)
