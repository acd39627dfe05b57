"""The in-process adapter: `kafkalog.impl` on a temporary log directory with a `MockTime` clock.

The log lives in a real Kafka `log.dirs` layout (`LogDir`, partition `conformance-0`), so clean
close and reopen go through the same checkpoints and clean-shutdown marker a broker uses. Values
are converted with the implementation's own codec: records become one v2 batch with
`MemoryRecords.with_records` (a producer batch: base offset 0, epoch -1, CreateTime; the log
stamps offsets, epoch and LogAppendTime), follower batches use `from_batch_specs`, and a read's
zero-copy slice is decoded back into `BatchView`s.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from kafkalog.conformance.adapter.json_codec import FEATURES
from kafkalog.conformance.check.impl_values import (  # batch_view: conformance/broker/sut.py
    batch_view,  # noqa: F401
    fetch_data_value,
)
from kafkalog.conformance.check.observe import (
    IndexMemo,
    SnapshotMemo,
    with_indexes,
    with_snapshot_tables,
)
from kafkalog.conformance.check.scratch import new_scratch, remove_scratch, scratch_dir
from kafkalog.conformance.check.sut import UnsupportedError
from kafkalog.conformance.crash.fault_fs import FaultModel, RecordingFileSystem
from kafkalog.conformance.crash.sweep import (
    HandleTracking,
    InLoadFailure,
    Sweeper,
    SweepPoint,
    in_load_difference,
    loaded_view,
    parse_in_load,
)
from kafkalog.impl.cleaner.log_cleaner import LogCleaner
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import LogDir, TopicPartition
from kafkalog.impl.log.log import Log
from kafkalog.impl.producer.producer_state_manager import AppendOrigin
from kafkalog.impl.records.memory_records import MemoryRecords
from kafkalog.impl.time import MockTime
from kafkalog.impl.verify.index import TRUNCATION_REMNANT
from kafkalog.impl.verify.memo import SegmentMemo
from kafkalog.impl.verify.verifier import VerifyReport, verify_log_dir
from kafkalog.model import values as v
from kafkalog.model.errors import KafkalogError
from kafkalog.model.versions import index_entry_per_batch

TOPIC_PARTITION = TopicPartition("conformance", 0)


class CrashableFileSystem(HandleTracking, RecordingFileSystem):
    """The recording file system (conformance/crash/fault_fs.py) that also remembers its open
    handles, so a
    crash can drop the log by closing descriptors only: no flush, trim or checkpoint runs."""


def _new_root() -> Path:
    return new_scratch()


class ImplSut:
    """kafkalog.impl behind the Sut protocol, on a recording file system so it can crash."""

    name = "kafkalog-impl"
    features = frozenset(FEATURES)
    crashes_in_load = True  # `crash` takes `in_load` (KL-CRASH-14, sut.execute)

    def __init__(self, config: v.LogConfig, now_ms: int = 0, log_start_offset: int = 0,
                 fs: FileSystem | None = None) -> None:
        self.config = config
        self.time = MockTime(now_ms)
        self.root = _new_root()
        self.fs = fs or CrashableFileSystem(self.root)
        # Reused observations of files that did not change (their fs.version_of held).
        self.verify_memo, self.snapshot_memo = SegmentMemo(), SnapshotMemo()
        self.index_memo = IndexMemo()
        self.action_mark = 0
        self.abandoned = False
        self.partition_dir = self.root / str(TOPIC_PARTITION)
        try:
            self.log_dir = LogDir.open(self.fs, self.root, config, self.time)
            self.fs.mkdir(self.partition_dir)
            self.log = Log.open(
                self.fs, self.partition_dir, config, self.time,
                log_start_offset=log_start_offset, recovery_point=log_start_offset,
                had_clean_shutdown=True,
            )
        except BaseException:
            remove_scratch(self.root)  # nothing else will ever close it
            raise
        self.log_dir.logs[TOPIC_PARTITION] = self.log
        # As LogDir installs it on every log it opens: the rp checkpoint after a truncation.
        self.log.on_truncated = self.log_dir.checkpoint_recovery_points
        if isinstance(self.fs, RecordingFileSystem):
            # The starting log is durable (a broker fsyncs a new partition's parent, GAP-10);
            # crashes test what the actions do from here on.
            self.fs.fsync_dir(self.root)
            self.fs.fsync_dir(self.partition_dir)
            self.action_mark = self.fs.mark()
        self.closed_dir_findings: list[str] = []
        self.in_load_finding: tuple[str, str] | None = None  # KL-CRASH-14, see `crash`
        self.leftover_in_load: InLoadFailure | None = None  # KL-CRASH-14, `_check_planted`
        self.crash_points = 0  # crash points explored (journal operations reachable)
        self.sweeper = Sweeper(config, TOPIC_PARTITION, scratch_dir())
        # A copy of the next crash's image with its planted leftover, taken when keep_planted is
        # set (crash_steps.py, for Kafka's loader); whoever takes it removes it.
        self.keep_planted = False
        self.planted_image: Path | None = None

    def begin_action(self) -> None:
        """A new "last action" starts: the operations a following `crash` may cut.

        Crashes cut only the last action, so the journal is folded into the starting image
        first (`compact`: images stay identical per fault and seed); it then holds one action.
        """
        if isinstance(self.fs, RecordingFileSystem):
            self.fs.compact()
            self.action_mark = self.fs.mark()

    # --- the vocabulary -----------------------------------------------------------------------

    def append_as_leader(
        self, records: tuple[v.Record, ...], leader_epoch: int, producer_id: int = -1,
        producer_epoch: int = -1, base_sequence: int = -1, is_transactional: bool = False,
    ) -> v.LogAppendInfo:
        batch = MemoryRecords.with_records(
            records, producer=(producer_id, producer_epoch, base_sequence),
            is_transactional=is_transactional)
        return self.log.append_as_leader(batch, leader_epoch)

    def append_as_follower(
        self, batches: tuple[v.BatchSpec, ...], leader_epoch: int | None = None
    ) -> v.LogAppendInfo:
        return self.log.append_as_follower(MemoryRecords.from_batch_specs(batches), leader_epoch)

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int, leader_epoch: int) -> v.LogAppendInfo:
        """TXN-2: KafkaApis builds the marker batch with the leader's clock and appends it as
        the coordinator origin."""
        batch = MemoryRecords.end_txn_marker(
            producer_id, producer_epoch, commit, coordinator_epoch, self.time.milliseconds(),
            self.config.message_timestamp_type)
        return self.log.append_as_leader(batch, leader_epoch, AppendOrigin.COORDINATOR)

    def read(
        self, start_offset: int, max_bytes: int, isolation: v.Isolation, min_one_message: bool
    ) -> v.FetchDataInfo:
        return fetch_data_value(self.log.read(start_offset, max_bytes, isolation, min_one_message))

    def update_high_watermark(self, offset: int) -> int:
        return self.log.update_high_watermark(offset)

    def maybe_increment_high_watermark(
        self, hw: v.LogOffsetMetadata
    ) -> v.LogOffsetMetadata | None:
        return self.log.maybe_increment_high_watermark(hw)

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        return self.log.maybe_increment_log_start_offset(offset)

    def delete_old_segments(self) -> int:
        return self.log.delete_old_segments()

    def roll(self, expected_next_offset: int | None = None) -> int:
        return self.log.roll(expected_next_offset)

    def truncate_to(self, offset: int) -> bool:
        return self.log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.log.truncate_fully_and_start_at(offset)

    def flush(self, offset: int | None = None) -> int:
        return self.log.flush(offset)

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        self.log.assign_epoch(epoch, start_offset)

    def end_offset_for_epoch(self, epoch: int) -> v.EpochEndOffset | None:
        return self.log.end_offset_for_epoch(epoch)

    def fetch_offset_by_timestamp(self, timestamp: int) -> v.TimestampAndOffset | None:
        return self.log.fetch_offset_by_timestamp(timestamp)

    def clean(self) -> v.CleanResult | None:
        """One cleaning pass (KL-CLEAN-*), with a map that never fills (KL-ALLOW-7)."""
        return LogCleaner(self.log).clean()

    def advance_clock(self, ms: int) -> int:
        self.time.sleep(ms)
        return self.time.milliseconds()

    def close_and_reopen(self) -> None:
        """Clean shutdown of the whole directory, then LogDir.open (REC-*, FMT-43/44).

        The cleanly closed directory is verified before it is reopened: after a clean shutdown
        every index is trimmed and every checkpoint current, so any finding is a real problem.
        It is reported by the next `check()`.
        """
        last_base = self.log.state().segments[-1].base_offset
        self.log_dir.close()
        self.closed_dir_findings = self._verify_findings(last_base, live=False)
        self.log_dir = LogDir.open(self.fs, self.root, self.config, self.time)
        self.log = self.log_dir.log(TOPIC_PARTITION)

    def crash(self, point: int, fault: str, seed: int, leftover: str = "none",
              in_load: str = "") -> int:
        """Crash after `point` operations of the last action, then load what the disk kept.

        The open log is dropped by closing its descriptors only (no flush, trim, checkpoint or
        marker), `materialise` writes the crash image into a fresh directory, and LogDir.open
        loads it unclean on a new recording file system and a new clock at the same time (the
        old clock's pending tasks, such as delayed deletions, die with the process).

        `in_load` ("point:fault:seed", KL-CRASH-14, trace only): the image is taken as fully
        durable (as the sweep's check does), its load is crashed after `point` of the load's
        own operations, and that crash's image is loaded; `in_load_finding` then says how its
        state differs from the uninterrupted load's (None: it does not).
        """
        fs = self.fs
        if not isinstance(fs, CrashableFileSystem):
            raise UnsupportedError("crash needs the recording file system")
        ops = fs.crash_points() - self.action_mark
        kept = min(max(point, 0), ops)
        fs.close_all()
        self.abandoned = True  # until the load below succeeds: nothing of the old log is usable
        new_root, durable = _new_root(), None
        try:
            fs.materialise(new_root, self.action_mark + kept, FaultModel(fault), seed)
            if FaultModel(fault) is FaultModel.PROCESS_CRASH and not in_load:
                # The page cache survived, the disk did not see it yet: what a power loss would
                # leave now stays apart, so a later power loss tests what recovery made durable
                # (GAP-4, KL-CRASH-7).
                durable = _new_root()
                fs.materialise(durable, self.action_mark + kept, FaultModel.POWER_LOSS, seed)
        except BaseException:
            remove_scratch(new_root)
            if durable is not None:
                remove_scratch(durable)
            raise
        remove_scratch(self.root)
        before = _file_mtimes(new_root)
        plant_leftover(new_root / str(TOPIC_PARTITION), leftover, seed,
                       self.config.index_interval_bytes)
        _stamp_planted(new_root, before, self.time.milliseconds())
        if leftover != "none" and self.keep_planted:  # for Kafka's loader (kafka_loader.py)
            self.planted_image = _new_root()
            shutil.copytree(new_root, self.planted_image, dirs_exist_ok=True)
        planted = None
        if leftover != "none" and not in_load and self.sweeper.in_load:
            planted = _new_root()  # KL-CRASH-14 for the image with its leftover (see below)
            shutil.copytree(new_root, planted, dirs_exist_ok=True)
        try:
            self._load_image(new_root, durable)
        except BaseException:  # a load failure (KL-CRASH-13): the copy has no other owner
            if planted is not None:
                remove_scratch(planted)
            raise
        self.in_load_finding = None
        self.leftover_in_load = None
        if in_load:
            self._crash_in_load(in_load)
        elif planted is not None:
            self.leftover_in_load = self._check_planted(planted)
        self.abandoned = False
        self.action_mark = self.fs.mark()
        self.closed_dir_findings = leftovers_after_load(self.partition_dir,
                                                        self.log.state().pending_deletions)
        return ops - kept

    def _load_image(self, new_root: Path, durable: Path | None) -> None:
        """Load the crash image at `new_root` (unclean) as the live log, on a new recording file
        system and a new clock at the same time; the old root is gone."""
        self.root, self.partition_dir = new_root, new_root / str(TOPIC_PARTITION)
        try:
            self.fs = CrashableFileSystem(new_root, durable)
            self.verify_memo, self.snapshot_memo = SegmentMemo(), SnapshotMemo()
            self.index_memo = IndexMemo()
        finally:
            if durable is not None:
                remove_scratch(durable)
        self.time = MockTime(self.time.milliseconds())
        self.closed_dir_findings = []
        self.log_dir = LogDir.open(self.fs, self.root, self.config, self.time)
        self.log = self.log_dir.log(TOPIC_PARTITION)
        self.log.on_truncated = self.log_dir.checkpoint_recovery_points

    def _check_planted(self, image: Path) -> InLoadFailure | None:
        """KL-CRASH-14 for a crash step's own image with a planted leftover (KL-CRASH-9):
        sweeps load only images without one. The first crash inside its load whose reload
        differs from the live load, or None; crash_steps.py then sets the step's `in_load`."""
        inner = _new_root()
        try:
            return self.sweeper.crash_in_load(image, inner, loaded_view(self.log, self.fs),
                                              self.time.milliseconds())
        finally:
            remove_scratch(image)
            remove_scratch(inner)

    def _crash_in_load(self, spec: str) -> None:
        """KL-CRASH-14: crash the load just run after `point` of its operations under
        (`fault`, `seed`) of `spec`, load that image, and compare with the first load."""
        point, fault, seed = parse_in_load(spec)
        first = loaded_view(self.log, self.fs)
        fs = self.fs
        assert isinstance(fs, CrashableFileSystem)
        fs.close_all()
        inner = _new_root()
        try:
            fs.materialise(inner, min(max(point, 0), fs.crash_points()), FaultModel(fault), seed)
        except BaseException:
            remove_scratch(inner)
            raise
        remove_scratch(self.root)
        self.in_load_finding = "load", (  # until the load below succeeds
            "a crash inside the load leaves an image whose load fails (KL-CRASH-14)")
        self._load_image(inner, None)
        self.in_load_finding = in_load_difference(first, loaded_view(self.log, self.fs))

    def crash_sweep(self, plan: Sequence[tuple[str, int]]) -> list[SweepPoint]:
        """Every crash point of the last action under every (fault, seed) of `plan`: what the
        load of each image recovers, or the load's error (conformance/crash/sweep.py). The
        live log is untouched (each image is loaded in a scratch directory and dropped)."""
        fs = self.fs
        if not isinstance(fs, CrashableFileSystem):
            raise UnsupportedError("crash sweeps need the recording file system")
        return self.sweeper.sweep(fs, self.action_mark, plan, self.time.milliseconds())

    # --- observation ----------------------------------------------------------------------------

    def state(self) -> v.LogStateView:
        """Log.state() plus each segment's exact index entries and what each producer snapshot
        file holds (observe.py)."""
        view = with_indexes(loaded_view(self.log, self.fs), self.log, self.fs, self.index_memo)
        return with_snapshot_tables(view, self.log, self.fs, self.snapshot_memo)

    def check(self) -> list[str]:
        """Log.check() plus what verify found in the directory at the last clean close."""
        problems, self.closed_dir_findings = list(self.closed_dir_findings), []
        try:
            self.log.check()
        except AssertionError as error:
            problems.append(f"Log.check: {error}")
        return problems

    def verify(self) -> list[str]:
        """Read-only verify of the live directory after writing current root checkpoints.

        On the recording file system the checkpoints are not written: what is durable must
        follow from the actions alone, so a crash replays the same whatever the verify cadence
        (a live directory's stale checkpoints are notes, never problems).
        """
        if not isinstance(self.fs, RecordingFileSystem):
            self.log_dir.checkpoint()
        # The active segment's base, as `state().segments[-1]` has it, without a whole view.
        last_base = self.log.local_log.segments.base_offsets()[-1]
        return self._verify_findings(last_base, live=True)

    def _verify_findings(self, last_base: int, live: bool) -> list[str]:
        report = verify_log_dir(self.fs, self.root, memo=self.verify_memo)
        return verify_problems(report, last_base, live, self.config.kafka_version)

    def close(self) -> None:
        try:
            if not self.abandoned:
                self.log_dir.close()
            elif isinstance(self.fs, CrashableFileSystem):  # a crash whose load failed
                self.fs.close_all()
        finally:
            remove_scratch(self.root)


def leftovers_after_load(partition_dir: Path, pending: Iterable[int] = ()) -> list[str]:
    """CRP-10 / RCV-3 / RCV-5: after a load no `.deleted`, `.cleaned` or `.swap` file and no index
    without its `.log` remains (`.tmp` checkpoints are ignored, CRP-8). Reported by `check()`.
    The exception is the load's own work: `.deleted` files of the bases it dropped because the
    LEO was below the log-start checkpoint, pending deletion (`pending`, REC-9, KL-RELOAD-3)."""
    names = set(os.listdir(partition_dir)) if partition_dir.is_dir() else set()
    dropped = {f"{base:020d}" for base in pending}
    found = []
    for name in sorted(names):
        stem, _, suffix = name.partition(".")
        if name.endswith(".deleted") and stem in dropped:
            continue
        if name.endswith((".deleted", ".cleaned", ".swap")):
            found.append(f"leftover after load: {name} (RCV-3)")
        elif suffix in ("index", "timeindex") and f"{stem}.log" not in names:
            found.append(f"orphan index after load: {name} (RCV-5)")
    return found


def _file_mtimes(root: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def _stamp_planted(root: Path, before: dict[Path, int], now_ms: int) -> None:
    """SEG-19: the file system's clock is the log's. A leftover is written at the crash, so every
    file the plant created or changed carries the log's time, not the host's: a load reads a
    `.log`'s mtime as the last-modified time of a segment without timestamps, which time
    retention compares (a torn tail planted with the host's mtime, cut by a recovery that
    Kafka does not fsync, would keep an empty segment from retention). A `.swap` copy made
    with its source's mtime keeps it (`swap_completed`)."""
    ns = now_ms * 1_000_000
    for path, mtime in _file_mtimes(root).items():
        copied = path.suffix == ".swap" and before.get(path.with_suffix("")) == mtime
        if before.get(path) != mtime and not copied:
            os.utime(path, ns=(ns, ns))


def plant_leftover(partition_dir: Path, kind: str, seed: int,
                   index_interval_bytes: int = 4096) -> None:
    """KL-CRASH-9: put into a crash image what crashes of Kafka's own protocols leave behind.

    Plain file operations on the image (nothing journals them: they are part of the crash).
    The last segment is always recovered by an unclean load, so its index may be damaged.
    `offsets_back` is corruption rather than a leftover (FLT-8): CRC-valid batches whose
    offsets go back, which recovery must turn into an emptied segment (RCV-6), never a failed
    load (the "offset error escapes" bug).
    """
    if kind == "none" or not partition_dir.is_dir():
        return
    logs = sorted(p for p in partition_dir.iterdir() if p.name.endswith(".log"))
    if not logs:
        return
    last = logs[-1]
    stem = last.name[: -len(".log")]
    base = int(stem)
    index = partition_dir / f"{stem}.index"
    rng = random.Random(f"leftover:{seed}")
    if kind == "orphan_index":
        orphan = f"{base + 1000 + rng.randrange(1000):020d}"
        (partition_dir / f"{orphan}.index").write_bytes(bytes(8 * rng.randrange(1, 4)))
        (partition_dir / f"{orphan}.timeindex").write_bytes(b"")
    elif kind == "deleted":
        shutil.copyfile(last, partition_dir / f"{stem}.log.deleted")
        (partition_dir / f"{base + 7:020d}.index.deleted").write_bytes(bytes(16))
    elif kind == "cleaned_swap":
        # An unfinished split: `.swap` at or above the smallest `.cleaned` base is discarded
        # with the `.cleaned` files (RCV-3).
        (partition_dir / f"{base:020d}.log.cleaned").write_bytes(last.read_bytes())
        (partition_dir / f"{base:020d}.log.swap").write_bytes(last.read_bytes())
    elif kind == "swap_completed":
        _plant_finished_swap(partition_dir, logs, rng)
    elif kind in ("zero_index", "garbage_index"):
        size = index.stat().st_size if index.exists() else 0
        size = max(size, 8 * rng.randrange(1, 8))
        body = bytes(size) if kind == "zero_index" else rng.randbytes(size)
        index.write_bytes(body)
    elif kind == "missing_index":
        index.unlink(missing_ok=True)
    elif kind == "torn_tail":
        with last.open("ab") as handle:  # a partial batch: a header promising more bytes
            handle.write(rng.randbytes(rng.randrange(1, 80)))
    elif kind == "offsets_back":
        planted = _offsets_back(last.read_bytes(), base, index_interval_bytes)
        with last.open("ab") as handle:
            handle.write(planted)
    elif kind == "stale_tmp":
        root = partition_dir.parent
        (root / "recovery-point-offset-checkpoint.tmp").write_bytes(b"0\n1\nconformance 0 99")
        (partition_dir / "leader-epoch-checkpoint.tmp").write_bytes(rng.randbytes(9))


def _plant_finished_swap(partition_dir: Path, logs: list[Path], rng: random.Random) -> None:
    """A finished swap whose renames a crash interrupted (RCV-4): an earlier segment's files
    (later segments present) copied to `.swap` names, no `.cleaned`. The load must delete the
    files in the swap's range, that segment's and no later one's, and rename the copies
    in: the same log, segment by segment. The copies keep their segment's mtime (a
    timestamp-less segment's retention reads it, SEG-19); the caller restamps only files whose
    mtime changed."""
    if len(logs) < 2:
        return
    stem = logs[rng.randrange(len(logs) - 1)].name[: -len(".log")]
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        source = partition_dir / f"{stem}{suffix}"
        if source.exists():
            shutil.copy2(source, partition_dir / f"{stem}{suffix}.swap")


def _offsets_back(log_bytes: bytes, base: int, index_interval_bytes: int) -> bytes:
    """Three v2 batches, each larger than the index interval, to append after `log_bytes`.

    The first two continue the segment's offsets (L, then L + 1, L the next offset after its
    valid batches), the third goes back to the base. Recovery (SEG-15) is due an offset-index
    entry before the second and before the third (the bytes since the last entry exceed the
    interval), so an entry with a key above the base exists when the third's entry (the base)
    is refused: InvalidOffsetError every time. No index key is then at or below the base, so
    `truncateTo(base)` (RCV-6) empties the whole segment instead of cutting inside it at a
    half-built entry. No timestamp, no leader epoch, no producer: the time index, the epoch
    cache and the producer state see nothing of them.
    """
    next_offset = base
    try:
        for batch in MemoryRecords(log_bytes).batches():
            if not batch.is_valid():
                break  # recovery cuts here and never reaches what is planted
            next_offset = batch.next_offset
    except KafkalogError:
        pass  # a torn or garbage tail: the same
    value = bytes(max(index_interval_bytes, 0) + 1)

    def batch_at(offset: int) -> bytes:
        record = v.Record(None, value, v.NO_TIMESTAMP)
        return MemoryRecords.with_records((record,), base_offset=offset).to_bytes()

    return batch_at(next_offset) + batch_at(next_offset + 1) + batch_at(base)


def verify_problems(report: VerifyReport, last_base: int, live: bool,
                    kafka_version: str) -> list[str]:
    """The verify findings that are divergences for a log written under `kafka_version`."""
    last = f"{last_base:020d}."
    problems = [f for f in report.problems if not _expected(f.kind, f.path, last, live)]
    if index_entry_per_batch(kafka_version):
        # Only per-append indexing leaves time-index entries past a truncation (KL-TRUNC-3).
        problems += [f for f in report.all_findings() if f.kind == TRUNCATION_REMNANT]
    return [str(f) for f in problems]


def _expected(kind: str, path: str, last_segment_prefix: str, live: bool) -> bool:
    """Verify findings that are expected of the last segment and so are not problems.

    Index files are created lazily (FMT-31): the last segment may have none, live or after a
    clean close (Kafka closes an unloaded LazyIndex without creating it; KAFKA-13603). The index
    files of a live active segment are preallocated (FMT-26): zeros past the valid entries, and
    truncation zeroes the entries it drops (FMT-15), so only that untrimmed tail is expected;
    the entries themselves are checked live like any other.

    Epoch findings (a batch's epoch missing from, or contradicting, leader-epoch-checkpoint)
    hold for logs written by the replication protocol, where epochs only grow; the machine also
    drives API-legal sequences with stale epochs (EPO-2 then drops entries). The epoch cache is
    compared exactly with the model's after every step instead (LogStateView.epoch_entries).
    """
    if kind in ("epoch_missing", "epoch_mismatch"):
        return True
    if not Path(path).name.startswith(last_segment_prefix):
        return False
    if kind == "missing_index":
        return True
    # A live active segment's index files are preallocated: zero-filled past the valid
    # entries, which truncation also zeroes (FMT-26, FMT-15); only that tail is expected.
    return live and kind == "index_not_trimmed"
