"""The exactly-once store without Spark: lock, recorded parameters, publish, recovery, ids."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kafkalog.conformance.campaign.errors import CampaignBusyError, CampaignOptionsError
from kafkalog.conformance.campaign.store import (
    SUPERSEDES,
    CampaignLayout,
    CampaignLock,
    LocalStore,
    campaign_params,
    check_campaign_id,
    check_params,
    publish,
    record_params,
    recover,
)
from kafkalog.conformance.campaign.synthetic import synthetic_run_seed
from kafkalog.conformance.campaign.task import TaskSpec


def layout(tmp_path: Path, campaign_id: str = "c1") -> CampaignLayout:
    return CampaignLayout(str(tmp_path / "out"), campaign_id)


def test_lock__held_by_a_live_process__second_writer_refused(tmp_path: Path) -> None:
    """One writer per campaign id: a second lock while the first is held names the holder."""
    where = layout(tmp_path)
    busy = pytest.raises(CampaignBusyError, match=f"being written by pid {os.getpid()}")
    with CampaignLock(LocalStore(), where, "a1"), busy:
        CampaignLock(LocalStore(), where, "a2").__enter__()
    with CampaignLock(LocalStore(), where, "a3"):  # released on exit: free again
        pass


def test_lock__left_by_a_killed_process__taken_over(tmp_path: Path) -> None:
    """A lock whose pid is gone on this host (a SIGKILLed writer) does not block a resume."""
    where = layout(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    Path(where.meta).mkdir(parents=True)
    holder = {"host": os.uname().nodename, "pid": int(dead.stdout), "attempt": "old"}
    Path(where.meta, "lock").write_text(json.dumps(holder))
    with CampaignLock(LocalStore(), where, "new"):
        assert json.loads(Path(where.meta, "lock").read_text())["attempt"] == "new"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"families": ("tiny", "tiny", "index_full")}, "families"),
        ({"time_limit_s": 30.0}, "time_limit_s"),
        ({"steps": 9}, "steps"),
        ({"broken": "truncate_keeps_hw"}, "broken"),
    ],
)
def test_check_params__resume_with_other_parameters__refused_naming_them(
    tmp_path: Path, change: dict[str, object], named: str
) -> None:
    """Another --config-mix, --time-limit, --steps or --broken under one id is refused."""
    base = TaskSpec("c1", 8, ("tiny", "index_full"), run_fn=synthetic_run_seed)
    where, store = layout(tmp_path), LocalStore()
    record_params(store, where, campaign_params(base))
    assert check_params(store, where, campaign_params(base)) is False  # same: accepted
    other = TaskSpec(**{**base.__dict__, **change})
    with pytest.raises(CampaignOptionsError, match=f"other parameters \\({named}: "):
        check_params(store, where, campaign_params(other))


def test_campaign_params__partial_run_fn_and_commit__do_not_count() -> None:
    """A delayed stand-in of the same run function, or another commit, is the same campaign."""
    plain = TaskSpec("c1", 8, ("tiny",), run_fn=synthetic_run_seed, commit="a")
    slow = TaskSpec(
        "c1", 8, ("tiny",), run_fn=functools.partial(synthetic_run_seed, delay_s=1), commit="b"
    )
    assert campaign_params(plain) == campaign_params(slow)
    assert campaign_params(plain)["families"] == ["tiny"]


@pytest.mark.parametrize("name", ["runs", "RUNS", "staging", "audit"])
def test_check_campaign_id__reserved_name__refused(name: str) -> None:
    """Ids that name folders of the --out layout are refused before anything is written."""
    with pytest.raises(CampaignOptionsError, match="is reserved"):
        check_campaign_id(name)


def test_publish__target_exists__never_merges(tmp_path: Path) -> None:
    """Publishing is one rename of the staged wave; it refuses to merge into an existing one."""
    where, store = layout(tmp_path), LocalStore()
    staged = tmp_path / "stage" / "campaign_id=c1"
    staged.mkdir(parents=True)
    (staged / "part-0.parquet").write_bytes(b"x")
    target = publish(store, where, str(tmp_path / "stage"), "w-a-00001")
    assert Path(target, "part-0.parquet").is_file() and not staged.exists()
    staged.mkdir(parents=True)
    with pytest.raises(OSError):
        publish(store, where, str(tmp_path / "stage"), "w-a-00001")


def test_recover__compaction_killed_before_deleting__finishes_it(tmp_path: Path) -> None:
    """Directories a published compaction supersedes are deleted; staging is cleared."""
    where, store = layout(tmp_path), LocalStore()
    partition = Path(where.partition)
    for name in ("w-a-00001", "w-a-00002", "c-b", "w-c-00001"):
        (partition / name).mkdir(parents=True)
    (partition / "c-b" / SUPERSEDES).write_text(json.dumps({"dirs": ["w-a-00001", "w-a-00002"]}))
    Path(where.staging("a"), "wave-00003").mkdir(parents=True)
    recover(store, where)
    assert sorted(p.name for p in partition.iterdir()) == ["c-b", "w-c-00001"]
    assert not Path(where.meta, "staging").exists()


def test_check_params__record_predating_a_new_field__its_default_matches(tmp_path: Path) -> None:
    """A params.json written before a TaskSpec field existed resumes with that field's default."""
    spec = TaskSpec("c1", 8, ("tiny",), run_fn=synthetic_run_seed)
    where, store = layout(tmp_path), LocalStore()
    old = campaign_params(spec)
    old.pop("kafka_version", None)
    record_params(store, where, old)
    assert check_params(store, where, campaign_params(spec)) is False
