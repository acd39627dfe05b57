"""Build (once) and start the adapter around Kafka's real `UnifiedLog` for one Kafka release.

`adapter_command("4.4")` returns the command line `kafkalog check --adapter` runs: a Kafka line
("3.9", "4.4") picks that line's newest release Maven Central serves, a full version ("3.9.1")
is taken as given. The Maven project is adapters/kafka/ (one source generation per Kafka API
generation, selected by `-Dkafka.line`); its jar and runtime classpath are copied to
`~/.cache/kafkalog/kafka-adapter/<version>/` with a stamp of the sources they were built from,
so later calls reuse them until the adapter's sources change. Maven resolves Kafka's jars into
its own repository (~/.m2) once.

Raises `JvmToolMissingError` (one line) when `java` or `mvn` is not installed, and
`KafkaAdapterBuildError` when Maven cannot resolve the release or compile the adapter.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from kafkalog.conformance.errors import AdapterError
from kafkalog.model.versions import PROFILES

#: Kafka lines the adapter has a source generation for (adapters/kafka/pom.xml profiles).
KAFKA_LINES: tuple[str, ...] = ("3.9", "4.0", "4.1", "4.2", "4.3", "4.4")
MAIN_CLASS = "kafkalog.adapter.Main"
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
_BUILD_TIMEOUT_S = 900


class JvmToolMissingError(AdapterError):
    """`java` or `mvn` is not on PATH: the Kafka adapter cannot be built or run."""


class KafkaAdapterBuildError(AdapterError):
    """An unknown Kafka version, a release Maven cannot resolve, or a failed adapter build."""


def project_dir() -> Path:
    """adapters/kafka/ of this checkout (the Maven project)."""
    return Path(__file__).resolve().parents[2] / "adapters" / "kafka"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafkalog" / "kafka-adapter"


def require_tools() -> tuple[str, str]:
    """Paths of `java` and `mvn`; JvmToolMissingError naming the missing one."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    for name, path in (("java", java), ("mvn", mvn)):
        if path is None:
            raise JvmToolMissingError(
                f"{name} is not installed: the Kafka adapter needs Java 17+ and Maven "
                f"(Debian: apt-get install openjdk-17-jdk-headless maven)")
    assert java is not None and mvn is not None
    return java, mvn


def kafka_line(version: str) -> str:
    """The line ("4.4") of a line or release name; KafkaAdapterBuildError if unsupported."""
    match = _VERSION.match(version.strip())
    if match is None:
        raise KafkaAdapterBuildError(f"not a Kafka version: {version!r} (e.g. 4.4 or 3.9.1)")
    line = f"{match.group(1)}.{match.group(2)}"
    if line not in KAFKA_LINES:
        raise KafkaAdapterBuildError(
            f"no Kafka adapter generation for {version!r} (lines: {', '.join(KAFKA_LINES)})")
    return line


def resolve_version(version: str) -> str:
    """A full release: `version` itself, or the newest release of a line Maven Central serves
    (resolved once, then read from the cache)."""
    line = kafka_line(version)
    if version.count(".") == 2:
        return version.strip()
    cached = cache_root() / "lines.json"
    known: dict[str, str] = json.loads(cached.read_text()) if cached.exists() else {}
    if line in known:
        return str(known[line])
    _, mvn = require_tools()
    major, minor = line.split(".")
    upper = f"{major}.{int(minor) + 1}"
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "deps.txt"
        result = _run([mvn, "-q", "-B", "-f", str(project_dir() / "pom.xml"),
                       f"-Dkafka.line={line}", f"-Dkafka.version=[{line},{upper})",
                       "dependency:list", "-DincludeArtifactIds=kafka-clients",
                       f"-DoutputFile={listing}"], timeout=_BUILD_TIMEOUT_S)
        found = re.findall(r"kafka-clients:jar:([0-9.]+)", listing.read_text()
                           if listing.exists() else "")
    if result.returncode != 0 or not found:
        raise KafkaAdapterBuildError(f"Maven could not resolve a Kafka {line}.x release: "
                                     f"{_last_line(result.stdout + result.stderr)}")
    known[line] = found[0]
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(known, indent=1, sort_keys=True))
    return str(found[0])


def model_profile(version: str) -> str:
    """The model's Kafka profile (specs/log.md §19, KL-VERSION-1) a release is checked against.

    3.9.0 is the profile "3.9"; 3.9.1 and later 3.9 releases carry the backports of
    KL-VERSION-2, -4 and -5 and are "3.9.2"; a 4.x release is its line's profile ("4.2" for
    4.2.2). Raises KafkaAdapterBuildError for a line the model has no profile of.
    """
    line = kafka_line(version)
    if line == "3.9":
        return "3.9" if version.strip() == "3.9.0" else "3.9.2"
    if line not in PROFILES:
        raise KafkaAdapterBuildError(
            f"the model has no profile for Kafka {version} (profiles: {', '.join(PROFILES)})")
    return line


def _sources_stamp() -> str:
    """A hash of the adapter's pom and sources: a cached build is reused only while it holds."""
    digest = hashlib.sha256()
    root = project_dir()
    for path in sorted([root / "pom.xml", *(root / "src").rglob("*.java")]):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build(version: str) -> Path:
    """The cache directory holding the built adapter for one release (built when missing or
    stale): `kafka-adapter.jar` and `classpath.txt`."""
    _, mvn = require_tools()
    release = resolve_version(version)
    line = kafka_line(release)
    target = cache_root() / release
    stamp = _sources_stamp()
    if (target / "stamp").exists() and (target / "stamp").read_text() == stamp and \
            (target / "kafka-adapter.jar").exists() and (target / "classpath.txt").exists():
        return target
    # Maven builds inside the cache (not adapters/kafka/target), then the two files a run needs
    # are copied beside it: a build never rewrites a jar that a running adapter has open.
    out = target / "build"
    result = _run([mvn, "-q", "-B", "-f", str(project_dir() / "pom.xml"),
                   f"-Dkafka.line={line}", f"-Dkafka.version={release}",
                   f"-Dadapter.build.dir={out}", "package"], timeout=_BUILD_TIMEOUT_S)
    if result.returncode != 0 or not (out / "kafka-adapter.jar").exists():
        raise KafkaAdapterBuildError(f"building the Kafka {release} adapter failed: "
                                     f"{_last_line(result.stdout + result.stderr)}")
    for name in ("kafka-adapter.jar", "classpath.txt"):
        staged = target / f".{name}.new"
        shutil.copy2(out / name, staged)
        staged.replace(target / name)
    (target / "stamp").write_text(stamp)
    return target


def adapter_command(version: str) -> str:
    """The `--adapter` command line for Kafka `version` (a line such as "4.4" or a release such
    as "3.9.1"), building the adapter first if needed."""
    java, _ = require_tools()
    built = build(version)
    classpath = os.pathsep.join([str(built / "kafka-adapter.jar"),
                                 (built / "classpath.txt").read_text().strip()])
    return shlex.join([java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                       "-cp", classpath, MAIN_CLASS])


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise KafkaAdapterBuildError(
            f"{' '.join(argv[:2])} ... took longer than {timeout:.0f} s") from None


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "ERROR" in ln]
    return (errors or lines or ["no output"])[0][:300]
