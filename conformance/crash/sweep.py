"""Crash sweeps: every crash point of the last action, under every fault model, several seeds.

A crash step of the state machine crashes once (one point, fault model, seed). With a sweep
(`--crash-sweep`, the default of `kafkalog check` and `kafkalog campaign`) it first loads the
image of every (point, fault, seed) of `sweep_plan` and checks each against the model's set
(crash_steps.py `_sweep`). Three things make a point cheap:

- the image is built in memory (`RecordingFileSystem.crash_image`) and hashed; a load is
  deterministic in the tree (same config, same clock), so each distinct digest is written and
  loaded once and its outcome reused by every point that leaves the same tree (a power loss
  leaves the durable image at most points of an action). Every (point, fault, seed) counts as
  explored; the distinct images are counted apart;
- the tree is written to a scratch directory on tmpfs (`impl_sut.scratch_dir`: real files,
  real opens and fsyncs, no disk latency), reused from image to image;
- the load runs on a plain file system that only remembers its handles (no journal, no
  snapshot of the tree it opens).

Idempotence (KL-CRASH-7): each distinct image, once loaded, is crashed again right after the
load and loaded again; the second load must recover the first load's state. The re-crash is a
process crash (the tree exactly as the load left it, descriptors closed, nothing flushed): it
needs no second image and costs one more load per distinct image. A power loss right after the
load is checked by the live crash path instead (ImplSut.crash keeps the durable image apart, so
a later power loss sees only what the load fsynced, GAP-4).

Crash inside a load (KL-CRASH-14, opt-in: `Sweeper.in_load`, `kafkalog check --crash-in-load`):
each distinct image whose load succeeded is loaded once more on a recording file system, and
every crash point of that load's journal under `IN_LOAD_SEEDS` gives an image that must load to
the same state (`idempotence_view`). Verdicts are memoised by digest and shared by a session's
examples; about 430 points per distinct image, ~80x the sweep's CPU
(benchmarks/crash_sweep_bench.py --in-load).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from kafkalog.conformance.check.deadline import check_deadline
from kafkalog.conformance.check.scratch import new_scratch, remove_scratch
from kafkalog.conformance.check.view_checks import first_difference
from kafkalog.conformance.crash.crash_image import CrashImage, FaultModel
from kafkalog.conformance.crash.fault_fs import RecordingFileSystem
from kafkalog.impl.cleaner.checkpoint import CleanerCheckpoint
from kafkalog.impl.cleaner.config import is_compacted
from kafkalog.impl.fs.file_system import FileHandle, FileSystem, PathLike
from kafkalog.impl.load.log_dir import LogDir, TopicPartition
from kafkalog.impl.log.log import Log
from kafkalog.impl.time import MockTime
from kafkalog.model import values as v
from kafkalog.model.errors import IllegalArgumentError

#: Seeds per fault model in a sweep. A process crash keeps the page cache: its image does not
#: depend on the seed. A plain power loss draws only which un-fsynced directory operations
#: survive; a prefix or torn power loss also draws what each file keeps, so it gets more.
SWEEP_SEEDS: dict[str, int] = {
    FaultModel.PROCESS_CRASH.value: 1,
    FaultModel.POWER_LOSS.value: 2,
    FaultModel.POWER_LOSS_PREFIX.value: 4,
    FaultModel.POWER_LOSS_TORN.value: 4,
}
#: Seeds per fault model at each crash point inside a load (KL-CRASH-14, `--crash-in-load`).
IN_LOAD_SEEDS: dict[str, int] = {
    FaultModel.PROCESS_CRASH.value: 1,
    FaultModel.POWER_LOSS.value: 2,
    FaultModel.POWER_LOSS_PREFIX.value: 2,
    FaultModel.POWER_LOSS_TORN.value: 2,
}
_SEED_SPACE = 1 << 16  # machine.CRASH_SEEDS: a derived seed stays a seed the machine could draw
_MEMO_LIMIT = 4096  # loads remembered per implementation (cleared, not evicted, past it)


class InLoadFailure(NamedTuple):
    """KL-CRASH-14: a crash inside the load of an image whose own load succeeded, after
    `point` of that load's journalled operations under (`fault`, `seed`), whose reload failed
    or recovered another state than the uninterrupted load (`difference` says how, `where`
    names the first field that differs, or `load` when the reload failed)."""

    point: int
    fault: str
    seed: int
    difference: str
    where: str = "load"
    code: str = "ok"  # the reload's error type when it failed (a trace's impl code)


class SweepPoint(NamedTuple):
    """One explored (point, fault, seed): operations lost, the image's digest, the state the
    load recovered (without index entries) or the load's error, whether a crash right after
    the load recovers the same state (None: not checked, e.g. the first load failed), and the
    first crash inside the load that does not (KL-CRASH-14; None: none, or not checked)."""

    ops_lost: int
    fault: str
    seed: int
    image: bytes
    recovered: v.LogStateView | str
    idempotent: bool | None = None
    in_load: InLoadFailure | None = None


class _Loaded(NamedTuple):
    """A memoised load of one image: its outcome and the idempotence verdicts."""

    recovered: v.LogStateView | str
    idempotent: bool | None
    in_load: InLoadFailure | None = None


def idempotence_view(state: v.LogStateView) -> v.LogStateView:
    """What must not change between a load and a load after a crash right after it (KL-CRASH-7,
    CRP-12: the batches, offsets, segments and epoch cache; here the whole view) minus producer
    state and pending deletions.

    The producer table and its `.snapshot` files: an unclean load rebuilds the table from the
    snapshots it finds and rewrites them, and the model's own crash set (KL-CRASH-11) gives the
    second load another table too (and may drop the snapshot a clean load kept at the log
    start): CRP-12 does not promise it, so neither do we.

    Pending deletions: segments a load drops (RCV-7, KL-CRASH-6) are renamed `.deleted` with a
    timer; a crash loses the timer (FLT-1) and the next load removes every `.deleted` file at
    once (RCV-3), so pending 1 then 0 is the same log. They are files already out
    of the log, not its state.

    The last segment's index entries when the recovery point is the LEO, as after a clean load
    (RCV-8). That load keeps the indexes the live log wrote (the final time-index entry each
    close appended, SEG-15's `close`; an index interval counted from the reopen, not from the
    segment start); it consumed the marker, so the next load is unclean and rebuilds the
    segment holding the recovery point (RCV-6: `values(rp, MAX)` starts at its floor, the last
    segment) from its batches. Kafka does the same, the model predicts both (KL-CRASH-5), the
    rebuild is the segment's own bytes', and CRP-12 promises batches, offsets and
    epochs, not index entries. Every other segment's indexes are compared."""
    narrowed = replace(state, producers=None, producer_snapshots=None,
                       producer_snapshot_tables=None, pending_deletions=())
    if state.recovery_point != state.log_end_offset or not state.segments:
        return narrowed
    *kept, last = state.segments
    return replace(narrowed, segments=(*kept, replace(last, offset_index=None, time_index=None)))


