"""Exactly-once rows on Spark: a SIGKILLed campaign resumed, concurrent campaigns, compaction.

"Exactly" means on disk, not after readers de-duplicate: the Parquet files of a campaign hold one
row per seed of its range, read with plain pyarrow.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from kafkalog.conformance.campaign.errors import CampaignIncompleteError
from kafkalog.conformance.campaign.job import CampaignPlan, check_complete, run_campaign
from kafkalog.conformance.campaign.synthetic import slow_synthetic_run_seed, synthetic_run_seed
from kafkalog.conformance.campaign.task import TaskSpec

pytestmark = pytest.mark.spark
SLOW = "kafkalog.conformance.campaign.synthetic:slow_synthetic_run_seed"


def seeds_on_disk(out: Path, campaign_id: str) -> list[int]:
    """Every row's seed in the campaign's Parquet files, duplicates kept, sorted."""
    folder = out / "runs" / f"campaign_id={campaign_id}"
    return sorted(pq.read_table(folder, columns=["seed"]).column("seed").to_pylist())


def data_files(out: Path, campaign_id: str) -> list[Path]:
    return sorted((out / "runs" / f"campaign_id={campaign_id}").glob("*/*.parquet"))


def test_campaign__sigkilled_mid_wave_then_resumed__one_row_per_seed(
    spark: Any, out_dir: Path
) -> None:
    """SIGKILL (driver, JVM and workers) after a wave is published; the resume fills in exactly."""
    command = [
        sys.executable, "-c", "from kafkalog.cli.main import main; main()", "campaign",
        "--runs", "150", "--out", str(out_dir), "--campaign-id", "k", "--master", "local[2]",
        "--run-fn", SLOW, "--config-mix", "tiny",
    ]  # fmt: skip
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    partition = out_dir / "runs" / "campaign_id=k"
    deadline = time.monotonic() + 120
    try:
        while not list(partition.glob("w-*")) and child.poll() is None:
            assert time.monotonic() < deadline, "no wave was published in 120 s"
            time.sleep(0.1)
        assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    killed = seeds_on_disk(out_dir, "k")
    assert 0 < len(killed) < 150 and len(set(killed)) == len(killed)  # whole waves, no dupes
    spec = TaskSpec("k", 60, ("tiny",), run_fn=slow_synthetic_run_seed)
    done = run_campaign(spark, CampaignPlan(spec, 150, 0, str(out_dir)))
    assert (done.already_recorded, done.executed) == (len(killed), 150 - len(killed))
    assert seeds_on_disk(out_dir, "k") == list(range(150))
    assert len(data_files(out_dir, "k")) == done.files == 1  # compacted
    assert not (out_dir / "_campaigns" / "k" / "staging").exists()


def test_campaign__two_ids_into_one_out_at_once__both_exact(spark: Any, out_dir: Path) -> None:
    """Two campaigns writing one --out concurrently each end with exactly their seeds."""
    results: dict[str, Any] = {}

    def run(campaign_id: str, runs: int) -> None:
        spec = TaskSpec(campaign_id, 8, ("tiny",), run_fn=slow_synthetic_run_seed)
        try:
            results[campaign_id] = run_campaign(
                spark, CampaignPlan(spec, runs, 0, str(out_dir)), first_wave=12
            )
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            results[campaign_id] = error

    threads = [threading.Thread(target=run, args=(cid, n)) for cid, n in (("a", 90), ("b", 70))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.waves >= 2 for r in results.values()), results  # both had waves to interleave
    assert seeds_on_disk(out_dir, "a") == list(range(90))
    assert seeds_on_disk(out_dir, "b") == list(range(70))
    assert len(data_files(out_dir, "a")) == len(data_files(out_dir, "b")) == 1
    whole = pq.read_table(out_dir / "runs")  # the whole dataset reads as a plain Hive layout
    assert whole.num_rows == 160 and set(whole.column("campaign_id").to_pylist()) == {"a", "b"}


def test_check_complete__a_published_file_lost__fails_naming_the_gap(
    spark: Any, out_dir: Path
) -> None:
    """Rows missing on disk are an error (not a quiet smaller report)."""
    spec = TaskSpec("g", 8, ("tiny",), run_fn=synthetic_run_seed)
    plan = CampaignPlan(spec, 40, 0, str(out_dir))
    run_campaign(spark, plan, first_wave=12)
    check_complete(spark, plan)
    for part in data_files(out_dir, "g"):
        part.unlink()
    with pytest.raises(CampaignIncompleteError, match=r"has 0 rows for 0 of the 40 seeds 0..39"):
        check_complete(spark, plan)


def test_hadoop_store__file_uri__same_contract_as_the_local_store(
    spark: Any, tmp_path: Path
) -> None:
    """The store used for hdfs:// and s3a:// outs, driven through Hadoop's file:// system."""
    from kafkalog.conformance.campaign.store import HadoopStore

    store, root = HadoopStore(spark), f"file://{tmp_path}/h"
    store.mkdirs(f"{root}/a")
    assert store.create_exclusive(f"{root}/lock", "one") is True
    assert store.create_exclusive(f"{root}/lock", "two") is False
    assert store.read_text(f"{root}/lock") == "one" and store.read_text(f"{root}/none") is None
    store.write_text(f"{root}/a/params.json", '{"x": 1}')
    store.rename(f"{root}/a", f"{root}/b")
    visible = [name for name in store.children(root) if not name.startswith(".")]  # not .crc
    assert visible == ["b", "lock"] and store.read_text(f"{root}/b/params.json") == '{"x": 1}'
    with pytest.raises(OSError):
        store.mkdirs(f"{root}/c")
        store.rename(f"{root}/c", f"{root}/b")  # never merges into an existing directory
    store.delete(f"{root}/b")
    assert not store.exists(f"{root}/b") and store.exists(f"{root}/lock")
