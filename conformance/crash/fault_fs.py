"""A recording file system: every effect on disk is performed AND journalled, so a crash after
any journalled operation can be materialised as a disk image under a named fault model.

This is the crash seam of the checker. `RecordingFileSystem` subclasses
the real `FileSystem`: the log runs on real files, and the journal records, in program order,
every create, mkdir, write, truncate, rename, unlink, rmdir, mtime stamp, file fsync, directory
fsync, mmap store and msync made under `root`. Crash point k means "after the first k operations".

`materialise(target, k, fault, seed)` replays the first k operations into an in-memory disk that
keeps, per file, a volatile image (what reads saw: the page cache) and a durable image (what an
fsync covered), and per directory the entry operations not yet covered by a directory fsync. It
then writes the tree a crash leaves under `fault`:

- PROCESS_CRASH (FLT-1): the page cache survives; the volatile tree, exactly.
- POWER_LOSS (FLT-2, FLT-10 L-drop): each file holds its durable image only.
- POWER_LOSS_PREFIX (FLT-3, FLT-10 L-prefix): each file keeps a seed-chosen prefix of its
  unsynced operations (the last one possibly a partial write at 512-byte granularity).
- POWER_LOSS_TORN (FLT-3, FLT-7, FLT-10 L-garbage): the size is old or new, and every 4 KiB page
  whose bytes changed since the last fsync is independently old, new, zeros or garbage.

Under every POWER_LOSS* model each directory operation not yet made durable by an fsync of its
directory is kept or lost by the seed (FLT-5 WEAK), closed under "an operation on a name needs
every earlier unsynced operation on the same name", so a rename is atomic and never outlives the
create it moves. A file whose directory entry is lost is lost with it (CBUG-19).

mmap stores (FLT-7): index entries are written into a mapping with `struct.pack_into`, which no
Python hook sees, so `AbstractIndex` reports each store to the mapping (`record_store`); a store
is page-cache data, durable only after msync or an fsync of the file. msync does not make a size
change durable (DUR-2, DUR-24: that depends on the file system; we take the weak reading).

Deterministic in (crash_point, fault, seed): every choice comes from one seeded `random.Random`.
"""

from __future__ import annotations

import mmap
import os
import random
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kafkalog.conformance.crash.crash_image import (
    PAGE,
    SECTOR,
    CrashImage,
    FaultModel,
    FileImage,
    apply_data,
    power_loss_image,
    reachable_tree,
)
from kafkalog.conformance.crash.sparse_image import SparseImage
from kafkalog.impl.fs.file_system import FileHandle, FileSystem, PathLike

__all__ = ["PAGE", "SECTOR", "CrashImage", "FaultModel", "Op", "RecordingFileSystem"]


class Op(NamedTuple):
    """One journalled operation. `kind` in: create mkdir write truncate store rename unlink rmdir
    mtime fsync msync fsync_dir. Paths are relative to the recording root ('' is the root)."""

    kind: str
    path: str
    inode: int = -1
    offset: int = 0  # write/store offset, truncate size, mtime ms
    data: bytes = b""
    dst: str = ""  # rename destination
    created_mtime_ms: int | None = None  # create: the time stamped with it (see set_mtime_ms)


#: Paths remembered by `_rel` (the relative form is pure in the path and the root, except for a
#: relative path under a changed working directory, which nothing here uses).
_REL_CACHE_SIZE = 4096
#: `version_of`'s memo: not asked yet under this generation (None is an answer).
_UNASKED = object()
#: Journalled ops that change a file's bytes, size or mtime (see `version_of`).
_CONTENT_OPS = frozenset({"create", "write", "truncate", "store", "mtime"})


def _written_atomically(path: str) -> bool:
    """Checkpoints and the clean-shutdown marker are replaced by tmp + rename (FMT-36)."""
    name = path.rpartition("/")[2]
    return name.endswith("checkpoint") or name == ".kafka_cleanshutdown"


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _read_image(path: Path, chunk: int = 1 << 20) -> SparseImage:
    """A file's image read in chunks; all-zero chunks at the end stay a hole (O(data) memory)."""
    image = SparseImage()
    zeros = bytes(chunk)
    with open(path, "rb") as f:
        while block := f.read(chunk):
            if block == zeros[:len(block)]:
                image.truncate(image.size + len(block))
            else:
                image.write(image.size, block)
    return image