def same_after_reload(first: v.LogStateView | str, second: v.LogStateView | str) -> bool:
    """Whether `second`, a load after a crash right after (or inside) the load that gave
    `first`, recovered the same state (KL-CRASH-7, KL-CRASH-14): equal `idempotence_view`s, or
    equal but for the last stable offset where the producer tables differ. The LSO is the first
    unstable offset of the table's ongoing transactions, bounded by the HW (TXN-8): a table the
    promise leaves free (a load may keep a producer whose batches retention deleted, the next
    drop it, KL-ALLOW-9) moves it; with equal tables the LSO must be equal."""
    if isinstance(first, str) or isinstance(second, str):
        return False
    ours, theirs = idempotence_view(first), idempotence_view(second)
    if ours == theirs:
        return True
    return first.producers != second.producers and (
        replace(ours, last_stable_offset=None) == replace(theirs, last_stable_offset=None))


def sweep_plan(fault: str, seed: int) -> list[tuple[str, int]]:
    """(fault, seed) pairs a sweep explores at every point: the drawn pair first (so a sweep
    always covers the crash step's own image), then every fault model with its seeds."""
    plan = [(fault, seed)]
    for model, count in SWEEP_SEEDS.items():
        plan.extend((model, (seed + k) % _SEED_SPACE) for k in range(count)
                    if (model, (seed + k) % _SEED_SPACE) != (fault, seed))
    return plan


