"""Checks a campaign makes before it pays for Spark: extras installed, options sane, work to do.

Starting Spark costs 10-25 s on a small machine, and its failures arrive as Java and Python
tracebacks. So everything that can be decided without it is decided here first, and fails as one
typed line (exit 2): the `spark` extra missing, a malformed `--master`, an `--out` that cannot be
a directory, an adapter that fails its handshake. And when every seed is already recorded,
compacted and reported, nothing starts at all: the recorded summary is shown again.

This module imports neither pyspark nor pyarrow at import time.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any

from kafkalog.conformance.adapter.subprocess_sut import AdapterProcess
from kafkalog.conformance.campaign.errors import CampaignOptionsError, SparkMissingError
from kafkalog.conformance.campaign.store import (
    CampaignLayout,
    LocalStore,
    campaign_params,
    is_local,
    local_path,
    local_seeds,
    params_differ,
)
from kafkalog.conformance.errors import AdapterError

SPARK_EXTRA = ("pyspark", "pyarrow", "pandas")
INSTALL_HINT = "pip install 'kafkalog[spark]'"
_MASTER = re.compile(
    r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?"
    r"|local-cluster\[[1-9]\d*,[1-9]\d*,[1-9]\d*\]"
    r"|spark://[^\s/:]+(:\d+)?(,[^\s/:]+(:\d+)?)*"
    r"|yarn"
    r"|k8s://\S+"
)


def require_spark_extra(command: str) -> None:
    """Raise SparkMissingError naming the install command when pyspark/pyarrow/pandas is absent."""
    missing = [name for name in SPARK_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise SparkMissingError(
            f"`kafkalog {command}` runs on Spark and needs {', '.join(missing)}: "
            f"{INSTALL_HINT} (Java 17+ too)",
            where=command,
        )


def check_master(master: str) -> None:
    """A master Spark would accept: local[N], local-cluster[..], spark://, yarn or k8s://."""
    if not _MASTER.fullmatch(master):
        raise CampaignOptionsError(
            "not a Spark master: use local, local[N], local[*], local[N,F], "
            "local-cluster[N,C,MB], spark://host:port, yarn or k8s://https://host:port",
            where=f"--master {master}",
        )


def check_out(out: str) -> None:
    """A local --out must be (or become) a writable directory; URIs are checked by Spark."""
    if not is_local(out):
        return
    path = local_path(out)
    if path.exists() and not path.is_dir():
        raise CampaignOptionsError("--out exists and is not a directory", where=str(path))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CampaignOptionsError(
            f"cannot create --out: {error.strerror}", where=str(path)
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise CampaignOptionsError("--out is not writable", where=str(path))


def check_adapter(adapter: str | None) -> None:
    """Start the adapter once and complete the handshake, so a bad one fails here, once."""
    if adapter is None or adapter == "model":
        return

    try:
        AdapterProcess(adapter).close()
    except AdapterError as error:
        raise CampaignOptionsError(
            f"the adapter failed its handshake: {one_line(str(error))}", where="--adapter"
        ) from None


def one_line(text: str, limit: int = 300) -> str:
    """Text with its line breaks folded, cut to `limit` characters."""
    folded = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return folded if len(folded) <= limit else folded[: limit - 3] + "..."


def recorded_summary(plan: Any, report_root: Path) -> Any | None:
    """The campaign's saved summary when this invocation has nothing to do, else None.

    Nothing to do means (local --out only): the recorded parameters equal the plan's, every seed
    of the range has exactly one row, the rows are compacted into one file, and the saved
    summary.json counts all of them. Reads Parquet footers and one column with pyarrow.
    """
    # aggregate needs pyarrow (an optional dependency, through campaign.task): only this check
    # loads it, so the others run without it.
    from kafkalog.conformance.campaign.aggregate import CampaignSummary

    if not is_local(plan.out):
        return None
    layout = CampaignLayout(plan.out, plan.spec.campaign_id)
    recorded = _loads(LocalStore().read_text(f"{layout.meta}/params.json") or "")
    if not isinstance(recorded, dict) or params_differ(recorded, campaign_params(plan.spec)):
        return None  # a mismatch is reported by the full path, with its message
    saved = local_path(str(report_root)) / plan.spec.campaign_id / "summary.json"
    files = list(local_path(layout.partition).glob("*/*.parquet"))
    if len(files) != 1 or not saved.is_file() or saved.stat().st_mtime < files[0].stat().st_mtime:
        return None
    seeds = local_seeds(layout) or []
    wanted = set(range(plan.seed_base, plan.seed_base + plan.runs))
    if len(seeds) != len(set(seeds)) or not wanted <= set(seeds):
        return None
    summary = CampaignSummary.from_json(saved.read_text())
    return summary if summary.runs == len(seeds) else None


def _loads(text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return None