@dataclass
class _Inode:
    volatile: SparseImage
    durable: SparseImage
    pending: list[Op] = field(default_factory=list)  # data ops since the last fsync, in order
    mtime_ms: int | None = None

    def copy(self) -> _Inode:
        return _Inode(self.volatile.copy(), self.durable.copy(), list(self.pending),
                      self.mtime_ms)


@dataclass
class _Disk:
    """The in-memory disk a prefix of the journal leaves: volatile and durable namespaces."""

    inodes: dict[int, _Inode] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)  # volatile namespace
    dirs: set[str] = field(default_factory=lambda: {""})
    durable_files: dict[str, int] = field(default_factory=dict)
    durable_dirs: set[str] = field(default_factory=lambda: {""})
    pending_dir_ops: list[Op] = field(default_factory=list)  # entry ops since their dir's fsync

    def copy(self) -> _Disk:
        return _Disk({i: n.copy() for i, n in self.inodes.items()}, dict(self.files),
                     set(self.dirs), dict(self.durable_files), set(self.durable_dirs),
                     list(self.pending_dir_ops))

    def apply(self, op: Op) -> None:
        kind = op.kind
        if kind in ("write", "store", "truncate"):
            inode = self.inodes[op.inode]
            apply_data(inode.volatile, op)
            inode.pending.append(op)
        elif kind == "fsync":
            inode = self.inodes[op.inode]
            inode.durable = inode.volatile.copy()
            inode.pending.clear()
        elif kind == "msync":
            self._msync(self.inodes[op.inode])
        elif kind == "mtime":
            self.inodes[op.inode].mtime_ms = op.offset
        elif kind == "fsync_dir":
            self._fsync_dir(op.path)
        else:
            if kind == "create":
                self.inodes[op.inode] = _Inode(SparseImage(), SparseImage(),
                                               mtime_ms=op.created_mtime_ms)
            _apply_entry(self.files, self.dirs, op)
            self.pending_dir_ops.append(op)

    @staticmethod
    def _msync(inode: _Inode) -> None:
        """Mapped stores become durable (clipped to the durable size); size changes do not."""
        keep: list[Op] = []
        for op in inode.pending:
            if op.kind == "store":
                room = max(0, min(len(op.data), inode.durable.size - op.offset))
                if room:
                    inode.durable.write(op.offset, op.data[:room])
            else:
                keep.append(op)
        inode.pending = keep

    def _fsync_dir(self, directory: str) -> None:
        """Entry ops homed in `directory` (and the earlier ops on the same names) become durable."""
        chosen = [_home(op) == directory for op in self.pending_dir_ops]
        chosen = _close_backwards(self.pending_dir_ops, chosen)
        rest: list[Op] = []
        for op, durable in zip(self.pending_dir_ops, chosen, strict=True):
            if durable:
                _apply_entry(self.durable_files, self.durable_dirs, op)
            else:
                rest.append(op)
        self.pending_dir_ops = rest


def _home(op: Op) -> str:
    """The directory whose fsync makes an entry op durable (a rename: the destination's)."""
    return _parent(op.dst if op.kind == "rename" else op.path)


def _names(op: Op) -> tuple[str, ...]:
    return (op.path, op.dst) if op.kind == "rename" else (op.path,)


def _close_backwards(ops: list[Op], chosen: list[bool]) -> list[bool]:
    """Add every earlier op sharing a name with a chosen op (an fsync commits what it needs)."""
    out = list(chosen)
    needed: set[str] = set()
    for i in range(len(ops) - 1, -1, -1):
        names = _names(ops[i])
        if out[i] or needed.intersection(names):
            out[i] = True
            needed.update(names)
    return out


def _close_forwards(ops: list[Op], coins: list[bool]) -> list[bool]:
    """Keep an op only if its coin says so and every earlier op on its names was kept."""
    out: list[bool] = []
    lost: set[str] = set()
    for op, coin in zip(ops, coins, strict=True):
        names = _names(op)
        keep = coin and not lost.intersection(names)
        if not keep:
            lost.update(names)
        out.append(keep)
    return out