class HandleTracking:
    """A file-system mixin that remembers the handles it opens, so a log can be dropped by
    closing descriptors only: no flush, trim or checkpoint runs (a crash)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handles: list[FileHandle] = []

    def open_file(self, path: PathLike, create: bool = False, writable: bool = True) -> FileHandle:
        handle = super().open_file(path, create, writable)  # type: ignore[misc]
        if len(self.handles) > 512:  # a long-lived log: forget the handles it closed itself
            self.handles = [h for h in self.handles if not h.closed]
        self.handles.append(handle)
        return handle

    def close_all(self) -> None:
        for handle in self.handles:
            handle.close()
        self.handles = []


class _TrackingFileSystem(HandleTracking, FileSystem):
    """The real file system, remembering its handles."""


class Sweeper:
    """Loads crash images of one implementation's recording file system, memoised by digest."""

    #: False loads every (point, fault, seed) afresh: the same-run baseline of
    #: benchmarks/crash_sweep_bench.py (outcomes are the same, only slower).
    memo = True
    #: False skips the second load of each distinct image (KL-CRASH-7); the benchmark's
    #: baseline for the cost of the idempotence check.
    idempotence = True

    def __init__(self, config: v.LogConfig, partition: TopicPartition,
                 scratch_parent: str | None, in_load: bool = False) -> None:
        self.config = config
        self.partition = partition
        self.scratch_parent = scratch_parent
        #: KL-CRASH-14 (`--crash-in-load`): also crash inside the load of each distinct image.
        self.in_load = in_load
        self.loaded: dict[tuple[bytes, int], _Loaded] = {}
        self.loads = 0  # images actually written and loaded (the rest were memoised)
        self.reloads = 0  # second loads after a crash right after the first (idempotence)
        self.in_load_images = 0  # distinct images whose load was crashed inside (KL-CRASH-14)
        self.in_load_points = 0  # (point, fault, seed) explored inside those loads
        self.in_load_loads = 0  # distinct images of crashes inside a load actually loaded
        self._in_load_seen: dict[tuple[bytes, int], v.LogStateView | str] = {}
        #: KL-CRASH-14 verdicts by (image digest, clock), shared by every example of a session
        #: (set by crash_steps.py): one implementation and config, so the same image loads alike;
        #: images recur across examples (the empty log, the first appends). Never shared across
        #: implementations (a broken variant loads another way).
        self.in_load_verdicts: dict[tuple[bytes, int], InLoadFailure | None] = {}
        #: Set by crash_steps.py when Kafka's loader also loads the images (kafka_loader.py):
        #: every distinct image this sweeper loads is kept there by digest, with its clock.
        self.keep_images: dict[bytes, tuple[CrashImage, int]] | None = None
        #: The run's time limit (crash_steps.py): a sweep raises TimeUp between crash points
        #: once it has passed, so one crash step cannot outlast the run's hard limit.
        self.deadline: float | None = None

    def sweep(self, fs: RecordingFileSystem, first: int, plan: Sequence[tuple[str, int]],
              now_ms: int) -> list[SweepPoint]:
        """Every crash point in [first, end of journal] x `plan`, in ascending point order (the
        recorder's in-memory disk only moves forward)."""
        end = fs.crash_points()
        if len(self.loaded) > _MEMO_LIMIT:
            self.loaded.clear()
        if len(self._in_load_seen) > _MEMO_LIMIT:
            self._in_load_seen.clear()
        found: list[SweepPoint] = []
        with self._scratch() as scratch, self._scratch() as inner:
            for point in range(first, end + 1):
                check_deadline(self.deadline)
                for fault, seed in plan:
                    image = fs.crash_image(point, FaultModel(fault), seed)
                    digest = image.digest()
                    key = (digest, now_ms)
                    if key not in self.loaded or not self.memo:
                        image.write(scratch)
                        done = self._load_twice(scratch, now_ms)
                        _empty(scratch)
                        if self.in_load and not isinstance(done.recovered, str):
                            done = done._replace(in_load=self._in_load_verdict(
                                image, key, scratch, inner, done.recovered))
                        self.loaded[key] = done
                        if self.keep_images is not None:
                            self.keep_images[digest] = (image, now_ms)
                    done = self.loaded[key]
                    found.append(SweepPoint(end - point, fault, seed, digest, done.recovered,
                                            done.idempotent, done.in_load))
        return found

    def _in_load_verdict(self, image: CrashImage, key: tuple[bytes, int], scratch: Path,
                         inner: Path, first: v.LogStateView) -> InLoadFailure | None:
        """`crash_in_load` of `image`, once per (digest, clock) in the shared verdicts."""
        if key not in self.in_load_verdicts:
            if len(self.in_load_verdicts) > _MEMO_LIMIT:
                self.in_load_verdicts.clear()
            image.write(scratch)
            self.in_load_verdicts[key] = self.crash_in_load(scratch, inner, first, key[1])
            _empty(scratch)
        return self.in_load_verdicts[key]

    def crash_in_load(self, root: Path, inner: Path, first: v.LogStateView,
                      now_ms: int) -> InLoadFailure | None:
        """KL-CRASH-14: load the image at `root` (taken as fully durable) on a recording file
        system, then crash after every operation of that load under every (fault, seed) of
        `IN_LOAD_SEEDS`; each crash's image, loaded in `inner`, must recover the state of the
        uninterrupted load `first` (`idempotence_view`). The first crash that does not, or None.
        Images are memoised by digest like the sweep's (most points of a load that only reads
        leave the same tree)."""
        self.in_load_images += 1
        recorder = _TrackingRecordingFileSystem(root)
        try:
            log_dir = LogDir.open(recorder, root, self.config, MockTime(now_ms))
            state: v.LogStateView | str = loaded_view(log_dir.log(self.partition), recorder)
        except Exception as error:  # noqa: BLE001 - the same load failing on a recorder
            state = f"{type(error).__name__}: {error}"
        finally:
            recorder.close_all()
        if not same_after_reload(first, state):
            # Point 0 (nothing of the load done) reloads the image itself: a replay shows it.
            return InLoadFailure(0, FaultModel.PROCESS_CRASH.value, 0,
                                 *_describe(first, state, "the recorded load"))
        for point in range(recorder.crash_points() + 1):
            check_deadline(self.deadline)
            for fault, count in IN_LOAD_SEEDS.items():
                for seed in range(count):
                    self.in_load_points += 1
                    image = recorder.crash_image(point, FaultModel(fault), seed)
                    key = (image.digest(), now_ms)
                    if key not in self._in_load_seen:
                        image.write(inner)
                        self._in_load_seen[key] = self._load(inner, now_ms)
                        self.in_load_loads += 1
                        _empty(inner)
                    again = self._in_load_seen[key]
                    if not same_after_reload(first, again):
                        return InLoadFailure(point, fault, seed,
                                             *_describe(first, again, "the load after it"))
        return None

    def _load_twice(self, root: Path, now_ms: int) -> _Loaded:
        """Load the image at `root`; then (KL-CRASH-7) crash right after that load (a process
        crash: the tree as the load left it) and load again: the same state, or not idempotent."""
        first = self._load(root, now_ms)
        self.loads += 1
        if isinstance(first, str) or not self.idempotence:
            return _Loaded(first, None)
        second = self._load(root, now_ms)
        self.reloads += 1
        same = same_after_reload(first, second)
        return _Loaded(first, same)

    def _scratch(self) -> _Scratch:
        return _Scratch(self.scratch_parent)

    def _load(self, root: Path, now_ms: int) -> v.LogStateView | str:
        fs = _TrackingFileSystem()
        try:
            log_dir = LogDir.open(fs, root, self.config, MockTime(now_ms))
            return loaded_view(log_dir.log(self.partition), fs)
        except Exception as error:  # a load that fails is a finding, not a crash of the sweep
            return f"{type(error).__name__}: {error}"
        finally:
            fs.close_all()


