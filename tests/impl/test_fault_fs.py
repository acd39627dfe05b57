"""`RecordingFileSystem`: journalled operations and the crash images it makes (FLT-1..7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kafkalog.conformance.crash.fault_fs import FaultModel, RecordingFileSystem
from kafkalog.impl.index.offset_index import OffsetIndex
from kafkalog.impl.load.log_dir import LogDir, TopicPartition
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.model.values import LogConfig, Record

POWER = (FaultModel.POWER_LOSS, FaultModel.POWER_LOSS_PREFIX, FaultModel.POWER_LOSS_TORN)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` by relative path, with its content (directories as b'<dir>')."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = b"<dir>"
        for f in filenames:
            out[os.path.relpath(os.path.join(dirpath, f), root)] = Path(dirpath, f).read_bytes()
    return out


def image(fs: RecordingFileSystem, tmp: Path, k: int, fault: FaultModel, seed: int = 0) -> dict:
    target = tmp / f"img-{k}-{fault.value}-{seed}-{len(list(tmp.iterdir()))}"
    fs.materialise(target, k, fault, seed)
    return tree(target)


def test_process_crash_at_the_last_point_reproduces_the_real_tree(tmp_path: Path) -> None:
    """A process crash after every op is exactly what is on disk now, mmap stores included."""
    root = tmp_path / "root"
    root.mkdir()
    fs = RecordingFileSystem(root)
    config = LogConfig(segment_bytes=600, index_interval_bytes=50, segment_index_bytes=4096)
    log_dir = LogDir.open(fs, root, config, MockTime(1_700_000_000_000))
    log = log_dir.get_or_create_log(TopicPartition("t", 0))
    for i in range(30):
        log.append_as_leader(MemoryRecords.with_records([Record(None, b"v%d" % i, 1000 + i)]), 0)
    log.truncate_to(17)
    log.flush()
    got = image(fs, tmp_path, fs.crash_points(), FaultModel.PROCESS_CRASH)
    want = tree(root)
    log_dir.close()
    assert any(op.kind == "store" for op in fs.journal())
    assert got == want


def test_unsynced_write_is_lost_on_power_loss_and_kept_by_process_crash(tmp_path: Path) -> None:
    """FLT-1 keeps an unsynced write; FLT-2 (drop) loses it; fsync makes it survive."""
    root = tmp_path / "r"
    root.mkdir()
    fs = RecordingFileSystem(root)
    fs.fsync_dir(root)
    h = fs.open_file(root / "f", create=True)
    h.pwrite(b"durable", 0)
    h.fsync()
    fs.fsync_dir(root)
    synced = fs.mark()
    h.pwrite(b"+volatile", 7)
    h.close()
    n = fs.crash_points()
    assert image(fs, tmp_path, n, FaultModel.PROCESS_CRASH)["f"] == b"durable+volatile"
    assert image(fs, tmp_path, n, FaultModel.POWER_LOSS)["f"] == b"durable"
    assert image(fs, tmp_path, synced, FaultModel.POWER_LOSS_TORN, 3)["f"] == b"durable"


def test_prefix_model_keeps_a_sector_aligned_prefix_of_unsynced_writes(tmp_path: Path) -> None:
    """L-prefix: the file is the durable part plus a prefix of what followed (FLT-3)."""
    root = tmp_path / "r"
    root.mkdir()
    fs = RecordingFileSystem(root)
    h = fs.open_file(root / "f", create=True)
    fs.fsync_dir(root)
    full = bytes(range(256)) * 12
    h.pwrite(full, 0)
    seen = set()
    for seed in range(40):
        got = image(fs, tmp_path, fs.crash_points(), FaultModel.POWER_LOSS_PREFIX, seed)["f"]
        assert full.startswith(got) and len(got) % 512 == 0
        seen.add(len(got))
    assert len(seen) > 2


def test_torn_model_never_changes_synced_bytes_and_tears_new_pages(tmp_path: Path) -> None:
    """L-garbage: synced bytes survive; changed pages come back old, new, zero or garbage."""
    root = tmp_path / "r"
    root.mkdir()
    fs = RecordingFileSystem(root)
    h = fs.open_file(root / "f", create=True)
    fs.fsync_dir(root)
    h.pwrite(b"A" * 5000, 0)
    h.fsync()
    h.pwrite(b"B" * 9000, 5000)
    kinds = set()
    for seed in range(40):
        got = image(fs, tmp_path, fs.crash_points(), FaultModel.POWER_LOSS_TORN, seed)["f"]
        assert got[:5000] == b"A" * 5000
        assert len(got) in (5000, 14000)
        if len(got) == 14000:
            kinds.update(bytes(set(got[8192:12288])).__iter__())
    assert ord("B") in kinds and 0 in kinds


def test_an_unsynced_create_or_rename_is_kept_or_lost_by_seed(tmp_path: Path) -> None:
    """FLT-5: an entry op not covered by a directory fsync may or may not persist."""
    root = tmp_path / "r"
    root.mkdir()
    fs = RecordingFileSystem(root)
    h = fs.open_file(root / "a", create=True)
    h.pwrite(b"x", 0)
    h.fsync()
    fs.rename(root / "a", root / "b")
    outcomes = {tuple(sorted(image(fs, tmp_path, fs.crash_points(), f, s)))
                for f in POWER for s in range(12)}
    # A rename never outlives the create it moves, and is atomic: never both names.
    assert outcomes <= {(), ("a",), ("b",)} and len(outcomes) == 3
    fs.fsync_dir(root)
    for f in POWER:
        assert image(fs, tmp_path, fs.crash_points(), f, 1) == {"b": b"x"}


def test_an_unsynced_truncation_comes_back_after_power_loss(tmp_path: Path) -> None:
    """FLT-4: a lost truncation brings the old bytes back; fsync makes the cut durable."""
    root = tmp_path / "r"
    root.mkdir()
    fs = RecordingFileSystem(root)
    h = fs.open_file(root / "f", create=True)
    h.pwrite(b"0123456789", 0)
    h.fsync()
    fs.fsync_dir(root)
    h.truncate(4)
    assert image(fs, tmp_path, fs.crash_points(), FaultModel.POWER_LOSS)["f"] == b"0123456789"
    h.fsync()
    assert image(fs, tmp_path, fs.crash_points(), FaultModel.POWER_LOSS)["f"] == b"0123"


def test_mmap_stores_are_durable_only_after_msync(tmp_path: Path) -> None:
    """FLT-7: an index entry stored through the mapping survives power loss only once msynced."""
    root = tmp_path / "r"
    root.mkdir()
    fs = RecordingFileSystem(root)
    index = OffsetIndex(fs, root / "00.index", 0, max_index_size=4096)
    fs.open_file(root / "00.index").fsync()
    fs.fsync_dir(root)
    index.append(5, 100)
    before = image(fs, tmp_path, fs.crash_points(), FaultModel.POWER_LOSS)["00.index"]
    assert before == bytes(4096)
    assert image(fs, tmp_path, fs.crash_points(), FaultModel.PROCESS_CRASH)["00.index"][:8] != (
        bytes(8))
    index.flush()
    after = image(fs, tmp_path, fs.crash_points(), FaultModel.POWER_LOSS)["00.index"]
    assert after[:8] == (5).to_bytes(4, "big") + (100).to_bytes(4, "big")
    index.close()


def test_materialise_is_deterministic_in_point_fault_and_seed(tmp_path: Path) -> None:
    """Same (crash point, fault, seed) gives the same tree, whatever was materialised before."""
    root = tmp_path / "r"
    root.mkdir()
    fs = RecordingFileSystem(root)
    for name in "abc":
        h = fs.open_file(root / name, create=True)
        h.pwrite(os.urandom(9000), 0)
        h.close()
    n = fs.crash_points()
    points = [(k, f) for k in range(n + 1) for f in FaultModel]
    first = {p: image(fs, tmp_path, p[0], p[1], 7) for p in points}
    again = {p: image(fs, tmp_path, p[0], p[1], 7) for p in reversed(points)}
    assert first == again


def test_a_crash_point_outside_the_journal_is_rejected(tmp_path: Path) -> None:
    """Crash points are 0..n; anything else is a caller bug, named."""
    fs = RecordingFileSystem(tmp_path)
    with pytest.raises(ValueError, match="crash point"):
        fs.materialise(tmp_path / "x", 1, FaultModel.POWER_LOSS, 0)


def test_a_durable_image_makes_the_differences_unsynced(tmp_path: Path) -> None:
    """GAP-4 chaining: with `durable_image`, what differs from it is lost by a power loss, and
    an atomically written checkpoint comes back old or new, never torn (FMT-36)."""
    volatile, durable = tmp_path / "v", tmp_path / "d"
    volatile.mkdir()
    durable.mkdir()
    (volatile / "a.log").write_bytes(b"synced+unsynced")
    (durable / "a.log").write_bytes(b"synced")
    (volatile / "x-checkpoint").write_bytes(b"0\n1\nnew\n")
    (durable / "x-checkpoint").write_bytes(b"0\n1\nold\n")
    fs = RecordingFileSystem(volatile, durable_image=durable)
    assert image(fs, tmp_path, 0, FaultModel.PROCESS_CRASH) == tree(volatile)
    assert image(fs, tmp_path, 0, FaultModel.POWER_LOSS, 0)["a.log"] == b"synced"
    seen = {image(fs, tmp_path, 0, f, s)["x-checkpoint"] for f in POWER for s in range(8)}
    assert seen == {b"0\n1\nnew\n", b"0\n1\nold\n"}


@pytest.mark.parametrize("reverse", [False, True], ids=["names_ascending", "names_descending"])
def test_a_stale_tmp_planted_after_the_crash_never_replaces_the_pending_checkpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reverse: bool) -> None:
    """The pending `x-checkpoint.tmp -> x-checkpoint` rename predates a `.tmp` created after
    the crash, so a power loss leaves the old or new checkpoint, never the stale file's image,
    whichever order the directory lists them in (tmpfs lists newest first)."""
    import kafkalog.conformance.crash.fault_fs as fault_fs

    real_walk = os.walk

    def ordered_walk(top: Path) -> object:
        for dirpath, dirnames, filenames in real_walk(top):
            yield dirpath, dirnames, sorted(filenames, reverse=reverse)

    monkeypatch.setattr(fault_fs.os, "walk", ordered_walk)
    volatile, durable = tmp_path / "v", tmp_path / "d"
    volatile.mkdir()
    durable.mkdir()
    (volatile / "x-checkpoint").write_bytes(b"0\n1\nnew\n")
    (volatile / "x-checkpoint.tmp").write_bytes(b"stale")
    (durable / "x-checkpoint").write_bytes(b"0\n1\nold\n")
    fs = RecordingFileSystem(volatile, durable_image=durable)
    seen = {image(fs, tmp_path, 0, f, s)["x-checkpoint"] for f in POWER for s in range(16)}
    assert seen == {b"0\n1\nnew\n", b"0\n1\nold\n"}


def test_compacting_the_journal_keeps_every_image_of_later_crash_points(tmp_path: Path) -> None:
    """After compact(), crash point j is the old point n + j, for every fault model and seed."""
    def run(compact: bool) -> list[dict]:
        root = tmp_path / f"r{compact}"
        root.mkdir()
        fs = RecordingFileSystem(root)
        h = fs.open_file(root / "f", create=True)
        h.pwrite(b"a" * 5000, 0)
        h.fsync()
        fs.rename(root / "f", root / "g")
        h.pwrite(b"b" * 3000, 5000)
        start = fs.mark()
        if compact:
            fs.compact()
            assert fs.mark() == 0
        h.truncate(6000)
        fs.fsync_dir(root)
        base = 0 if compact else start
        return [image(fs, tmp_path, base + j, f, s)
                for j in range(fs.crash_points() - base + 1) for f in FaultModel for s in (0, 1)]

    assert run(True) == run(False)


@pytest.mark.parametrize("fault", list(FaultModel))
def test_a_preallocated_file_stays_a_hole_in_memory_and_on_the_crash_image(
        tmp_path: Path, fault: FaultModel) -> None:
    """An index preallocated to 1 GiB costs the recorder its written bytes only, and the crash
    image keeps the size with a zero tail (was: a dense 1 GiB copy per image, 14 GiB in all)."""
    root = tmp_path / "r"
    root.mkdir()
    fs = RecordingFileSystem(root)
    h = fs.open_file(root / "i", create=True)
    h.truncate(1 << 30)
    h.pwrite(b"\x01" * 8, 0)
    h.fsync()
    fs.fsync_dir(root)
    fs.compact()
    assert len(fs._initial.inodes[fs._initial.files["i"]].volatile.data) == 8
    target = tmp_path / "img"
    fs.materialise(target, fs.crash_points(), fault, seed=0)
    assert os.path.getsize(target / "i") == 1 << 30
    assert os.stat(target / "i").st_blocks * 512 < 1 << 20  # still sparse on disk
    with open(target / "i", "rb") as f:
        assert f.read(16) == b"\x01" * 8 + bytes(8)


def test_a_stamp_right_after_a_create_is_the_files_creation_time_on_every_image(
        tmp_path: Path) -> None:
    """A new file's stamped time joins its create (no extra crash point) and comes back after a
    crash, instead of the host's clock at materialise (KL-RET-5 trace)."""
    root = tmp_path / "root"
    root.mkdir()
    fs = RecordingFileSystem(root)
    fs.open_file(root / "a.log", create=True).close()
    fs.set_mtime_ms(root / "a.log", 1_700_000_000_000)
    assert fs.crash_points() == 1
    target = tmp_path / "img"
    fs.materialise(target, 1, FaultModel.PROCESS_CRASH, 0)
    assert os.stat(target / "a.log").st_mtime_ns // 1_000_000 == 1_700_000_000_000


