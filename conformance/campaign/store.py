"""Exactly-once storage of a campaign's rows: private staging, atomic publish, a lock, compaction.

Layout under `--out` (specs/campaign-schema.md):

    runs/campaign_id=<id>/w-<attempt>-<wave>/part-*.parquet   one published wave
    runs/campaign_id=<id>/c-<attempt>/part-*.parquet          a compaction of earlier dirs
    _campaigns/<id>/params.json                               the parameters rows depend on
    _campaigns/<id>/lock                                      held by the one writer of <id>
    _campaigns/<id>/staging/<attempt>/wave-<n>/               where Spark writes a wave

Why this shape: Spark's file committer shares `<path>/_temporary/0` between every job appending
to one path, so a killed job's finished tasks were published by the next job and two campaigns
writing one `--out` deleted each other's temporaries. Here each wave is written by its
own Spark job into its own staging directory, and published by ONE directory rename into the
dataset: a wave is either wholly visible or not at all, resume runs exactly the seeds without a
row, and two campaign ids never touch the same directory. One writer per campaign id is enforced
by the lock. Compaction writes the de-duplicated rows as one new directory carrying a
`_supersedes` list, renames it in, then deletes the listed directories; a writer killed between
those steps leaves the list, and the next writer finishes the deletion before doing anything else.
Readers (Spark, pyarrow) skip names starting with `_` or `.`, and Hive partition discovery ignores
the `w-*`/`c-*` level, which has no `=`.

Two stores implement the few file operations needed: `LocalStore` (os calls, fsync'd) for local
paths and `file://`, and `HadoopStore` (Hadoop's FileSystem through the Spark driver's JVM) for
any other URI (hdfs://, s3a://, ...; on object stores rename is a copy, so a wave is published
exactly once but not atomically to concurrent readers).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kafkalog.conformance.campaign.errors import CampaignBusyError, CampaignOptionsError

SUPERSEDES = "_supersedes"
RESERVED_IDS = frozenset({"runs", "report", "reports", "traces", "staging", "audit"})
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*)://")


class Store(Protocol):
    """The file operations the campaign needs, on a local disk or a Hadoop file system."""

    def exists(self, path: str) -> bool: ...
    def mkdirs(self, path: str) -> None: ...
    def rename(self, source: str, target: str) -> None: ...
    def delete(self, path: str) -> None: ...
    def children(self, path: str) -> list[str]: ...
    def read_text(self, path: str) -> str | None: ...
    def write_text(self, path: str, text: str) -> None: ...
    def create_exclusive(self, path: str, text: str) -> bool: ...


def is_local(out: str) -> bool:
    """Whether `out` is a local path (no scheme, or file://)."""
    match = _SCHEME.match(out)
    return match is None or match.group(1).lower() == "file"


def local_path(out: str) -> Path:
    """The local path of a local `out` (file:// stripped)."""
    return Path(out[len("file://") :] if out.lower().startswith("file://") else out)


class LocalStore:
    """The Store on a local (or NFS-mounted) disk; metadata changes are fsync'd."""

    def exists(self, path: str) -> bool:
        return local_path(path).exists()

    def mkdirs(self, path: str) -> None:
        local_path(path).mkdir(parents=True, exist_ok=True)

    def rename(self, source: str, target: str) -> None:
        # os.rename of a directory onto an existing non-empty one fails: a publish never merges.
        os.rename(local_path(source), local_path(target))
        _fsync_dir(local_path(target).parent)

    def delete(self, path: str) -> None:
        import shutil

        target = local_path(path)
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()

    def children(self, path: str) -> list[str]:
        folder = local_path(path)
        return sorted(child.name for child in folder.iterdir()) if folder.is_dir() else []

    def read_text(self, path: str) -> str | None:
        target = local_path(path)
        return target.read_text() if target.is_file() else None

    def write_text(self, path: str, text: str) -> None:
        target = local_path(path)
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}")
        with open(temporary, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
        _fsync_dir(target.parent)

    def create_exclusive(self, path: str, text: str) -> bool:
        try:
            descriptor = os.open(local_path(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        return True


class HadoopStore:
    """The Store on any Hadoop-compatible file system, through the Spark driver's JVM."""

    def __init__(self, spark: Any) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _fs(self, path: str) -> tuple[Any, Any]:
        hadoop_path = self._jvm.org.apache.hadoop.fs.Path(path)
        return hadoop_path.getFileSystem(self._conf), hadoop_path

    def exists(self, path: str) -> bool:
        fs, target = self._fs(path)
        return bool(fs.exists(target))

    def mkdirs(self, path: str) -> None:
        fs, target = self._fs(path)
        fs.mkdirs(target)

    def rename(self, source: str, target: str) -> None:
        fs, from_path = self._fs(source)
        if fs.exists(self._fs(target)[1]) or not fs.rename(from_path, self._fs(target)[1]):
            raise OSError(f"cannot rename {source} to {target}")

    def delete(self, path: str) -> None:
        fs, target = self._fs(path)
        fs.delete(target, True)

    def children(self, path: str) -> list[str]:
        fs, target = self._fs(path)
        if not fs.exists(target):
            return []
        return sorted(status.getPath().getName() for status in fs.listStatus(target))

    def read_text(self, path: str) -> str | None:
        fs, target = self._fs(path)
        if not fs.exists(target):
            return None
        stream = fs.open(target)
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def write_text(self, path: str, text: str) -> None:
        fs, target = self._fs(path)
        stream = fs.create(target, True)
        try:
            stream.write(text.encode())
        finally:
            stream.close()

    def create_exclusive(self, path: str, text: str) -> bool:
        fs, target = self._fs(path)
        try:
            stream = fs.create(target, False)
        except Exception:  # noqa: BLE001 - Py4J wraps FileAlreadyExistsException
            return False
        try:
            stream.write(text.encode())
        finally:
            stream.close()
        return True


def store_for(out: str, spark: Any | None = None) -> Store:
    """LocalStore for local paths; HadoopStore (needs the session) for every other URI."""
    if is_local(out):
        return LocalStore()
    if spark is None:
        raise CampaignOptionsError("a URI --out needs Spark to reach its file system", where=out)
    return HadoopStore(spark)


def check_campaign_id(campaign_id: str) -> None:
    """Refuse ids that would collide with the layout's own names (`runs`, ...)."""
    if campaign_id.lower() in RESERVED_IDS:
        raise CampaignOptionsError(
            f"{campaign_id!r} is reserved (it names a folder of --out: "
            f"{', '.join(sorted(RESERVED_IDS))}); choose another --campaign-id",
            where=f"--campaign-id {campaign_id}",
        )


@dataclass(frozen=True)
class CampaignLayout:
    """Where one campaign's rows, parameters, lock and staging live under `out`."""

    out: str
    campaign_id: str

    @property
    def runs_path(self) -> str:
        return self.out.rstrip("/") + "/runs"

    @property
    def partition(self) -> str:
        return f"{self.runs_path}/campaign_id={self.campaign_id}"

    @property
    def meta(self) -> str:
        return f"{self.out.rstrip('/')}/_campaigns/{self.campaign_id}"

    def staging(self, attempt: str) -> str:
        return f"{self.meta}/staging/{attempt}"


def new_attempt() -> str:
    """A unique, time-ordered id of one invocation (names its staging and published dirs)."""
    return f"{int(time.time() * 1000):x}{secrets.token_hex(3)}"


class CampaignLock:
    """One writer per campaign id: an exclusively created lock file naming its holder.

    A lock left by a killed writer on this host (its pid is gone) is taken over; a live holder,
    or one on another host, makes the new writer fail with CampaignBusyError.
    """

    def __init__(self, store: Store, layout: CampaignLayout, attempt: str) -> None:
        self._store, self._layout, self._attempt = store, layout, attempt
        self._path = f"{layout.meta}/lock"

    def __enter__(self) -> CampaignLock:
        self._store.mkdirs(self._layout.meta)
        holder = {"host": socket.gethostname(), "pid": os.getpid(), "attempt": self._attempt}
        for _ in range(3):
            if self._store.create_exclusive(self._path, json.dumps(holder)):
                return self
            current = _parse(self._store.read_text(self._path))
            if current is not None and not _dead_here(current):
                raise CampaignBusyError(
                    f"campaign {self._layout.campaign_id!r} is being written by pid "
                    f"{current.get('pid')} on {current.get('host')}; wait for it, or delete the "
                    "lock if that process is gone",
                    where=self._path,
                )
            self._store.delete(self._path)  # stale: its writer was killed
        raise CampaignBusyError("could not take the campaign lock", where=self._path)

    def __exit__(self, *exc: object) -> None:
        self._store.delete(self._path)


def campaign_params(spec: Any) -> dict[str, Any]:
    """The parameters a campaign's rows depend on, from its TaskSpec's fields.

    Every field counts except identity and bookkeeping ones, so a field added to TaskSpec (a
    fault model, a Kafka version profile, ...) is recorded and checked on resume with no change
    here. The run function is recorded by name (a `functools.partial` by its function's name).
    """
    from dataclasses import asdict, fields, is_dataclass

    skipped = {"campaign_id", "commit", "grace_s"}
    params: dict[str, Any] = {}
    for each in fields(spec):
        if each.name in skipped:
            continue
        value = getattr(spec, each.name)
        if each.name == "run_fn":
            value = _function_name(value)
        elif is_dataclass(value):  # the variety: its cycles, as JSON lists
            value = {key: list(item) if isinstance(item, tuple) else item
                     for key, item in asdict(value).items()}
        params[each.name] = list(value) if isinstance(value, tuple) else value
    return params


def check_params(store: Store, layout: CampaignLayout, params: dict[str, Any]) -> bool:
    """Compare with the recorded parameters; True when none were recorded yet.

    Raises CampaignOptionsError naming each parameter that differs.
    """
    recorded = _parse(store.read_text(f"{layout.meta}/params.json"))
    if recorded is None:
        return True
    differ = params_differ(recorded, params)
    if differ:
        shown = "; ".join(f"{key}: {recorded.get(key)!r} != {params.get(key)!r}" for key in differ)
        raise CampaignOptionsError(
            f"campaign {layout.campaign_id!r} was recorded with other parameters ({shown}); "
            "resume with the same options or use a new --campaign-id",
            where=f"{layout.meta}/params.json",
        )
    return False


def params_differ(recorded: dict[str, Any], params: dict[str, Any]) -> list[str]:
    """Parameters whose values differ. A parameter the record lacks (a TaskSpec field added
    since it was written) counts as recorded with the field's default."""
    from dataclasses import MISSING, fields

    # campaign.task needs pyarrow (an optional dependency); the store's other paths do not.
    from kafkalog.conformance.campaign.task import TaskSpec

    defaults = {f.name: f.default for f in fields(TaskSpec) if f.default is not MISSING}
    return [
        key
        for key in sorted(set(recorded) | set(params))
        if recorded.get(key, defaults.get(key)) != params.get(key)
    ]


def record_params(store: Store, layout: CampaignLayout, params: dict[str, Any]) -> None:
    store.mkdirs(layout.meta)
    store.write_text(f"{layout.meta}/params.json", json.dumps(params, sort_keys=True, indent=1))


def recover(store: Store, layout: CampaignLayout) -> None:
    """Finish what killed writers left (lock held): superseded dirs, stale staging."""
    for name in store.children(layout.partition):
        listed = _parse(store.read_text(f"{layout.partition}/{name}/{SUPERSEDES}"))
        for old in (listed or {}).get("dirs", []):
            if store.exists(f"{layout.partition}/{old}"):
                store.delete(f"{layout.partition}/{old}")
    store.delete(f"{layout.meta}/staging")


def publish(store: Store, layout: CampaignLayout, staged_wave: str, name: str) -> str:
    """Move a staged wave (Spark wrote `<staged_wave>/campaign_id=<id>/`) into the dataset."""
    store.mkdirs(layout.partition)
    target = f"{layout.partition}/{name}"
    store.rename(f"{staged_wave}/campaign_id={layout.campaign_id}", target)
    return target


def data_dirs(store: Store, layout: CampaignLayout) -> list[str]:
    """The published directories of the campaign (waves and compactions), by name."""
    return [name for name in store.children(layout.partition) if name[:2] in ("w-", "c-")]


def local_seeds(layout: CampaignLayout) -> list[int] | None:
    """Seeds recorded for a campaign on a local `out`, read by pyarrow (no Spark), or None."""
    import pyarrow.parquet as pq

    folder = local_path(layout.partition)
    parts = [*folder.glob("*.parquet"), *folder.glob("*/*.parquet")]  # old layout: loose files
    if not any(part for part in parts if part.name[:1] not in "._"):
        return None  # no partition folder, or no data file in it (an empty table has no column)
    seeds: list[int] = pq.read_table(folder, columns=["seed"]).column("seed").to_pylist()
    return seeds


def _function_name(function: Any) -> str | None:
    inner = getattr(function, "func", function)  # functools.partial -> its function
    if inner is None:
        return None
    return f"{getattr(inner, '__module__', '?')}:{getattr(inner, '__qualname__', repr(inner))}"


def _parse(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _dead_here(holder: dict[str, Any]) -> bool:
    """Whether a lock holder ran on this host and its process no longer exists."""
    if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return False
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