def loaded_view(log: Log, fs: FileSystem) -> v.LogStateView:
    """`log.state()` with its cleaner checkpoint entry (KL-CLEAN-11, KL-CRASH-15), as the live
    ImplSut.state() reports it: a compacted log's view carries the entry (-1: none)."""
    view = log.state()
    if not is_compacted(log.config):
        return view
    entry = CleanerCheckpoint(fs, log.dir).read()
    return replace(view, cleaner_checkpoint=-1 if entry is None else entry)


def _describe(first: v.LogStateView, second: v.LogStateView | str,
              what: str) -> tuple[str, str, str]:
    """How `second` (a load's state or error) differs from the uninterrupted load's `first`:
    (message, field, the reload's error type or `ok`)."""
    if isinstance(second, str):
        return (f"a crash inside the load leaves an image whose load fails (KL-CRASH-14): "
                f"{what} failed: {second}"), "load", second.split(":", 1)[0]
    found = in_load_difference(first, second)
    return (found[1], found[0], "ok") if found is not None else ("no difference", "-", "ok")


def in_load_difference(first: v.LogStateView,
                       second: v.LogStateView) -> tuple[str, str] | None:
    """KL-CRASH-14: where the load after a crash inside a load differs from the uninterrupted
    load (`idempotence_view`), as (field path, message), or None when it does not."""
    if same_after_reload(first, second):
        return None
    where = first_difference(idempotence_view(first), idempotence_view(second))
    return where[0], (f"a crash inside the load recovers another state than the uninterrupted "
                      f"load (KL-CRASH-14); first differs at {where[0]}: uninterrupted "
                      f"{where[1]!r} | after the crash {where[2]!r}")


