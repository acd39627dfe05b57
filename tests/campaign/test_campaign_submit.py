"""The cluster path: `spark-submit --master local[2] --py-files kafkalog-<v>.zip campaign_main.py`.

The driver and the executors run an interpreter that can import pyspark, hypothesis and the
other dependencies but NOT kafkalog (a throwaway venv whose only link to the project venv is a
`.pth` line naming its site-packages; the editable-install hook there is never executed). So the
campaign only works if the package really travels in the zip, as it must on a real cluster.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafkalog.conformance.campaign.job import git_commit, require_java
from kafkalog.conformance.campaign.ship import build_zip

pytestmark = pytest.mark.spark


def isolated_python(root: Path) -> Path:
    """A venv whose interpreter sees the project's dependencies but not kafkalog itself."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    deps = next(Path(p) for p in site.getsitepackages() if (Path(p) / "pyspark").is_dir())
    own = next((root / "lib").glob("python3*/site-packages"))
    (own / "kafkalog_deps.pth").write_text(f"{deps}\n")
    return root / "bin" / "python"


def submit(tmp_path: Path, script: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """spark-submit `script` (campaign_main.py or audit_main.py) with only the zip for kafkalog."""
    require_java()
    python = isolated_python(tmp_path / "venv")
    work = tmp_path / "work"  # the cwd of driver and workers: nothing importable in it
    work.mkdir()
    probe = subprocess.run(
        [str(python), "-c", "import kafkalog"], cwd=work, capture_output=True, text=True
    )
    assert probe.returncode != 0 and "No module named 'kafkalog'" in probe.stderr
    archive, launcher = build_zip(tmp_path / "dist")
    spark_home = Path(
        subprocess.check_output(
            [str(python), "-c", "import pyspark, os; print(os.path.dirname(pyspark.__file__))"],
            text=True,
        ).strip()
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env |= {
        "SPARK_HOME": str(spark_home),
        "PYSPARK_PYTHON": str(python),
        "PYSPARK_DRIVER_PYTHON": str(python),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / "hypothesis"),
    }
    command = [
        str(spark_home / "bin" / "spark-submit"),
        "--master", "local[2]",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.ui.showConsoleProgress=false",
        "--driver-java-options", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "--py-files", str(archive),
        str(launcher.with_name(script)),
        *args,
    ]  # fmt: skip
    assert shutil.which("bash")
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=300)


def test_spark_submit__package_shipped_as_zip__campaign_runs_and_reports(tmp_path: Path) -> None:
    """The zip alone carries kafkalog to driver and executors; rows and report come out."""
    done = submit(tmp_path, "campaign_main.py", [
        "--runs", "4", "--steps", "8", "--config-mix", "tiny,index_full",
        "--adapter", "model",  # real run_seed (model against model), no JVM-side surprises
        "--campaign-id", "submitted", "--out", str(tmp_path / "out"),
    ])  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Spark 4.3.0 on local[2]" in done.stdout  # spark-submit's master, not --master's
    assert "4 runs in" in done.stdout
    rows = pq.read_table(tmp_path / "out" / "runs" / "campaign_id=submitted").to_pylist()
    assert sorted(row["seed"] for row in rows) == [0, 1, 2, 3]
    assert {row["adapter"] for row in rows} == {"model"} and all(row["rules"] for row in rows)
    stamped = {row["kafkalog_commit"] for row in rows}  # baked into the zip on the driver side
    assert stamped == {git_commit()} and "unknown" not in stamped
    assert (tmp_path / "out" / "submitted" / "report.html").is_file()


def test_spark_submit__audit_of_the_fixtures__rows_and_report(
    tmp_path: Path, kafka_fixtures: Path
) -> None:
    """`kafkalog audit` through spark-submit with the zip: the fixtures' 14 missing indexes."""
    out = tmp_path / "audit"
    done = submit(tmp_path, "audit_main.py", [str(kafka_fixtures), "--out", str(out)])
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # problems found
    findings = pq.read_table(out / "findings").to_pylist()
    assert sum(f["kind"] == "missing_index" for f in findings) == 14
    assert (out / "report.html").is_file() and "Spark 4.3.0 on local[2]" in done.stdout
