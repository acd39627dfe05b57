"""Start and stop a single-node Apache Kafka broker from the release's jars, by its PID.

The broker is one KRaft JVM that is both broker and controller (`process.roles=broker,
controller`), listening on two free loopback ports, with its log directory in a fresh temporary
directory that is deleted when it stops. Its classpath is the release's `kafka_2.13` artifact
and its runtime dependencies, resolved once from the Maven registry by `brokers/kafka/pom.xml`
and cached as a text file; the storage is formatted with `kafka.tools.StorageTool format` before
the first start (brokers/kafka/README.md). `KafkaBroker` has the interface of `TansuBroker`
(process.py): `address`, `log_path`, `pid`, `alive`, `stop()`, and a context manager that stops
exactly the process it started, also on Ctrl-C and when starting fails.
"""

from __future__ import annotations

import base64
import os
import shutil
import string
import subprocess
import time
import uuid
from pathlib import Path

from kafkalog.conformance.broker.process import ServerBroker, free_loopback_port
from kafkalog.conformance.errors import BrokerUnavailableError

#: The folder holding pom.xml and server.properties.template (a source checkout's brokers/kafka).
KAFKA_DIR = Path(os.environ.get("KAFKALOG_KAFKA_DIR",
                                Path(__file__).resolve().parents[2] / "brokers" / "kafka"))
#: Java 17 runs every release from 3.9 (built for Java 8) to 4.x (built for Java 17).
DEFAULT_JAVA = Path("/usr/lib/jvm/java-17-openjdk-amd64/bin/java")
#: The line both 3.9 and 4.x log once the broker is registered and unfenced (KafkaRaftServer).
STARTED = b"Kafka Server started"
JVM_OPTIONS = (
    "-Xms256m", "-Xmx1g", "-Djava.awt.headless=true",
    # slf4j-simple (pom.xml) writes to stderr, which goes to the broker's log file.
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
)


def java_binary() -> str | None:
    """$KAFKALOG_JAVA, $JAVA_HOME/bin/java, the Debian Java 17, or `java` on PATH."""
    for candidate in (os.environ.get("KAFKALOG_JAVA"),
                      os.environ.get("JAVA_HOME") and str(Path(os.environ["JAVA_HOME"], "bin",
                                                                    "java")),
                      str(DEFAULT_JAVA)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "kafkalog" / "kafka"


def kafka_classpath(version: str, timeout_s: float = 600.0) -> str:
    """The runtime classpath of Kafka `version`, resolved by Maven once and then cached.

    Raises BrokerUnavailableError when mvn is missing or cannot resolve the release.
    """
    cached = cache_dir() / f"{version}.classpath"
    if cached.is_file():
        text = cached.read_text().strip()
        if text and all(Path(jar).is_file() for jar in text.split(os.pathsep)):
            return text
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerUnavailableError(f"Kafka {version} needs mvn to resolve its jars (install "
                                     "Maven, or Debian's `maven`)", where="brokers/kafka")
    pom = KAFKA_DIR / "pom.xml"
    if not pom.is_file():
        raise BrokerUnavailableError(f"{pom} is missing (set KAFKALOG_KAFKA_DIR)",
                                     where="brokers/kafka")
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".partial")
    try:
        done = subprocess.run(
            [mvn, "-q", "-B", "-f", str(pom), f"-Dkafka.version={version}",
             "dependency:build-classpath", f"-Dmdep.outputFile={partial}"],
            capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise BrokerUnavailableError(f"mvn did not resolve Kafka {version} in {timeout_s:.0f} s",
                                     where=str(pom)) from None
    if done.returncode != 0 or not partial.is_file():
        last = " ".join((done.stdout + done.stderr).split())[-300:]
        raise BrokerUnavailableError(f"mvn could not resolve Kafka {version}: {last}",
                                     where=str(pom))
    partial.replace(cached)
    return cached.read_text().strip()


def kafka_unavailable(version: str) -> str | None:
    """Why Kafka `version` cannot be started here (no Java; no mvn and no cached classpath),
    or None when it can be tried."""
    if java_binary() is None:
        return "no Java found (set KAFKALOG_JAVA or JAVA_HOME)"
    if shutil.which("mvn") is None and not (cache_dir() / f"{version}.classpath").is_file():
        return f"no mvn to resolve Kafka {version}'s jars, and no cached classpath"
    return None


def cluster_id() -> str:
    """A random cluster id in Kafka's form (a UUID in URL-safe base64, unpadded).

    Never one that starts with `-`: kafka-storage's argument parser would read it as an option
    (`--cluster-id/-t: expected one argument`), one start in 64."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class KafkaBroker(ServerBroker):
    """One Kafka JVM (KRaft, combined mode) on free loopback ports; stops by PID."""

    stop_grace_s = 20.0  # SIGTERM: a controlled shutdown
    tail_limit = 400

    def __init__(self, version: str, log_path: Path, start_timeout_s: float = 120.0) -> None:
        java = java_binary()
        if java is None:
            raise BrokerUnavailableError(f"Kafka {version} needs Java 17 (none found; set "
                                         "KAFKALOG_JAVA or JAVA_HOME)", where="brokers/kafka")
        classpath = kafka_classpath(version)
        self.version = version
        self._prepare(log_path, f"kafkalog-kafka-{version}-")
        with self._stopped_on_failure():
            properties = self._write_properties()
            self._format(java, classpath, properties)
            # Its stop is in order (SIGTERM, a controlled shutdown; `stop_grace_s`).
            self._spawn([java, *JVM_OPTIONS, "-cp", classpath, "kafka.Kafka", str(properties)])
            self._await_started(start_timeout_s)

    def _write_properties(self) -> Path:
        template = string.Template((KAFKA_DIR / "server.properties.template").read_text())
        path = self._dir / "server.properties"
        path.write_text(template.substitute(
            broker_port=self.port, controller_port=free_loopback_port(),
            log_dir=self._dir / "data"))
        return path

    def _format(self, java: str, classpath: str, properties: Path) -> None:
        """`kafka-storage format`: writes meta.properties and the bootstrap metadata."""
        done = subprocess.run(
            [java, "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", cluster_id(),
             "-c", str(properties)],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, timeout=120,
            check=False)
        if done.returncode != 0:
            raise BrokerUnavailableError(
                f"kafka-storage format failed with status {done.returncode}: {self.log_tail()}",
                where=f"Kafka {self.version}")

    def _await_started(self, timeout_s: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerUnavailableError(
                    f"the broker exited with status {self._proc.returncode}: {self.log_tail()}",
                    where=f"Kafka {self.version}")
            if STARTED in self.log_path.read_bytes()[-1 << 20:]:
                return
            time.sleep(0.2)
        raise BrokerUnavailableError(
            f"the broker did not start within {timeout_s:.0f} s: {self.log_tail()}",
            where=f"Kafka {self.version}")
