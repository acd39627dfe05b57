"""The Kafka-peer rows of `kafkalog bench`: Kafka's own log in a JVM, beside kafkalog, same run.

Timings are never asserted; only that each row is produced, that Kafka's answers were checked
(a wrong answer raises), and that a machine without java gives skipped rows, not a failure.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafkalog.benchmarks import kafka_harness, kafka_peer, table
from kafkalog.benchmarks.core import KIB, MIB, QUICK, Sample, Scale
from kafkalog.benchmarks.kafka_harness import KafkaHarness, KafkaHarnessError, warm_up
from kafkalog.benchmarks.suite import REQUIRED_KEYS
from kafkalog.conformance.jvm import kafka_adapter

TINY = Scale(**{**QUICK.__dict__, "reps": 1, "append_bytes": MIB, "read_log_bytes": 2 * MIB,
                "index_bytes": 16 * KIB, "lookups": 500, "recovery_bytes": 2 * MIB})
NO_JVM = shutil.which("java") is None or shutil.which("mvn") is None


@pytest.fixture(scope="module")
def kafka_rows(tmp_path_factory: pytest.TempPathFactory) -> list:
    """Every Kafka-peer row at a tiny scale against the default release (4.4)."""
    if NO_JVM:
        pytest.skip("java or mvn is not installed: the Kafka harness cannot run here")
    return kafka_peer.kafka_figures(TINY, tmp_path_factory.mktemp("kafka-peer"))


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[KafkaHarness]:
    if NO_JVM:
        pytest.skip("java or mvn is not installed: the Kafka harness cannot run here")
    with KafkaHarness.start(kafka_harness.DEFAULT_KAFKA, tmp_path) as running:
        yield running


def test_kafka_figures__suite__lists_every_kafka_row() -> None:
    """`kafkalog bench` requires each Kafka-peer row (the smoke test checks the suite)."""
    assert [k for k in REQUIRED_KEYS if k.startswith("kafka.")] == list(kafka_peer.KEYS)


def test_kafka_figures__harness_runs__each_row_has_kafkas_number_and_a_ratio(
        kafka_rows: list) -> None:
    """With java and mvn, every row carries Kafka 4.4.0's number beside kafkalog's."""
    assert [f.key for f in kafka_rows] == list(kafka_peer.KEYS)
    for f in kafka_rows:
        assert f.baseline_name == "Kafka 4.4.0 UnifiedLog (JVM, same run)", f
        assert f.value > 0 and f.baseline and f.baseline > 0 and f.ratio and f.ratio > 0, f
        assert f.extra["kafka"] == "4.4.0" and f.extra["base_cpu_s"] > 0, f
        assert "skipped" not in f.extra and f.met is None and f.goal is None, f


def test_kafka_figures__harness_runs__warm_up_is_reported_for_both_sides(
        kafka_rows: list) -> None:
    """JIT warm-up runs are kept apart from the measured ones, for kafkalog and Kafka alike."""
    for f in kafka_rows:
        for side in ("kafkalog", "kafka"):
            runs = f.extra["warmup"][side]["runs_s"]
            assert kafka_harness.WARMUP_MIN_RUNS <= len(runs) <= kafka_harness.WARMUP_MAX_RUNS
            assert all(r > 0 for r in runs), f


def test_kafka_figures__java_missing__rows_say_skipped_and_keep_kafkalogs_number(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without java every row is still there, kafkalog's number alone, marked skipped."""
    monkeypatch.setattr(kafka_adapter.shutil, "which", lambda name: None)
    figures = kafka_peer.kafka_figures(TINY, tmp_path)
    assert [f.key for f in figures] == list(kafka_peer.KEYS)
    for f in figures:
        assert f.extra["skipped"].startswith("skipped: java is not installed"), f
        assert f.value > 0 and f.baseline is None and f.ratio is None and f.met is None
        assert "skipped: java is not installed" in f.workload


def test_kafka_figures__adapter_does_not_build__rows_say_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A release the adapter cannot be built for skips the rows with the build's reason."""
    monkeypatch.setattr(kafka_adapter.shutil, "which", lambda name: f"/usr/bin/{name}")
    figures = kafka_peer.kafka_figures(TINY, tmp_path, version="2.8")
    for f in figures:
        assert f.extra["skipped"].startswith("skipped: no Kafka adapter generation for '2.8'"), f


def test_harness_run__unknown_workload__raises_with_kafkas_message(
        harness: KafkaHarness) -> None:
    """A command the JVM cannot run is an error naming it, and the JVM keeps serving."""
    with pytest.raises(KafkaHarnessError, match="unknown op nothing"):
        harness.run("nothing")
    with pytest.raises(KafkaHarnessError, match="chunk_bytes"):
        harness.run("follower", chunks=str(_file(harness, b"x" * 10)), chunk_bytes=3, config={})


def test_clean_figure__harness_runs__kafkas_cleaner_beside_kafkalogs(
        harness: KafkaHarness, tmp_path: Path) -> None:
    """Both cleaners pass over the same dirty log and leave the same records and bytes."""
    f = kafka_peer.clean_figure(TINY, tmp_path, harness)
    assert f.key == "kafka.clean.pass" and f.unit == "MiB/s", f
    assert f.value > 0 and f.baseline and f.baseline > 0 and f.ratio and f.ratio > 0, f
    kept = f.extra["kept"]
    # 1,000 keys, one record each kept below the active segment, whose records all stay.
    assert kept["records"] == 1_000 + kept["log_end_offset"] - kept["end_offset"], kept
    assert kept["bytes"] < f.extra["bytes"], kept


def test_clean_figure__kafka_keeps_a_wrong_record_count__refused(
        harness: KafkaHarness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Kafka pass whose result differs from kafkalog's is an error, never a number."""
    real = harness.run

    def wrong(op: str, **args: object) -> dict:
        answer = real(op, **args)
        return {**answer, "records": answer["records"] + 1} if op == "clean" else answer

    monkeypatch.setattr(harness, "run", wrong)
    with pytest.raises(KafkaHarnessError, match="Kafka answered records"):
        kafka_peer.clean_figure(TINY, tmp_path, harness)


def _file(harness: KafkaHarness, data: bytes) -> Path:
    path = harness.scratch / "data.bin"
    path.write_bytes(data)
    return path


def test_warm_up__timings_settle__stops_after_three_agreeing_runs() -> None:
    """Warm-up ends once three consecutive CPU times agree within the tolerance."""
    times = iter([1.0, 0.5, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1])
    result = warm_up(lambda: Sample(1.0, next(times)))
    assert [r.cpu for r in result.runs] == [1.0, 0.5, 0.2, 0.1, 0.1, 0.1] and result.stable


def test_warm_up__timings_never_settle__stops_at_the_cap_and_says_so() -> None:
    """A side that never settles is run WARMUP_MAX_RUNS times and reported unstable."""
    count = iter(range(1, 100))
    result = warm_up(lambda: Sample(1.0, float(next(count) % 2 + 1)))
    assert len(result.runs) == kafka_harness.WARMUP_MAX_RUNS and not result.stable


def test_benchmarks_doc__kafka_table__equals_the_one_generated_from_its_results() -> None:
    """Regenerate with `python -m kafkalog.benchmarks.table` after a new `kafka_runs --json`."""
    document = json.loads(table.KAFKA_RESULTS.read_text())
    text = table.DOC.read_text()
    assert table.current(text, table.KAFKA_START, table.KAFKA_END) == \
        table.kafka_generated(document)
    assert len(document["runs"]) == 3 and document["scale"] == "full"
