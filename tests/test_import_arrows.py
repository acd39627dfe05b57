"""The import arrows of docs/design.md, checked by parsing every module with `ast`."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
IMPL_ALLOWED_FROM_MODEL = {"kafkalog.model.errors", "kafkalog.model.values"}
IMPL_THIRD_PARTY = {"crc32c", "cramjam"}


def imported_modules(path: Path) -> list[str]:
    """Absolute module names one file imports (relative ones resolved against its package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = "kafkalog." + path.parent.name
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                if node.module:
                    names.append(f"{base}.{node.module}")
                else:
                    names.extend(f"{base}.{alias.name}" for alias in node.names)
            else:
                names.append(node.module or "")
    return names


def modules_of(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", modules_of("model"), ids=lambda p: p.name)
def test_model_module__imports_only_stdlib_and_model(path: Path) -> None:
    """model/ is the oracle: the standard library and its own modules, nothing else."""
    for name in imported_modules(path):
        top = name.split(".")[0]
        assert top in STDLIB or name.startswith("kafkalog.model"), f"{path.name} imports {name}"


@pytest.mark.parametrize("path", modules_of("impl"), ids=lambda p: p.name)
def test_impl_module__never_imports_model_operations(path: Path) -> None:
    """impl/ may share the model's values and errors, never its operations."""
    for name in imported_modules(path):
        top = name.split(".")[0]
        if name.startswith("kafkalog.model"):
            assert name in IMPL_ALLOWED_FROM_MODEL, f"{path.name} imports {name}"
        elif name.startswith("kafkalog."):
            assert name.startswith("kafkalog.impl"), f"{path.name} imports {name}"
        else:
            assert top in STDLIB or top in IMPL_THIRD_PARTY, f"{path.name} imports {name}"


def test_import_checker__catches_a_wrong_arrow(tmp_path: Path) -> None:
    """The checker itself sees `from kafkalog.model.log import ...` inside impl/."""
    bad = tmp_path / "impl" / "bad.py"
    bad.parent.mkdir()
    bad.write_text("from kafkalog.model.log import append_as_leader\nfrom . import fs\n")
    assert imported_modules(bad) == ["kafkalog.model.log", "kafkalog.impl.fs"]