def _apply_entry(files: dict[str, int], dirs: set[str], op: Op) -> None:
    """Apply a directory-entry op to a namespace; an op whose source is gone does nothing."""
    if op.kind == "create":
        files[op.path] = op.inode
    elif op.kind == "unlink":
        files.pop(op.path, None)
    elif op.kind == "rename":
        if op.path in files:
            files[op.dst] = files.pop(op.path)
    elif op.kind == "mkdir":
        dirs.add(op.path)
    elif op.kind == "rmdir":
        dirs.discard(op.path)


class RecordingMmap(mmap.mmap):
    """A mapping that journals the stores its owner reports, and its msyncs (FLT-7)."""

    recorder: RecordingFileSystem
    inode: int

    def record_store(self, start: int, length: int) -> None:
        self.recorder._record(Op("store", "", self.inode, start, bytes(self[start:start + length])))

    def flush(self, *args: int) -> None:  # type: ignore[override]
        super().flush(*args)
        self.recorder._record(Op("msync", "", self.inode))


class RecordingFileHandle(FileHandle):
    """A real handle whose writes, truncates, fsyncs and mappings are journalled."""

    fs: RecordingFileSystem
    inode: int = -1

    def pwrite(self, data: bytes | bytearray | memoryview, position: int) -> int:
        written = super().pwrite(data, position)
        if self.inode >= 0:
            self.fs._record(Op("write", "", self.inode, position, bytes(data)))
        return written

    def truncate(self, size: int) -> None:
        super().truncate(size)
        if self.inode >= 0:
            self.fs._record(Op("truncate", "", self.inode, size))

    def fsync(self) -> None:
        super().fsync()
        if self.inode >= 0:
            self.fs._record(Op("fsync", "", self.inode))

    def mmap(self, length: int, writable: bool) -> mmap.mmap:
        if self.inode < 0 or not writable:
            return super().mmap(length, writable)
        # Through the seam's constructor, so a mapping that cannot be made is the same
        # KafkaStorageError the real file system raises.
        mapping = self.new_mapping(RecordingMmap, length, writable)
        mapping.recorder = self.fs
        mapping.inode = self.inode
        return mapping


