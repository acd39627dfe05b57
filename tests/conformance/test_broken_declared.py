"""Every broken implementation differs from the real one exactly where it says it does.

A broken implementation is stated against the current code (conformance/broken/base.py): a
`Diff` of a function's current source, or a callable standing in for a small named step or
wrapping the real method. These tests hold each one to its statement, so none can drift into a
stale copy of code the implementation has since changed (a copy plants bugs nobody declared):

- a diff's compiled source is the current source with exactly its declared replacements, and the
  same build without the replacements compiles to the real function's bytecode;
- a callable takes the real attribute's parameters and copies none of its code;
- installing a variant changes exactly the attributes it declares, nothing else in
  `kafkalog.impl`;
- a diff whose text the implementation no longer has fails with a typed error naming the
  variant and the text.
"""

from __future__ import annotations

import inspect
import sys
import textwrap
from typing import Any

import pytest
from kafkalog.conformance.broken.base import (
    Broken,
    Diff,
    Patch,
    apply,
    build,
    current_source,
    defining_class,
    diff,
    real_function,
    replacement,
    restore,
)
from kafkalog.conformance.broken.kafka_durability import KAFKA_FSYNC_CHOICES
from kafkalog.conformance.broken.registry import all_broken
from kafkalog.conformance.broken.variants import VARIANTS
from kafkalog.conformance.errors import StaleBrokenImplError
from kafkalog.impl.log.log import Log

ALL: dict[str, Broken] = {**all_broken(), KAFKA_FSYNC_CHOICES.name: KAFKA_FSYNC_CHOICES,
                          **{name: v.as_broken() for name, v in VARIANTS.items()}}
PATCHES = [(name, i) for name, b in sorted(ALL.items()) for i in range(len(b.patches()))]
DIFFS = [(n, i) for n, i in PATCHES if isinstance(ALL[n].patches()[i].replacement, Diff)]
CALLABLES = [(n, i) for n, i in PATCHES if callable(ALL[n].patches()[i].replacement)
             and not isinstance(ALL[n].patches()[i].replacement, Diff)]
# Lines a wrapper may share with the method it wraps without copying it.
TRIVIAL = {"return", "pass", "else:", "try:", "finally:", "with self.lock:", "with self._lock:"}
MAX_SHARED_LINES = 2


def _real(broken: Broken, patch: Patch) -> Any:
    return vars(defining_class(broken, patch))[patch.attribute]


def _compiled(code: Any) -> tuple[Any, ...]:
    """What a code object executes, without where it came from (file, line numbers)."""
    consts = tuple(_compiled(c) if inspect.iscode(c) else c for c in code.co_consts)
    return code.co_code, code.co_names, code.co_varnames, consts


def _code_lines(function: Any) -> set[str]:
    """The statement lines of a function's body: no docstring, comments or trivial lines."""
    lines = textwrap.dedent(inspect.getsource(function)).splitlines()
    body, in_doc = [], False
    for raw in lines[1:]:
        line = raw.split("  #")[0].strip()
        if line.startswith(('"""', "'''")):
            in_doc = not (in_doc or (len(line) > 3 and line.endswith(line[:3])))
            continue
        if in_doc or not line or line.startswith("#") or line in TRIVIAL:
            continue
        body.append(line)
    return set(body)


@pytest.mark.parametrize(("name", "index"), DIFFS, ids=[f"{n}-{i}" for n, i in DIFFS])
def test_diff_variant__compiled_source__is_the_current_source_with_exactly_its_edits(
        name: str, index: int) -> None:
    """The installed function's source is today's source with each declared replacement made
    once, and nothing else: no stale copy, no undeclared change."""
    broken = ALL[name]
    patch = broken.patches()[index]
    assert isinstance(patch.replacement, Diff)
    real = _real(broken, patch)
    source = current_source(patch.replacement.source or real_function(real))
    expected = source
    for old, new in patch.replacement.edits:
        assert source.count(old) == 1, (name, old)
        assert old != new
        expected = expected.replace(old, new)
    built = real_function(replacement(broken, patch))
    assert built.__broken_source__ == expected  # type: ignore[attr-defined]
    original = real_function(patch.replacement.source or real_function(real)).__code__
    assert _compiled(built.__code__) != _compiled(original)


