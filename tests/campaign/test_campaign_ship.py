"""The cluster zip carries every Python package of the distribution, and never imports the CLI."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from kafkalog.conformance.campaign.ship import build_zip, packages

ROOT = Path(__file__).resolve().parents[2]


def test_ship_packages__are_the_python_packages_of_pyproject() -> None:
    """A package added to pyproject.toml (a new sub-package) must travel in the zip too."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = config["tool"]["setuptools"]["packages"]
    python = [name for name in declared if not name.startswith("kafkalog.specs")]
    assert sorted(packages()) == sorted(python)


def test_build_zip__holds_every_sub_package__and_the_launchers_run_python_m_kafkalog(
        tmp_path: Path) -> None:
    """The zip has the moved modules (e.g. model/producer/) and the launchers start the
    `kafkalog` entry point as a program, not by importing the CLI."""
    archive, launcher = build_zip(tmp_path)
    names = set(zipfile.ZipFile(archive).namelist())
    assert {"kafkalog/__main__.py", "kafkalog/model/producer/producer_state.py",
            "kafkalog/conformance/check/lockstep.py"} <= names
    for script in (launcher, launcher.with_name("audit_main.py")):
        assert "kafkalog.cli" not in script.read_text()
    done = subprocess.run([sys.executable, str(launcher), "--help"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.startswith("Usage: kafkalog campaign")
