"""The house tooling is part of the build: ruff on everything, `mypy --strict` on the model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff__whole_tree__is_clean() -> None:
    """`ruff check .` reports nothing (config in pyproject.toml)."""
    result = run_tool("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict__model__is_clean() -> None:
    """The oracle type-checks under `mypy --strict`."""
    result = run_tool("mypy", "--strict", "model/")
    assert result.returncode == 0, result.stdout + result.stderr


def test_pyproject__packages__lists_every_package_folder() -> None:
    """A new sub-package is declared for the wheel (package-dir maps folders, find does not)."""
    import tomllib

    folders = {"kafkalog": "kafkalog", "model": "kafkalog.model", "impl": "kafkalog.impl",
               "conformance": "kafkalog.conformance", "benchmarks": "kafkalog.benchmarks"}
    on_disk = {".".join([name, *init.parent.relative_to(ROOT / folder).parts])
               for folder, name in folders.items() for init in (ROOT / folder).rglob("__init__.py")}
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                   ["packages"])
    assert on_disk - declared == set()
