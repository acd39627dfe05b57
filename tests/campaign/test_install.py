"""`pip install kafkalog` from a built wheel, into fresh venvs, with and without the spark extra.

Offline and bounded: the wheel is built without build isolation (the project venv's setuptools,
77 or later), and the fresh venvs get their dependencies from the project venv's site-packages
through a `.pth` line naming a folder of symlinks to exactly the distributions the install may
use (the light dependencies' closure, plus the spark extra's for the second venv). pip then
installs the wheel with `--no-index`, checking those requirements as it would from PyPI, and
the commands run from the installed wheel (its `specs/` data included), not from this checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from kafkalog.conformance.check.coverage import all_rule_ids

pytestmark = pytest.mark.spark  # one Spark start (the campaign of the [spark] install)
ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("kafkalog", "model", "impl", "conformance", "benchmarks", "specs")


def source_tree(dest: Path) -> Path:
    """A copy of what the build reads (the checkout gets no build/ folder)."""
    tree = dest / "src"
    for name in SOURCES:
        shutil.copytree(ROOT / name, tree / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    return tree


def build_wheel(dest: Path) -> Path:
    """Build kafkalog's wheel from a copy of the sources."""
    tree = source_tree(dest)
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--no-index", str(tree), "-w", str(dest)], check=True, timeout=300)
    return next(dest.glob("kafkalog-*.whl"))


def test_wheel_build__fresh_tree__prints_no_setuptools_warnings(tmp_path: Path) -> None:
    """A build names no warning (deprecated metadata, a data folder missing from `packages`)."""
    tree = source_tree(tmp_path)
    hook = "import sys, setuptools.build_meta as b; b.build_wheel(sys.argv[1])"
    (tmp_path / "dist").mkdir()
    built = subprocess.run([sys.executable, "-W", "default", "-c", hook, str(tmp_path / "dist")],
                           cwd=tree, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    warnings = re.findall(r"\w*Warning\b.*", built.stdout + built.stderr)
    assert warnings == []
    assert next((tmp_path / "dist").glob("kafkalog-*.whl"))


def closure(requirements: list[str], extras: tuple[str, ...] = ()) -> set[str]:
    """Names of the installed distributions `requirements` need, recursively (markers applied)."""
    from packaging.requirements import Requirement

    found: set[str] = set()
    todo = [(Requirement(text), extras) for text in requirements]
    while todo:
        requirement, wanted = todo.pop()
        name = requirement.name.lower().replace("_", "-")
        environments = [{"extra": extra} for extra in wanted] or [{"extra": ""}]
        if requirement.marker and not any(requirement.marker.evaluate(e) for e in environments):
            continue
        if name in found:
            continue
        found.add(name)
        needs = metadata.distribution(name).requires or []
        todo.extend((Requirement(text), tuple(requirement.extras)) for text in needs)
    return found


def link_site(names: set[str], dest: Path) -> Path:
    """A folder of symlinks to these distributions' top-level files (and their .dist-info)."""
    dest.mkdir()
    for name in names:
        dist = metadata.distribution(name)
        base = Path(str(dist.locate_file("")))
        for top in {Path(str(f)).parts[0] for f in dist.files or [] if ".." not in str(f)}:
            if (base / top).exists() and not (dest / top).exists():
                (dest / top).symlink_to(base / top)
    return dest


def fresh_venv(root: Path, deps: Path, wheel: Path, requirement: str) -> Path:
    """A venv seeing only `deps`, with kafkalog installed from the wheel by pip, offline."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    own = next((root / "lib").glob("python3*/site-packages"))
    (own / "deps.pth").write_text(f"{deps}\n")
    python = root / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index"]
    subprocess.run([*pip, "--find-links", str(wheel.parent), requirement], check=True, timeout=300)
    return root / "bin" / "kafkalog"


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_wheel__installed_with_and_without_spark_extra__main_commands_work(tmp_path: Path) -> None:
    """Light install: explain and check work, campaign names the extra; [spark]: campaign runs."""
    wheel = build_wheel(tmp_path / "dist")
    requires = metadata.distribution("kafkalog").requires or []
    light = [text for text in requires if "extra ==" not in text]
    spark_extra = closure([*light, "pyspark", "pandas", "pyarrow"])
    work = tmp_path / "work"  # nothing importable here: the commands must use the installed wheel
    work.mkdir()

    plain = fresh_venv(
        tmp_path / "plain", link_site(closure(light), tmp_path / "light"), wheel, "kafkalog"
    )
    probe = run([str(plain.parent / "python"), "-c", "import pyspark"], work)
    assert "No module named 'pyspark'" in probe.stderr  # the light venv really lacks Spark
    explained = run([str(plain), "explain", "kip-101"], work)
    assert explained.returncode == 0, explained.stderr[-2000:]
    assert "KIP-101" in explained.stdout or "kip-101" in explained.stdout.lower()
    checked = run([str(plain), "check", "--examples", "2", "--steps", "5", "--out", "c"], work)
    assert checked.returncode in (0, 1), checked.stderr[-2000:]
    assert f" of {len(all_rule_ids())}" in checked.stderr  # the rules came with the wheel
    arguments = {"campaign": [], "report": ["out"], "audit": [str(work), "--out", "a"]}
    for command, extra in arguments.items():
        refused = run([str(plain), command, *extra], work)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
        assert "pip install 'kafkalog[spark]'" in refused.stderr, refused.stderr

    full = fresh_venv(
        tmp_path / "full", link_site(spark_extra, tmp_path / "heavy"), wheel, "kafkalog[spark]"
    )
    args = ["campaign", "--runs", "4", "--steps", "5", "--master", "local[1]", "--out", "o"]
    done = run([str(full), *args, "--campaign-id", "w", "--config-mix", "tiny"], work)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    assert "4 runs in" in done.stdout and (work / "o" / "w" / "report.html").is_file()
    assert re.search(r"spec rules never exercised \(\d+ of \d+\)", done.stdout)
