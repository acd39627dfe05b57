"""The record of one reintroduced bug, and how it is stated against the current implementation.

A bug is stated in one of two ways, so that it cannot drift from the code it breaks:

- a replacement callable for a small named step of `kafkalog.impl` (a method that does one
  thing, such as `_truncated` or `_make_recovery_durable`), or a wrapper that calls the real
  method and changes its arguments or result: neither copies the implementation's code;
- a `Diff`: exact old -> new text replacements applied to the current source of the method
  when the variant is first installed, compiled in the method's own module. When the
  implementation has moved on and an old text is gone, the variant fails with a
  `StaleBrokenImplError` naming it and the missing text, instead of quietly running a copy of
  code the implementation no longer has (which would plant bugs nobody declared).
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kafkalog.conformance.errors import StaleBrokenImplError

# The one `from __future__` feature that still changes compilation (the import above binds its
# feature object); a real function's code flags say whether its module uses it.
_FUTURE_FLAGS = annotations.compiler_flag


@dataclass(frozen=True)
class Diff:
    """The bug as text replacements in the current source of a function: each `old` must occur
    exactly once. `source` is the function whose text is edited when it is not the patched
    attribute itself (a pure helper the patched module calls, such as `py_index_decisions`)."""

    edits: tuple[tuple[str, str], ...]
    source: Callable[..., Any] | None = None


def diff(*edits: tuple[str, str], source: Callable[..., Any] | None = None) -> Diff:
    """`Diff` from (old, new) pairs, in the order they are applied."""
    return Diff(tuple(edits), source)


@dataclass(frozen=True)
class Patch:
    """One more attribute a bug changes, when the implementation has the code it breaks twice
    (a compiled fast path's Python twin beside the per-batch path)."""

    owner: Any  # a class or a module
    attribute: str
    replacement: Callable[..., Any] | Diff | Any


@dataclass(frozen=True)
class Broken:
    """One reintroduced bug: where it is patched and what it breaks."""

    name: str
    bug: str  # BUG-n of the reference
    rule: str  # the rule it breaks
    summary: str
    owner: Any  # a class or a module
    attribute: str
    replacement: Callable[..., Any] | Diff | Any
    also: tuple[Patch, ...] = ()

    def patches(self) -> tuple[Patch, ...]:
        """Every attribute the bug changes, the main one first."""
        return (Patch(self.owner, self.attribute, self.replacement), *self.also)


def defining_class(broken: Broken, patch: Patch | None = None) -> Any:
    """Where the patched attribute is defined: the owner itself (a module or a class) or the
    class in its MRO that defines it (`Log`'s methods live in mixins such as `LogDeletion`).
    Patches go there, so they take effect and come out cleanly."""
    owner, attribute = (broken.owner, broken.attribute) if patch is None else (
        patch.owner, patch.attribute)
    for home in getattr(owner, "__mro__", (owner,)):
        if attribute in vars(home):
            return home
    # The implementation was refactored under the patch.
    raise StaleBrokenImplError(
        f"broken implementation {broken.name!r} patches {owner.__name__}.{attribute}, which "
        f"the implementation no longer has"
    )


_built: dict[tuple[str, str, str], Any] = {}


def replacement(broken: Broken, patch: Patch | None = None) -> Any:
    """The value installed in place of the real attribute: the declared callable, or the real
    one's current source with the `Diff` applied (built once per process, while the real
    attribute is in place). Raises StaleBrokenImplError when a diff no longer applies."""
    patch = patch or broken.patches()[0]
    if not isinstance(patch.replacement, Diff):
        return patch.replacement
    home = defining_class(broken, patch)
    key = (broken.name, getattr(home, "__qualname__", home.__name__), patch.attribute)
    if key not in _built:
        real = vars(home)[patch.attribute]
        _built[key] = _rewrap(real, build(broken, patch.replacement, real))
    return _built[key]


def plan(broken: Broken) -> list[tuple[Any, str, Any]]:
    """(where, attribute, value) for every attribute the bug changes; builds every diff first,
    so a stale one fails before anything is patched."""
    return [(defining_class(broken, p), p.attribute, replacement(broken, p))
            for p in broken.patches()]


def apply(broken: Broken) -> list[tuple[Any, str, Any]]:
    """Install the bug; returns the originals for `restore`."""
    steps = plan(broken)
    originals = [(home, attribute, vars(home)[attribute]) for home, attribute, _ in steps]
    for home, attribute, value in steps:
        setattr(home, attribute, value)
    return originals


def restore(originals: list[tuple[Any, str, Any]]) -> None:
    """Put back what `apply` replaced."""
    for home, attribute, original in reversed(originals):
        setattr(home, attribute, original)


@contextmanager
def installed(broken: Broken) -> Iterator[Broken]:
    """The bug installed for the duration of the block (not reference-counted)."""
    originals = apply(broken)
    try:
        yield broken
    finally:
        restore(originals)


def real_function(attribute: Any) -> Callable[..., Any]:
    """The plain function behind a method, staticmethod, classmethod or property."""
    if isinstance(attribute, property):
        assert attribute.fget is not None
        return attribute.fget
    return getattr(attribute, "__func__", attribute)  # type: ignore[no-any-return]


def current_source(function: Callable[..., Any]) -> str:
    """The function's definition as it is now in its file (indented as there, so a diff's old
    text can be found with grep), without its decorators."""
    text = inspect.getsource(function)
    node = ast.parse(textwrap.dedent(text)).body[0]
    if not isinstance(node, ast.FunctionDef) or node.name != function.__name__:
        # The file changed since the module was imported: its lines are not this function's.
        raise StaleBrokenImplError(
            f"the source of {function.__qualname__} in {inspect.getsourcefile(function)} is no "
            f"longer the code that was imported")
    return "".join(text.splitlines(keepends=True)[node.lineno - 1:])


def applied_source(name: str, patch: Diff, source: str) -> str:
    """`source` with every edit of `patch` applied; raises StaleBrokenImplError naming the
    variant and the text when an old text is missing or ambiguous."""
    for old, new in patch.edits:
        found = source.count(old)
        if found != 1:
            raise StaleBrokenImplError(
                f"broken implementation {name!r} no longer applies: the text {old!r} occurs "
                f"{found} times (not once) in the current source")
        source = source.replace(old, new)
    return source


def build(broken: Broken, patch: Diff, real: Any) -> Callable[..., Any]:
    """Compile the edited source in the real function's module, with its closure and its
    `from __future__` flags."""
    function = patch.source or real_function(real)
    edited = applied_source(broken.name, patch, current_source(function))
    code = function.__code__
    free = code.co_freevars
    # The source keeps its indentation, so its docstring and every constant stay exactly the
    # real function's: a method is compiled inside an `if` block, a closure inside a factory
    # that hands it the closure's values (`__class__` for a bare `super()`).
    indent = edited[: len(edited) - len(edited.lstrip())]
    if free:
        block = edited if indent else textwrap.indent(edited, "    ")
        text = (f"def _factory({', '.join(free)}):\n{block}"
                f"{indent or '    '}return {code.co_name}\n")
    else:
        text = f"if True:\n{edited}" if indent else edited
    # The compiler reads an attribute of an imported name differently from one of another
    # global (LOAD_ATTR, not LOAD_METHOD); the module's imports, declared but never run, keep
    # the bytecode the real function's.
    imported = _imported_names(function)
    if imported:
        text = f"if False:\n    import {', '.join(imported)}\n{text}"
    filename = f"<broken {broken.name}: {inspect.getsourcefile(function)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {}
    compiled = compile(text, filename, "exec", flags=code.co_flags & _FUTURE_FLAGS,
                       dont_inherit=True)
    exec(compiled, function.__globals__, namespace)  # noqa: S102 - the declared diff's source
    made: Callable[..., Any] = (
        namespace["_factory"](*(cell.cell_contents for cell in function.__closure__ or ()))
        if free else namespace[code.co_name])
    made.__qualname__ = function.__qualname__
    made.__broken_source__ = edited  # type: ignore[attr-defined]
    return made


def _imported_names(function: Callable[..., Any]) -> list[str]:
    """The names the function's module binds by import at its top level."""
    module = inspect.getmodule(function)
    if module is None:
        return []
    names: list[str] = []
    pending: list[ast.stmt] = list(ast.parse(inspect.getsource(module)).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            names += [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for field in ("body", "orelse", "finalbody", "handlers"):
                pending += getattr(node, field, [])
    return sorted(set(names) - {"*"})


def _rewrap(real: Any, function: Callable[..., Any]) -> Any:
    """`function` dressed like the real attribute (staticmethod, classmethod, property)."""
    if isinstance(real, staticmethod):
        return staticmethod(function)
    if isinstance(real, classmethod):
        return classmethod(function)
    if isinstance(real, property):
        return property(function, real.fset, real.fdel, real.__doc__)
    return function