def format_in_load(failure: InLoadFailure) -> str:
    """The crash step's `in_load` field (specs/trace-format.md): "point:fault:seed"."""
    return f"{failure.point}:{failure.fault}:{failure.seed}"


def parse_in_load(spec: str) -> tuple[int, str, int]:
    """`format_in_load` read back; a malformed field is a typed error naming it."""
    parts = spec.split(":")
    try:
        point, fault, seed = int(parts[0]), FaultModel(parts[1]).value, int(parts[2])
    except (ValueError, IndexError):
        raise IllegalArgumentError(
            f"crash in_load {spec!r}: expected point:fault:seed (specs/trace-format.md)"
        ) from None
    if len(parts) != 3:
        raise IllegalArgumentError(f"crash in_load {spec!r}: expected point:fault:seed")
    return point, fault, seed


class _TrackingRecordingFileSystem(HandleTracking, RecordingFileSystem):
    """The recording file system, remembering its handles."""


class _Scratch:
    """One scratch directory for a whole sweep, removed at the end."""

    def __init__(self, parent: str | None) -> None:
        self.path = new_scratch("kafkalog-sweep-", parent)

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        remove_scratch(self.path)


def _empty(directory: Path) -> None:
    """Remove what a load left in the scratch directory, keeping the directory itself."""
    for entry in list(directory.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