def test_crash_image_digest__names_exactly_the_tree_materialise_writes(tmp_path: Path) -> None:
    """Equal digests for equal trees (a zero tail and a hole alike), different ones when a byte,
    a size or an mtime differs: a sweep may load each digest once (conformance/crash/sweep.py)."""
    from kafkalog.conformance.crash.crash_image import CrashImage, FileImage

    root = tmp_path / "r"
    root.mkdir()
    fs = RecordingFileSystem(root)
    fs.fsync_dir(root)
    h = fs.open_file(root / "a", create=True)
    h.pwrite(b"x" * 5000, 0)
    h.fsync()
    h.pwrite(b"y" * 100, 8000)
    h.close()
    seen: dict[bytes, dict] = {}
    for k in range(fs.crash_points() + 1):
        for fault in FaultModel:
            for seed in range(3):
                crash = fs.crash_image(k, fault, seed)
                written = image(fs, tmp_path, k, fault, seed)
                assert seen.setdefault(crash.digest(), written) == written
    assert len(seen) > 2
    base = CrashImage(("d",), (("d/f", FileImage(b"ab", 10, 5)),))
    assert base.digest() == CrashImage(("d",), (("d/f", FileImage(b"ab\0\0", 10, 5)),)).digest()
    for other in (FileImage(b"ac", 10, 5), FileImage(b"ab", 11, 5), FileImage(b"ab", 10, 6)):
        assert base.digest() != CrashImage(("d",), (("d/f", other),)).digest()


