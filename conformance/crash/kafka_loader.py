"""Kafka's own loader on crash images: is what Kafka recovers in the model's kafka-mode set?

The crash sweep (sweep.py) loads every crash image of kafkalog's implementation with kafkalog's
loader. With `kafkalog check --crash-mode kafka --kafka-loader 4.4`, each distinct image a sweep
loads is also handed to the JVM adapter around Apache Kafka's real UnifiedLog
(adapters/kafka/, the `load_image` request of specs/adapter-protocol.md, feature
`kafka_loader`): the adapter copies the partition directory and opens it as a broker's startup
does (LogManager.loadLog with the image's checkpointed recovery point and log start offset,
lastShutdownClean from the clean-shutdown marker; then Partition's high watermark from the
replication-offset checkpoint; its cleaner starts from the root's `cleaner-offset-checkpoint`
entry, as a broker's LogCleanerManager reads it). Kafka's recovered state must be a member of
the model's kafka-mode allowed set for that crash (KL-CRASH-1); a state outside it is either a
hole in the set (the model lacks an outcome Kafka reaches) or a Kafka recovery bug.

The comparison is the sweep's (crash_steps.py `_allows`): views without index entries (a load's
rebuilt indexes are not part of KL-CRASH-1's promise), and without the fields the adapter does
not report. Verdicts are memoised by image digest (a load is deterministic in the tree); at most
`limit` images are loaded by Kafka per run (a JVM load costs tens of ms).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from kafkalog.conformance.adapter.json_codec import decode, encode
from kafkalog.conformance.check.view_checks import first_difference
from kafkalog.conformance.errors import AdapterCrashedError, AdapterError
from kafkalog.impl.checkpoint.checkpoint_file import read_offsets_or_empty
from kafkalog.impl.cleaner.checkpoint import CLEANER_CHECKPOINT_FILENAME
from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.load.log_dir import (
    CLEAN_SHUTDOWN_FILE_NAME,
    TopicPartition,
    read_root_checkpoints,
)
from kafkalog.model import values as v
from kafkalog.model.epochs import truncate_from_end, truncate_from_start
from kafkalog.model.errors import CorruptCheckpointError, KafkalogError

#: Classes of difference `judge` names itself, with what they mean. `epoch_recovery` was the
#: class the first sweeps found; KL-ALLOW-8 now puts Kafka's walk of the checkpointed epoch cache
#: in the kafka-mode set, so a state of this class is no longer explained and must be triaged.
#: `index_rebuild_fails_load` is a Kafka bug (docs/kafka.md, finding 8), labelled, not allowed.
KNOWN_GAPS: dict[str, str] = {
    "epoch_recovery": "equal to an allowed state but for the epoch cache, although the set "
                      "holds both kafkalog's re-derived cache and Kafka's walk of the "
                      "checkpointed one (RCV-10, KL-ALLOW-8): to be triaged",
    "index_rebuild_fails_load": (
        "Kafka finding 8 (RCV-5, RCV-6, KL-CRASH-9): a segment whose `.log` holds batches "
        "whose offsets go back has no `.index`; LogLoader.loadSegmentFiles rebuilds it with "
        "recoverSegment outside recoverLog's catch of InvalidOffsetException, so Kafka's load "
        "fails where, with the index present, recovery empties the segment as the model does"),
    "epoch_below_log_start": (
        "Kafka finding 9 (REC-15, LOG-2, KL-INV-10): the log-start checkpoint reads below the "
        "loaded log start (a crash inside a retention pass or a full truncation, or one that lost "
        "the checkpoint, GAP-12), LogLoader trims the epoch cache at the checkpoint, and an entry "
        "starting below the log start stays, against Kafka's own LOG-2; trimmed at the log start, "
        "as kafkalog loads it, the state is in the set"),
    "kafkalog_too": (
        "Kafka's load of the image is kafkalog's own load of it (the sweep's recovered state, "
        "compared alike): the difference with the kafka-mode set is not Kafka's loader's, and "
        "the run's sweep reports it as a divergence of kafkalog's implementation"),
}
#: The classes above that are triaged (a recorded Kafka finding; a difference the run's own
#: sweep reports as kafkalog's divergence): a campaign counts them, but they do not fail it.
TRIAGED = frozenset({"index_rebuild_fails_load", "epoch_below_log_start", "kafkalog_too"})
#: Kafka's OffsetIndex.append refusing an offset that goes back (the message of its
#: InvalidOffsetException, as the adapter reports it).
_INDEX_APPEND_BACK = re.compile(r"^InvalidOffsetError: .*no larger than the last offset appended")

#: An image Kafka loaded: its digest and the config it was loaded under.
ImageKey = tuple[bytes, v.LogConfig]
#: (members' views, the same without index entries, error codes of allowed failed loads): the
#: allowed set of one (fault, inside the action) as crash_steps.py's sweep computes it.
Allowed = tuple[list[Any], frozenset[Any], frozenset[str]]
FEATURE = "kafka_loader"
DEFAULT_LIMIT = 300  # images loaded by Kafka per run, at most
_MAX_ERRORS = 3  # adapter failures after which the loader gives up for the run


class Requester(Protocol):
    """What the loader needs of an adapter process (AdapterProcess, or a fake in tests)."""

    features: frozenset[str]

    def request(self, action: str, args: dict[str, Any]) -> Any: ...

    def close(self) -> None: ...


class LoaderVerdict(NamedTuple):
    """Kafka's load of one image held against one allowed set: `member`, Kafka's state (or its
    load error "<code>: <message>"), and where the closest allowed state differs
    (`where` "-" for a member; `model` / `kafka` the two values there)."""

    member: bool
    kafka: v.LogStateView | str
    where: str = "-"
    model: Any = None
    theirs: Any = None
    closest: v.LogStateView | None = None  # the closest allowed state (without index entries)
    alike: tuple[v.LogStateView, ...] = ()  # allowed states of Kafka's LEO (a few, for triage)
    gap: str = ""  # a known class of difference (KNOWN_GAPS), else ""

    def describe(self) -> str:
        from kafkalog.conformance.crash.kafka_gaps import KAFKA_GAPS

        text = KNOWN_GAPS.get(self.gap) or KAFKA_GAPS.get(self.gap, "")
        known = f" [{self.gap}: {text}]" if self.gap else ""
        return self._describe() + known

    def _describe(self) -> str:
        if self.member:
            return "Kafka's loaded state is in the kafka-mode set"
        if isinstance(self.kafka, str):
            return f"Kafka's load failed outside the kafka-mode set: {self.kafka}"
        return (f"Kafka's loaded state is outside the kafka-mode set; closest allowed state "
                f"differs at {self.where}: model {self.model!r} | kafka {self.theirs!r}")


def image_request(root: Path, config: v.LogConfig, now_ms: int,
                  partition: TopicPartition) -> dict[str, Any]:
    """The `load_image` arguments of the crash image at `root` (a log directory): what a broker's
    LogManager reads there (a corrupt recovery-point or log-start checkpoint reads as empty, a
    missing entry as 0; a stale `.tmp` is never read), and the partition's
    `cleaner-offset-checkpoint` entry, which a broker's LogCleanerManager reads from the same root
    (`cleaner_checkpoint`, left out without an entry)."""
    fs = FileSystem()
    checkpoints = read_root_checkpoints(fs, root, strict_high_watermarks=False)
    request = {
        "dir": str(root / str(partition)),
        "config": encode(config),
        "now_ms": now_ms,
        "recovery_point": checkpoints.recovery_points.get(partition, 0),
        "log_start_offset": checkpoints.log_start_offsets.get(partition, 0),
        "high_watermark": checkpoints.high_watermarks.get(partition, 0),
        "clean_shutdown": (root / CLEAN_SHUTDOWN_FILE_NAME).exists(),
    }
    cleaned = _cleaner_entry(fs, root, partition)
    if cleaned is not None:
        request["cleaner_checkpoint"] = cleaned
    return request


def _cleaner_entry(fs: FileSystem, root: Path, partition: TopicPartition) -> int | None:
    """The partition's entry in the root's `cleaner-offset-checkpoint`, None without one. A
    corrupt file has none: Kafka's `LogCleanerManager.allCleanerCheckpoints` reads a file it
    cannot parse as empty (KafkaStorageException caught)."""
    try:
        offsets = read_offsets_or_empty(fs, root / CLEANER_CHECKPOINT_FILENAME)
    except CorruptCheckpointError:
        return None
    return offsets.get((partition.topic, partition.partition))


#: The crash checks' own classifier of known kafka-mode gaps (kafka_gaps.kafka_gap with the
#: example's leftovers at risk): (allowed views, Kafka's view) -> gap name or None.
Classify = Callable[[list[v.LogStateView], v.LogStateView], "str | None"]


def judge(kafka: v.LogStateView | str, allowed: Allowed,
          classify: Classify | None = None, indexless: bool = False,
          kafkalogs: v.LogStateView | str | None = None) -> LoaderVerdict:
    """Kafka's load (state or error) against an allowed set, compared as the sweep compares; an
    outside state is put in a known class when one explains it (`epoch_recovery`, else the
    kafka-mode gaps the crash checks know, `classify`). `indexless`: the image has a segment
    `.log` without its `.index`; a failed load outside the set is then
    `index_rebuild_fails_load` when Kafka's index rebuild met an offset going back while the
    model's load succeeds. `kafkalogs`: kafkalog's own load of the same image (a sweep
    point's); an outside state or failure equal to it is `kafkalog_too` when no other class
    explains it."""
    members, _, failures = allowed
    if isinstance(kafka, str):
        member = kafka.split(":", 1)[0] in failures
        gap = ("index_rebuild_fails_load"
               if not member and indexless and members and _INDEX_APPEND_BACK.match(kafka)
               else "kafkalog_too" if not member and isinstance(kafkalogs, str)
               and kafkalogs.split(":", 1)[0] == kafka.split(":", 1)[0] else "")
        return LoaderVerdict(member, kafka, "-" if member else "load", sorted(failures), kafka,
                             gap=gap)
    ours = _unindexed(kafka)
    narrowed = [_unindexed(_like(member, kafka)) for member in members]
    if ours in narrowed:
        return LoaderVerdict(True, kafka)
    if not narrowed:
        return LoaderVerdict(False, kafka, "load", sorted(failures), "loaded")
    closest = min(narrowed, key=lambda m: (abs(m.log_end_offset - ours.log_end_offset),
                                           _distance(m, ours)))
    where = first_difference(closest, ours)
    gap = ("epoch_below_log_start" if _trimmed_at_log_start(ours) in narrowed
           else "epoch_recovery" if any(dataclasses.replace(m, epoch_entries=ours.epoch_entries)
                                        == ours for m in narrowed)
           else (classify(narrowed, ours) if classify is not None else None) or "")
    if not gap and isinstance(kafkalogs, v.LogStateView) \
            and _unindexed(_like(kafkalogs, kafka)) == ours:
        gap = "kafkalog_too"
    alike = tuple(m for m in narrowed if m.log_end_offset == ours.log_end_offset)[:8]
    return LoaderVerdict(False, kafka, where[0], where[1], where[2], closest, alike, gap)


def _trimmed_at_log_start(state: v.LogStateView) -> v.LogStateView | None:
    """`state` with its epoch cache trimmed at its log start, then at its log end (kafkalog's
    load, REC-15), when an entry starts below the log start (finding 9); else None."""
    entries = state.epoch_entries
    if not any(e.start_offset < state.log_start_offset for e in entries):
        return None
    trimmed = truncate_from_end(truncate_from_start(entries, state.log_start_offset),
                                state.log_end_offset)
    return dataclasses.replace(state, epoch_entries=trimmed)


def _unindexed(state: v.LogStateView) -> v.LogStateView:
    return dataclasses.replace(state, producer_snapshot_tables=None, segments=tuple(
        dataclasses.replace(s, offset_index=None, time_index=None) for s in state.segments))


def _like(member: v.LogStateView, kafka: v.LogStateView) -> v.LogStateView:
    """`member` without the top-level fields the adapter left out of Kafka's view (None)."""
    blanks = {f.name: None for f in dataclasses.fields(kafka)
              if getattr(kafka, f.name) is None and getattr(member, f.name) is not None}
    return dataclasses.replace(member, **blanks) if blanks else member


def _distance(a: Any, b: Any) -> int:
    """How many leaf fields differ (ties of the closest member): a segment of another size
    is further than one epoch entry more."""
    if a == b:
        return 0
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return sum(_distance(getattr(a, f.name), getattr(b, f.name))
                   for f in dataclasses.fields(a))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return (sum(_distance(x, y) for x, y in zip(a, b, strict=False))
                + abs(len(a) - len(b)))
    return 1


class KafkaLoader:
    """Loads crash images with Kafka's LogLoader through the JVM adapter; counts and keeps the
    verdicts. `start` makes the adapter process (lazily, once; again after it died)."""

    def __init__(self, start: Callable[[], Requester], limit: int = DEFAULT_LIMIT,
                 save_dir: Path | None = None, label: str = "kafka",
                 keep_process: bool = False) -> None:
        self._start = start
        self.keep_process = keep_process  # close() leaves a kept process (a campaign worker's)
        self._process: Requester | None = None
        self.limit = limit
        self.save_dir = save_dir  # images outside the set are copied here with their verdict
        self.label = label
        # Kafka's load of each image under each config: the same bytes load otherwise under
        # another config (a compacted log reports its cleaner checkpoint, segment sizes bound
        # recovery), and one check runs many config families through one loader.
        self.loaded: dict[ImageKey, v.LogStateView | str] = {}
        self.indexless: set[ImageKey] = set()  # images with a `.log` but no `.index`
        self.judged: dict[tuple[ImageKey, str, bool], LoaderVerdict] = {}
        self.outside_images: dict[ImageKey, tuple[str, bool, LoaderVerdict]] = {}
        self.pending: dict[bytes, tuple[Any, int]] = {}  # sweep.py fills: digest -> (image, now)
        self.skipped = 0  # images past the limit
        self.planted = 0  # of the images, crash steps' own ones with a planted leftover
        self.errors: list[str] = []  # failures of the adapter itself (no verdict)
        self.load_s = 0.0

    @property
    def images(self) -> int:
        return len(self.loaded)

    @property
    def outside(self) -> int:
        return len(self.outside_images)

    def process(self) -> Requester:
        if self._process is None:
            self._process = self._start()
            if FEATURE not in self._process.features:
                self._process.close()
                self._process = None
                raise AdapterCrashedError(f"the adapter does not list the {FEATURE} feature")
        return self._process

    def load(self, root: Path, config: v.LogConfig, now_ms: int,
             partition: TopicPartition) -> v.LogStateView | str | None:
        """Kafka's state after loading (a copy of) the image at `root`, or its error; None when
        the adapter itself failed (kept in `errors`, the image is not counted)."""
        import time

        if len(self.errors) >= _MAX_ERRORS:  # the adapter keeps failing: stop asking it
            return None
        started = time.monotonic()
        try:
            body = self.process().request("load_image",
                                          image_request(root, config, now_ms, partition))
            return decode(v.LogStateView, body, "load_image")  # type: ignore[no-any-return]
        except AdapterError as error:  # the adapter failed, not Kafka's load: never a verdict
            if self._process is not None:
                self._process.close()
            self._process = None  # started again for the next image
            self.errors.append(f"{type(error).__name__}: {error}")
            return None
        except KafkalogError as error:
            return f"{type(error).__name__}: {error}"
        finally:
            self.load_s += time.monotonic() - started

    def observe(self, points: Sequence[Any], allowed: Callable[[Any, bool], Allowed],
                config: v.LogConfig, partition: TopicPartition, scratch: Path,
                classify: Classify | None = None) -> None:
        """Judge Kafka's load of every swept point's image (its digest in `pending` or already
        loaded) against the point's allowed set (`allowed(point, inside)`)."""
        fresh: dict[bytes, tuple[Any, int]] = {}
        for point in points:
            digest = point.image
            ident = (digest, config)
            if ident not in self.loaded:
                if digest not in self.pending:
                    continue
                if len(self.loaded) >= self.limit:
                    self.skipped += 1
                    self.pending.pop(digest)
                    continue
                image, now_ms = fresh[digest] = self.pending.pop(digest)
                _clear(scratch)
                image.write(scratch)
                loaded = self.load(scratch, config, now_ms, partition)
                if loaded is None:
                    continue
                self.loaded[ident] = loaded
                if indexless(scratch / str(partition)):
                    self.indexless.add(ident)
            # Judged at every point: equal images of other crashes have other allowed sets.
            inside = point.ops_lost > 0
            verdict = judge(self.loaded[ident], allowed(point, inside), classify,
                            ident in self.indexless, point.recovered)
            self.judged[ident, point.fault, inside] = verdict
            if not verdict.member and ident not in self.outside_images:
                self.outside_images[ident] = (point.fault, inside, verdict)
                self._save(digest, point, inside, verdict, scratch, config, partition,
                           fresh.get(digest))
        self.pending.clear()

    def judge_dir(self, root: Path, allowed: Allowed, config: v.LogConfig,
                  partition: TopicPartition, now_ms: int, label: str,
                  classify: Classify | None = None) -> LoaderVerdict | None:
        """Kafka's load of the image at `root` (a crash step's image with a planted leftover,
        which no sweep loads) against its allowed set; None past the limit. `label` names it
        ("leftover:fault:seed")."""
        import hashlib

        key = hashlib.blake2b(f"planted:{self.images}:{label}".encode(), digest_size=20).digest()
        if len(self.loaded) >= self.limit:
            self.skipped += 1
            return None
        loaded = self.load(root, config, now_ms, partition)
        if loaded is None:
            return None
        ident = (key, config)
        self.loaded[ident] = loaded
        self.planted += 1
        verdict = judge(loaded, allowed, classify, indexless(root / str(partition)))
        self.judged[ident, label, False] = verdict
        if not verdict.member:
            self.outside_images[ident] = (label, False, verdict)
            if self.save_dir is not None:
                target = self.save_dir / key.hex()[:16]
                shutil.copytree(root, target / "image", dirs_exist_ok=True)
                self._write_verdict(target, {"planted": label}, verdict,
                                    image_request(target / "image", config, now_ms, partition))
        return verdict

    def _save(self, digest: bytes, point: Any, inside: bool, verdict: LoaderVerdict,
              scratch: Path, config: v.LogConfig, partition: TopicPartition,
              kept: tuple[Any, int] | None) -> None:
        """The image (when this observe loaded it) and its verdict under `save_dir`."""
        if self.save_dir is None:
            return
        image, now_ms = kept if kept is not None else (None, 0)
        target = self.save_dir / digest.hex()[:16]
        target.mkdir(parents=True, exist_ok=True)
        if image is not None:
            _clear(scratch)
            image.write(scratch)
            shutil.copytree(scratch, target / "image", dirs_exist_ok=True)
        self._write_verdict(target, {"fault": point.fault, "seed": point.seed,
                                     "ops_lost": point.ops_lost, "inside_action": inside},
                            verdict, image_request(target / "image", config, now_ms, partition))

    @staticmethod
    def _write_verdict(target: Path, where: dict[str, Any], verdict: LoaderVerdict,
                       request: dict[str, Any]) -> None:
        (target / "verdict.json").write_text(json.dumps({
            **where, "where": verdict.where, "model": repr(verdict.model),
            "kafka": repr(verdict.theirs), "gap": verdict.gap, "describe": verdict.describe(),
            "request": request,
            "closest": encode(verdict.closest) if verdict.closest is not None else None,
            "allowed_at_kafka_leo": [encode(m) for m in verdict.alike],
            "kafka_state": encode(verdict.kafka) if not isinstance(verdict.kafka, str)
            else verdict.kafka,
        }, indent=1, default=str))

    def close(self) -> None:
        if self._process is not None and not self.keep_process:
            self._process.close()
        self._process = None


#: The loader of the running `kafkalog check` (None: off). The check runs its seeds in this
#: process, one after another; crash_steps.py asks here at every sweep in kafka mode.
ACTIVE: KafkaLoader | None = None


@contextmanager
def activated(loader: KafkaLoader) -> Iterator[KafkaLoader]:
    """Make `loader` the active one for the duration (then close its adapter)."""
    global ACTIVE
    previous, ACTIVE = ACTIVE, loader
    try:
        yield loader
    finally:
        ACTIVE = previous
        loader.close()


def for_kafka(version: str, limit: int = DEFAULT_LIMIT,
              save_dir: Path | None = None) -> KafkaLoader:
    """A loader around the JVM adapter of a Kafka release or line (built on first use)."""
    from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess
    from kafkalog.conformance.jvm.kafka_adapter import adapter_command

    command = adapter_command(version)
    return KafkaLoader(lambda: AdapterProcess(command), limit, save_dir, label=version)


def indexless(partition_dir: Path) -> bool:
    """Whether some segment `.log` in `partition_dir` has no `.index` beside it (Kafka's
    LogSegment.sanityCheck then throws NoSuchFileException and the loader rebuilds it)."""
    return any(not log.with_suffix(".index").exists() for log in partition_dir.glob("*.log"))


def _clear(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for entry in list(directory.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
