"""The import arrows of docs/design.md, checked by parsing every module with `ast`.

Every package is covered, function-level imports included:

    model       -> the standard library only
    impl        -> the standard library, crc32c, cramjam, and the model's values and errors
    conformance -> model, impl (and its third-party tools)
    benchmarks  -> model, impl, conformance
    cli         -> everything
    nothing     -> cli

and the module graph has no cycles, so every room can be read (and tested) before the rooms
that use it.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
IMPL_ALLOWED_FROM_MODEL = {"kafkalog.model.errors", "kafkalog.model.values"}
IMPL_THIRD_PARTY = {"crc32c", "cramjam"}
FOLDERS = {
    "model": "kafkalog.model",
    "impl": "kafkalog.impl",
    "conformance": "kafkalog.conformance",
    "benchmarks": "kafkalog.benchmarks",
    "kafkalog": "kafkalog",
}
# Which first-party packages each package may import (besides itself).
MAY_IMPORT = {
    "kafkalog.model": set(),
    "kafkalog.impl": {"kafkalog.model"},  # narrowed to values and errors below
    "kafkalog.conformance": {"kafkalog.model", "kafkalog.impl", "kafkalog.resources",
                             "kafkalog._build_commit", "kafkalog"},
    "kafkalog.benchmarks": {"kafkalog.model", "kafkalog.impl", "kafkalog.conformance",
                            "kafkalog"},
}


def module_name(path: Path, root: Path = ROOT) -> str:
    """`impl/log/log.py` -> `kafkalog.impl.log.log`; a package's `__init__.py` -> the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    rest = parts[1:-1] if parts[-1] == "__init__" else parts[1:]
    return ".".join([FOLDERS[parts[0]], *rest])


def imported_modules(path: Path, root: Path = ROOT) -> list[str]:
    """Absolute module names one file imports (relative ones resolved against its package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            if node.level and node.module:
                names.append(f"{base}.{node.module}")
            elif node.level:
                names.extend(f"{base}.{alias.name}" for alias in node.names)
            else:
                names.append(node.module or "")
    return names


def modules_of(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def owner(name: str) -> str:
    """The top package a first-party module belongs to (`kafkalog.cli.main` -> `kafkalog.cli`)."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else name


@pytest.mark.parametrize("path", modules_of("model"), ids=lambda p: str(p.relative_to(ROOT)))
def test_model_module__imports_only_stdlib_and_model(path: Path) -> None:
    """model/ is the oracle: the standard library and its own modules, nothing else."""
    for name in imported_modules(path):
        top = name.split(".")[0]
        assert top in STDLIB or name.startswith("kafkalog.model"), f"{path} imports {name}"


@pytest.mark.parametrize("path", modules_of("impl"), ids=lambda p: str(p.relative_to(ROOT)))
def test_impl_module__never_imports_model_operations(path: Path) -> None:
    """impl/ may share the model's values and errors, never its operations."""
    for name in imported_modules(path):
        top = name.split(".")[0]
        if name.startswith("kafkalog.model"):
            assert name in IMPL_ALLOWED_FROM_MODEL, f"{path} imports {name}"
        elif name.startswith("kafkalog."):
            assert name.startswith("kafkalog.impl"), f"{path} imports {name}"
        else:
            assert top in STDLIB or top in IMPL_THIRD_PARTY, f"{path} imports {name}"


@pytest.mark.parametrize("folder", ["conformance", "benchmarks"])
def test_package__imports_only_the_packages_below_it(folder: str) -> None:
    """conformance/ uses model and impl; benchmarks/ those and conformance; neither the CLI."""
    own = FOLDERS[folder]
    wrong = [f"{path.relative_to(ROOT)} imports {name}"
             for path in modules_of(folder) for name in imported_modules(path)
             if name.startswith("kafkalog") and owner(name) != own
             and owner(name) not in MAY_IMPORT[own]]
    assert wrong == []


def test_nothing_outside_the_cli__imports_the_cli() -> None:
    """The CLI is the top of the house: no package below it imports `kafkalog.cli`."""
    wrong = [f"{path.relative_to(ROOT)} imports {name}"
             for folder in ("model", "impl", "conformance", "benchmarks")
             for path in modules_of(folder) for name in imported_modules(path)
             if name == "kafkalog.cli" or name.startswith("kafkalog.cli.")]
    assert wrong == []


def first_party_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the first-party modules it imports, function-level imports included.

    Importing a package's `__init__` from inside that package is not an edge: Python runs the
    parent first anyway, and the `__init__` files here hold only docstrings and re-exports.
    """
    paths = [p for folder in FOLDERS for p in (root / folder).rglob("*.py")]
    modules = {module_name(p, root): p for p in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_modules(path, root):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(imported + "."):
                targets.add(imported)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_module_graph__has_no_cycles() -> None:
    """No two modules import each other, directly or through others (lazy imports included)."""
    assert cycles(first_party_graph()) == []


def test_import_checker__catches_a_wrong_arrow(tmp_path: Path) -> None:
    """The checker itself sees `from kafkalog.model.log import ...` inside impl/."""
    bad = tmp_path / "impl" / "log" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from kafkalog.model.log import append_as_leader\nfrom ..fs import files\n")
    assert imported_modules(bad, tmp_path) == ["kafkalog.model.log", "kafkalog.impl.fs"]


def test_cycle_finder__finds_a_three_module_cycle() -> None:
    """The cycle check can fail: a -> b -> c -> a is one component, d outside it."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(graph) == [["a", "b", "c"]]