@pytest.mark.parametrize(("name", "index"), DIFFS, ids=[f"{n}-{i}" for n, i in DIFFS])
def test_diff_variant__built_without_its_edits__is_the_real_function(name: str,
                                                                      index: int) -> None:
    """Compiling the current source in the function's own module gives back the real bytecode,
    names and constants, so the edits are the only difference the build makes."""
    broken = ALL[name]
    patch = broken.patches()[index]
    assert isinstance(patch.replacement, Diff)
    real = _real(broken, patch)
    original = patch.replacement.source or real_function(real)
    rebuilt = build(broken, Diff((), patch.replacement.source), real)
    assert _compiled(rebuilt.__code__) == _compiled(original.__code__)
    assert rebuilt.__defaults__ == original.__defaults__
    assert rebuilt.__globals__ is original.__globals__


@pytest.mark.parametrize(("name", "index"), CALLABLES,
                         ids=[f"{n}-{i}" for n, i in CALLABLES])
def test_step_or_wrapper_variant__takes_the_real_parameters_and_copies_no_code(
        name: str, index: int) -> None:
    """A callable stands in for a small named step or wraps the real method: it accepts what
    the real attribute accepts (a signature the implementation changed is drift), and shares
    at most two statement lines with it (more is a copy)."""
    broken = ALL[name]
    patch = broken.patches()[index]
    real = real_function(_real(broken, patch))
    fake = real_function(patch.replacement)
    assert list(inspect.signature(fake).parameters) == list(inspect.signature(real).parameters)
    shared = _code_lines(fake) & _code_lines(real)
    assert len(shared) <= MAX_SHARED_LINES, shared


def _impl_attributes() -> dict[tuple[str, str], Any]:
    """Every attribute of every module of kafkalog.impl and of the classes they define."""
    seen: dict[tuple[str, str], Any] = {}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("kafkalog.impl") or module is None:
            continue
        for attribute, value in vars(module).items():
            seen[(module_name, attribute)] = value
            if inspect.isclass(value) and value.__module__ == module_name:
                for member, inner in vars(value).items():
                    seen[(f"{module_name}.{value.__qualname__}", member)] = inner
    return seen


def _where(home: Any) -> str:
    return home.__name__ if inspect.ismodule(home) else f"{home.__module__}.{home.__qualname__}"


@pytest.mark.parametrize("name", sorted(ALL))
def test_installed_variant__changes_exactly_the_attributes_it_declares(name: str) -> None:
    """Installing changes the declared attributes of kafkalog.impl and nothing else;
    uninstalling gives every one back."""
    broken = ALL[name]
    declared = {(_where(defining_class(broken, p)), p.attribute) for p in broken.patches()}
    before = _impl_attributes()
    originals = apply(broken)
    try:
        during = _impl_attributes()
    finally:
        restore(originals)
    changed = {key for key in before if during.get(key) is not before[key]}
    assert changed == declared
    after = _impl_attributes()
    assert all(after[key] is before[key] for key in before)


def test_diff_variant__text_the_implementation_no_longer_has__fails_naming_variant_and_text(
) -> None:
    """A diff whose old text is gone is a typed error naming the variant and the missing text,
    raised before anything is patched."""
    stale = Broken("stale_example", "BUG-54", "LOG-40", "an example", Log, "truncate_to",
                   diff(("self._truncated()", "pass"),
                        ("if target_offset < self.hw_that_never_was:", "if False:")))
    real = vars(defining_class(stale))["truncate_to"]
    with pytest.raises(StaleBrokenImplError) as raised:
        apply(stale)
    assert "stale_example" in str(raised.value)
    assert "self.hw_that_never_was" in str(raised.value)
    assert vars(defining_class(stale))["truncate_to"] is real


def test_diff_variant__ambiguous_text__fails_instead_of_picking_one() -> None:
    """An old text found twice is as stale as one found nowhere: the diff must say which."""
    ambiguous = Broken("ambiguous_example", "BUG-54", "LOG-40", "an example", Log, "truncate_to",
                       diff(("self.", "self .")))
    with pytest.raises(StaleBrokenImplError, match="ambiguous_example"):
        apply(ambiguous)


def test_variant__of_an_attribute_the_implementation_no_longer_has__fails_naming_it() -> None:
    """A patch of a method that was renamed away fails loudly too, not with an AttributeError."""
    gone = Broken("gone_example", "BUG-54", "LOG-40", "an example", Log, "no_such_method",
                  diff(("a", "b")))
    with pytest.raises(StaleBrokenImplError, match="gone_example.*no_such_method"):
        apply(gone)
