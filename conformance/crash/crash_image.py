"""A crash image: the tree a crash leaves, in memory, before it is written to a directory.

`RecordingFileSystem.crash_image` (conformance/crash/fault_fs.py) builds one from its in-memory
disk; this
module holds the per-file fault models (what a power loss keeps of a file's unsynced writes) and
the two things done with an image: `digest()`, a content hash of the whole tree, and `write()`,
which creates it as real files. Loading a directory is deterministic in its contents, names and
mtimes (the clock and the config being fixed), so a crash sweep loads each distinct digest once
and reuses the outcome for every (point, fault, seed) that leaves the same tree.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from kafkalog.conformance.crash.sparse_image import SparseImage

PAGE = 4096  # FLT-7: the unit of write-back for the torn model
SECTOR = 512  # FLT-10 L-prefix: granularity of a partially persisted write


class FaultModel(StrEnum):
    """What a crash keeps (FLT-1, FLT-10)."""

    PROCESS_CRASH = "process_crash"
    POWER_LOSS = "power_loss"
    POWER_LOSS_PREFIX = "power_loss_prefix"
    POWER_LOSS_TORN = "power_loss_torn"


class DataOp(Protocol):
    """A journalled write, mmap store or truncate (fault_fs.Op)."""

    @property
    def kind(self) -> str: ...
    @property
    def offset(self) -> int: ...
    @property
    def data(self) -> bytes: ...


def apply_data(image: SparseImage, op: DataOp) -> None:
    """Apply a write/store/truncate to a file image (writes past the end extend with zeros)."""
    if op.kind == "truncate":
        image.truncate(op.offset)
    else:
        image.write(op.offset, op.data)


@dataclass(frozen=True)
class FileImage:
    """One file of a crash image: its written prefix, size (the rest is a hole) and mtime."""

    data: bytes
    size: int
    mtime_ms: int | None


@dataclass(frozen=True)
class CrashImage:
    """The directories and files a crash leaves (paths relative to the root, '' the root).

    Only reachable entries are kept: a file or directory whose parent did not survive is gone
    with it (CBUG-19), so the digest names exactly what `write` creates.
    """

    dirs: tuple[str, ...]
    files: tuple[tuple[str, FileImage], ...]

    def digest(self) -> bytes:
        """A content hash of the tree: equal digests load identically (same clock, config)."""
        h = hashlib.blake2b(digest_size=20)
        for d in self.dirs:
            h.update(b"d\0" + d.encode() + b"\0")
        for path, image in self.files:
            data = image.data.rstrip(b"\0")  # a zero tail and a hole are the same file
            h.update(f"f\0{path}\0{image.size}\0{image.mtime_ms}\0{len(data)}\0".encode())
            h.update(data)
        return h.digest()

    def write(self, target: Path) -> None:
        """Create the tree under `target` (made if missing; must be empty) as real files."""
        target.mkdir(parents=True, exist_ok=True)
        if any(target.iterdir()):
            raise ValueError(f"materialise target {target} is not empty")
        for d in self.dirs:
            (target / d).mkdir(exist_ok=True)
        for path, image in self.files:
            out = target / path
            out.write_bytes(image.data)
            if image.size > len(image.data):
                os.truncate(out, image.size)  # the zero tail stays a hole
            if image.mtime_ms is not None:
                ns = image.mtime_ms * 1_000_000
                os.utime(out, ns=(ns, ns))


def reachable_tree(dirs: set[str], files: dict[str, int]) -> tuple[list[str], list[str]]:
    """The directories whose ancestors all exist and the files inside them, sorted."""

    def reachable(path: str) -> bool:
        while path:
            if path not in dirs:
                return False
            path = path.rpartition("/")[0]
        return True

    kept_dirs = sorted(d for d in dirs if d and reachable(d))
    kept_files = sorted(p for p in files if reachable(p.rpartition("/")[0]))
    return kept_dirs, kept_files


def power_loss_image(durable: SparseImage, volatile: SparseImage, pending: Sequence[DataOp],
                     fault: FaultModel, rng: random.Random) -> SparseImage:
    """One file's content after a power loss (FLT-3, FLT-4, FLT-7). May return `durable`
    itself (never mutate the result)."""
    if not pending or fault is FaultModel.POWER_LOSS:
        return durable
    if fault is FaultModel.POWER_LOSS_PREFIX:
        image = durable.copy()
        kept = rng.randint(0, len(pending))
        for op in pending[:kept]:
            apply_data(image, op)
        if kept < len(pending) and pending[kept].kind in ("write", "store"):
            partial = pending[kept]
            cut = rng.randint(0, len(partial.data) // SECTOR) * SECTOR
            if cut:
                image.write(partial.offset, partial.data[:cut])
        return image
    return torn_image(durable, volatile, rng)


def torn_image(old: SparseImage, new: SparseImage, rng: random.Random) -> SparseImage:
    """Size old or new; each 4 KiB page that changed is old, new, zeros or garbage (only the
    bytes that differ are replaced: synced bytes sharing the page survive, FLT-2). Pages past
    both written prefixes are zeros on both sides, so they are never visited."""
    size = rng.choice((old.size, new.size))
    written = min(size, max(len(old.data), len(new.data)))
    out = bytearray(written)
    for start in range(0, written, PAGE):
        end = min(written, start + PAGE)
        o = old.page(start, end)
        n = new.page(start, end)
        if o == n:
            out[start:end] = o
            continue
        choice = rng.randrange(4)
        if choice == 0:
            out[start:end] = n
        elif choice == 1:
            out[start:end] = o
        else:
            fill = bytes(end - start) if choice == 2 else rng.randbytes(end - start)
            out[start:end] = bytes(f if a != b else a for a, b, f in zip(o, n, fill, strict=True))
    return SparseImage(out, size)