def test_durable_image__stale_tmp_planted_over_a_pending_checkpoint_rename__never_replaces_it(
        tmp_path: Path) -> None:
    """A process crash after a checkpoint's `.tmp` was written and fsynced but before its rename
    was durable leaves the old file on disk, the new one under `.tmp` and the rename pending;
    a stale `.tmp` planted after the crash is a later file. Once a directory fsync commits the
    rename, every power loss keeps the new checkpoint: the planted file's unsynced bytes never
    reach its name (campaign seed 400804: they tore the recovery point). Spec: FLT-5, FMT-36,
    KL-CRASH-7"""
    name = "recovery-point-offset-checkpoint"
    old, new, stale = b"0\n1\nt 0 0\n", b"0\n1\nt 0 5\n", b"0\n1\nt 0 99"
    root, durable = tmp_path / "root", tmp_path / "durable"
    for folder, files in ((root, {name: new, name + ".tmp": stale}),
                          (durable, {name: old, name + ".tmp": new})):
        folder.mkdir()
        for file, data in files.items():
            (folder / file).write_bytes(data)
    fs = RecordingFileSystem(root, durable_image=durable)
    fs.fsync_dir(root)
    for fault in (FaultModel.POWER_LOSS, FaultModel.POWER_LOSS_PREFIX,
                  FaultModel.POWER_LOSS_TORN):
        for seed in range(12):
            assert image(fs, tmp_path, fs.crash_points(), fault, seed)[name] == new