class RecordingFileSystem(FileSystem):
    """Performs every operation on the real disk under `root` AND journals it.

    Whatever is under `root` at construction is the durable starting image (a reopen after a
    materialised crash starts from a fully durable tree). Paths outside `root` pass through
    unjournalled. Spec: FLT-1..FLT-7, FLT-10.
    """

    handle_class = RecordingFileHandle

    def __init__(self, root: Path, durable_image: Path | None = None) -> None:
        """`durable_image` (optional) is the tree a power loss would leave of `root` now: then
        `root` is only the volatile (page-cache) view, and what differs is unsynced (used to
        chain a power loss after recovering from a process crash, GAP-4)."""
        self.root = Path(os.path.abspath(root))
        self._journal: list[Op] = []
        self._compacted = 0  # operations folded into the starting image by compact()
        self._next_inode = 0
        self._initial = _Disk()
        self._live = _Disk()  # the volatile namespace, kept to resolve paths to inodes
        self._cache: tuple[int, _Disk] | None = None
        # Per inode, the ordinal of the last journalled op that changed its bytes or stamp:
        # `version_of` for checkers that skip re-reading unchanged files.
        self._changed_at: dict[int, int] = {}
        self._rel_cache: dict[str | bytes, str | None] = {}
        # `version_of` answers by path, valid while `generation()` is `_versions_at`.
        self._versions: dict[str | bytes, Hashable | None] = {}
        self._versions_at = -1
        if self.root.is_dir():
            self._snapshot_initial()
            if durable_image is not None:
                self._mark_unsynced(Path(durable_image))

    # --- the journal ---

    def crash_points(self) -> int:
        """n = operations journalled so far; crash point k in [0, n] is "after k operations"."""
        return len(self._journal)

    def mark(self) -> int:
        return len(self._journal)

    def compact(self) -> None:
        """Fold the whole journal into the starting image and forget it: crash points restart
        at 0 and `mark()` returns 0. For long runs that only crash inside their last action: the
        journal (which copies every write) and each materialise stay as small as that action.
        What was unsynced stays unsynced: the folded image keeps volatile and durable apart."""
        self._compacted += len(self._journal)
        if self._cache is not None and self._cache[0] == len(self._journal):
            self._initial = self._cache[1]
        else:
            # In place: copying every file image first made each action cost O(log size).
            for op in self._journal:
                self._initial.apply(op)
        self._journal = []
        self._cache = None

    def journal(self) -> list[Op]:
        """A copy of the journal (for diagnostics and tests)."""
        return list(self._journal)

    def _record(self, op: Op) -> None:
        self._journal.append(op)
        if op.kind in _CONTENT_OPS:
            self._changed_at[op.inode] = self._compacted + len(self._journal)
        if op.kind in ("create", "rename", "unlink", "mkdir", "rmdir"):
            _apply_entry(self._live.files, self._live.dirs, op)

    def generation(self) -> int:
        """The number of operations journalled since the start (compacted ones included).
        `_record` is the only writer of the namespace and the change ordinals `version_of`
        reads, and every call appends an op, so no answer of `version_of` changes while this
        number holds."""
        return self._compacted + len(self._journal)

    def version_of(self, path: PathLike) -> Hashable | None:
        """(inode, last change) of a file under the root: every write, truncate, mapped store,
        mtime stamp and create goes through the journal, so an in-place rewrite of an old file
        changes it too; (0, -1) for a file that does not exist (inodes start at 1, and a
        create is journalled too). None outside the root, where nothing is journalled.

        Checkers ask for the same files several times a step: answers are kept until the next
        journalled operation (`generation`)."""
        generation = self._compacted + len(self._journal)
        if generation != self._versions_at:
            self._versions.clear()
            self._versions_at = generation
        key = os.fspath(path)
        version = self._versions.get(key, _UNASKED)
        if version is _UNASKED:
            version = self._versions[key] = self._version_now(path)
        return version

    def _version_now(self, path: PathLike) -> Hashable | None:
        rel = self._rel(path)
        if rel is None:
            return None
        inode = self._live.files.get(rel, 0)
        return inode, self._changed_at.get(inode, -1)

    def _rel(self, path: PathLike) -> str | None:
        key = os.fspath(path)
        if key in self._rel_cache:
            return self._rel_cache[key]
        if len(self._rel_cache) >= _REL_CACHE_SIZE:  # a bounded memo: paths repeat per step
            self._rel_cache.clear()
        rel = self._rel_cache[key] = self._relative(path)
        return rel

    def _relative(self, path: PathLike) -> str | None:
        absolute = os.path.abspath(path)
        root = str(self.root)
        if absolute == root:
            return ""
        if absolute.startswith(root + os.sep):
            return absolute[len(root) + 1:].replace(os.sep, "/")
        return None

    def _new_inode(self) -> int:
        self._next_inode += 1
        return self._next_inode

    def _snapshot_initial(self) -> None:
        disk = self._initial
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel = self._rel(dirpath)
            assert rel is not None
            for name in dirnames:
                path = f"{rel}/{name}" if rel else name
                disk.dirs.add(path)
                disk.durable_dirs.add(path)
            for name in filenames:
                path = f"{rel}/{name}" if rel else name
                data = _read_image(Path(dirpath, name))
                inode = self._new_inode()
                disk.inodes[inode] = _Inode(data, data.copy(),
                                            mtime_ms=os.stat(Path(dirpath, name)).st_mtime_ns
                                            // 1_000_000)
                disk.files[path] = inode
                disk.durable_files[path] = inode
        self._live = _Disk(files=dict(disk.files), dirs=set(disk.dirs))

    def _mark_unsynced(self, durable_root: Path) -> None:
        """Make the initial disk's durable image `durable_root`: content that differs is one
        pending rewrite, entries that differ are pending creates or unlinks (FLT-3, FLT-5)."""
        disk = self._initial
        durable_files: dict[str, SparseImage] = {}
        durable_dirs = {""}
        for dirpath, dirnames, filenames in os.walk(durable_root):
            rel = os.path.relpath(dirpath, durable_root).replace(os.sep, "/")
            rel = "" if rel == "." else rel
            durable_dirs.update(f"{rel}/{d}" if rel else d for d in dirnames)
            for name in filenames:
                durable_files[f"{rel}/{name}" if rel else name] = _read_image(Path(dirpath, name))
        disk.durable_dirs = durable_dirs & disk.dirs
        disk.pending_dir_ops = [Op("mkdir", d) for d in sorted(disk.dirs - durable_dirs)]
        disk.durable_files = {}
        # Atomically written files first: their pending `X.tmp -> X` rename happened before the
        # crash, so it precedes any later entry op on `X.tmp` (e.g. a stale `.tmp` planted after
        # it); else a power loss could rename that file's empty image over the checkpoint.
        for path, inode in sorted(disk.files.items(), key=lambda e: not _written_atomically(e[0])):
            node = disk.inodes[inode]
            if _written_atomically(path):
                # Its data was fsynced before the rename (FMT-36): only the name may be pending.
                node.durable = node.volatile.copy()
                if path not in durable_files:
                    disk.pending_dir_ops.append(Op("create", path, inode))
                elif durable_files[path] != node.volatile:
                    self._pending_replace(path, inode, durable_files[path])
                else:
                    disk.durable_files[path] = inode
                continue
            # A name an atomic write's pending rename claimed (`X.tmp`, `_pending_replace`) is
            # the new version's there; a file under it now (a stale `.tmp` planted after the
            # crash) was created later: a pending create, not that durable file.
            if path in durable_files and path not in disk.durable_files:
                node.durable = durable_files[path].copy()
                disk.durable_files[path] = inode
            else:
                node.durable = SparseImage()
                disk.pending_dir_ops.append(Op("create", path, inode))
            if node.durable != node.volatile:
                node.pending = [Op("truncate", "", inode, node.volatile.size),
                                Op("write", "", inode, 0, bytes(node.volatile.data))]
        for path in sorted(set(durable_files) - set(disk.files)):
            inode = self._new_inode()
            disk.inodes[inode] = _Inode(SparseImage(), durable_files[path].copy())
            disk.durable_files[path] = inode
            disk.pending_dir_ops.append(Op("unlink", path))

    def _pending_replace(self, path: str, inode: int, old: SparseImage) -> None:
        """An atomically written file (FMT-36) whose new version is not durable yet: the
        durable disk has the old file plus the new one under `.tmp`, and the rename is pending."""
        disk = self._initial
        disk.inodes[inode].durable = disk.inodes[inode].volatile.copy()
        previous = self._new_inode()
        disk.inodes[previous] = _Inode(SparseImage(), old.copy())
        disk.durable_files[path] = previous
        disk.durable_files[path + ".tmp"] = inode
        disk.pending_dir_ops.append(Op("rename", path + ".tmp", dst=path))

    # --- journalled operations ---

    def open_file(self, path: PathLike, create: bool = False, writable: bool = True) -> FileHandle:
        rel = self._rel(path)
        existed = rel is None or rel in self._live.files
        handle = super().open_file(path, create, writable)
        assert isinstance(handle, RecordingFileHandle)
        if rel is not None:
            if not existed:
                self._record(Op("create", rel, self._new_inode()))
            handle.inode = self._live.files.get(rel, -1)
        return handle

    def mkdir(self, path: PathLike, parents: bool = True) -> None:
        missing: list[str] = []
        p = Path(os.path.abspath(path))
        while not p.exists() and self._rel(p):
            missing.append(str(p))
            p = p.parent
        super().mkdir(path, parents)
        for created in reversed(missing):
            rel = self._rel(created)
            if rel:
                self._record(Op("mkdir", rel))

    def rename(self, src: PathLike, dst: PathLike) -> None:
        super().rename(src, dst)
        rs, rd = self._rel(src), self._rel(dst)
        if rs is not None and rd is not None:
            self._record(Op("rename", rs, dst=rd))

    def delete(self, path: PathLike) -> None:
        super().delete(path)
        self._record_unlink(path)

    def delete_if_exists(self, path: PathLike) -> bool:
        existed = super().delete_if_exists(path)
        if existed:
            self._record_unlink(path)
        return existed

    def _record_unlink(self, path: PathLike) -> None:
        rel = self._rel(path)
        if rel is not None:
            self._record(Op("unlink", rel))

    def rmdir(self, path: PathLike) -> None:
        super().rmdir(path)
        rel = self._rel(path)
        if rel is not None:
            self._record(Op("rmdir", rel))

    def fsync_dir(self, path: PathLike) -> None:
        super().fsync_dir(path)
        rel = self._rel(path)
        if rel is not None:
            self._record(Op("fsync_dir", rel))

    def set_mtime_ms(self, path: PathLike, ms: int) -> None:
        """A stamp right after the file's create is its creation time: an OS stamps a new file
        atomically with its creation, so it joins the create (no crash point between them)."""
        super().set_mtime_ms(path, ms)
        rel = self._rel(path)
        if rel is not None and rel in self._live.files:
            inode = self._live.files[rel]
            last = self._journal[-1] if self._journal else None
            if last is not None and last.kind == "create" and last.inode == inode:
                self._journal[-1] = last._replace(created_mtime_ms=ms)
            else:
                self._record(Op("mtime", rel, inode, ms))

    # --- materialising a crash ---

    def _disk_at(self, crash_point: int) -> _Disk:
        """The in-memory disk after the first `crash_point` ops (cached for ascending sweeps)."""
        if not 0 <= crash_point <= len(self._journal):
            raise ValueError(f"crash point {crash_point} outside [0, {len(self._journal)}]")
        if self._cache is not None and self._cache[0] <= crash_point:
            at, disk = self._cache
        else:
            at, disk = 0, self._initial.copy()
        for op in self._journal[at:crash_point]:
            disk.apply(op)
        self._cache = (crash_point, disk)
        return disk

    def crash_image(self, crash_point: int, fault: FaultModel, seed: int) -> CrashImage:
        """The tree a crash after op `crash_point` leaves under `fault`, in memory; deterministic
        in (crash_point, fault, seed). Spec: FLT-1..FLT-7."""
        fault = FaultModel(fault)
        disk = self._disk_at(crash_point)
        # Seeded by the absolute operation count, so compact() renumbers without reshuffling.
        rng = random.Random(f"{seed}:{crash_point + self._compacted}:{fault.value}")
        contents: dict[int, SparseImage]
        if fault is FaultModel.PROCESS_CRASH:
            files, dirs = disk.files, disk.dirs
            contents = {i: disk.inodes[i].volatile for i in set(files.values())}
        else:
            files, dirs = dict(disk.durable_files), set(disk.durable_dirs)
            coins = [rng.random() < 0.5 for _ in disk.pending_dir_ops]
            kept = _close_forwards(disk.pending_dir_ops, coins)
            for op, keep in zip(disk.pending_dir_ops, kept, strict=True):
                if keep:
                    _apply_entry(files, dirs, op)
            # Every file's choices are drawn, reachable or not, in inode order: the images of
            # recorded traces stay what they were.
            contents = {}
            for i in sorted(set(files.values())):
                node = disk.inodes[i]
                contents[i] = power_loss_image(node.durable, node.volatile, node.pending, fault,
                                               rng)
        kept_dirs, kept_files = reachable_tree(dirs, files)
        return CrashImage(tuple(kept_dirs), tuple(
            (path, FileImage(bytes(contents[files[path]].data), contents[files[path]].size,
                             disk.inodes[files[path]].mtime_ms))
            for path in kept_files))

    def materialise(self, target_root: Path, crash_point: int, fault: FaultModel,
                    seed: int) -> None:
        """Write at `target_root` (empty or missing) the tree a crash after op `crash_point`
        leaves under `fault`; deterministic in (crash_point, fault, seed). Spec: FLT-1..FLT-7."""
        self.crash_image(crash_point, fault, seed).write(Path(target_root))
