"""Proof against reality: `verify` on real broker log directories, read-only.

Clean folders must verify with no problem at all; unclean ones must report exactly the index files
their MISSING_FROM_SNAPSHOT.txt lists (the broker was running, so the active segment's preallocated
indexes were never captured) and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.verify.verifier import verify_log_dir

CLEAN = ["k0.11-zk-clean", "k2.1-zk-clean-many-partitions", "k3.7-kraft-clean-txn"]
UNCLEAN = ["k2.7-zk-unclean-compacted", "k2.8-zk-unclean-snappy", "k3.6-kraft-unclean-metadata",
           "k3.9-zk-unclean-gzip-epochs"]


def missing_from_snapshot(folder: Path) -> set[str]:
    """The relative paths MISSING_FROM_SNAPSHOT.txt lists (first token of each line)."""
    lines = (folder / "MISSING_FROM_SNAPSHOT.txt").read_text().splitlines()
    return {line.split()[0] for line in lines if line.strip()}


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_fixture_folders__every_folder_is_classified(kafka_fixtures: Path) -> None:
    """No fixture folder escapes the clean/unclean tests below."""
    present = {p.name for p in kafka_fixtures.iterdir() if p.is_dir()}
    assert present == set(CLEAN) | set(UNCLEAN)


@pytest.mark.parametrize("name", CLEAN)
def test_verify__clean_fixture__no_problem(kafka_fixtures: Path, name: str) -> None:
    """Every CRC, index entry, epoch and checkpoint of a clean real broker directory agrees."""
    report = verify_log_dir(FileSystem(), kafka_fixtures / name, deep=True)
    assert report.clean_shutdown
    assert [str(f) for f in report.problems] == []
    assert report.partitions and all(p.segments for p in report.partitions)


@pytest.mark.parametrize("name", UNCLEAN)
def test_verify__unclean_fixture__exactly_the_missing_indexes(kafka_fixtures: Path,
                                                              name: str) -> None:
    """Spec: REC-6: the only problems are the index files the snapshot could not capture."""
    folder = kafka_fixtures / name
    report = verify_log_dir(FileSystem(), folder, deep=True)
    assert not report.clean_shutdown
    assert {f.kind for f in report.problems} == {"missing_index"}
    found = {str(Path(f.path).relative_to(folder)) for f in report.problems}
    assert found == missing_from_snapshot(folder)
    assert len(report.problems) == len(found)


def test_verify__real_epoch_history__batches_agree_with_checkpoint(kafka_fixtures: Path) -> None:
    """Spec: EPO-1: 17 epochs in k3.7 and 5 in k3.6's metadata log, checked batch by batch."""
    for name, partition, entries in (("k3.7-kraft-clean-txn", "_schemas-0", 17),
                                     ("k3.6-kraft-unclean-metadata", "__cluster_metadata-0", 5)):
        report = verify_log_dir(FileSystem(), kafka_fixtures / name)
        part = next(p for p in report.partitions if str(p.topic_partition) == partition)
        assert len(part.epoch_entries) == entries
        assert not [f for f in part.findings if f.kind.startswith("epoch")]


def test_verify__every_fixture__tree_unchanged(kafka_fixtures: Path) -> None:
    """verify never writes: sizes and modification times of every fixture file are unchanged."""
    before = tree_state(kafka_fixtures)
    for folder in sorted(p for p in kafka_fixtures.iterdir() if p.is_dir()):
        assert verify_log_dir(FileSystem(), folder, deep=True).partitions
    assert tree_state(kafka_fixtures) == before
