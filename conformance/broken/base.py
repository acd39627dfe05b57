"""The record of one reintroduced bug, shared by broken.py and the modules that add to it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalog.conformance.errors import UnknownBrokenImplError


@dataclass(frozen=True)
class Broken:
    """One reintroduced bug: where it is patched and what it breaks."""

    name: str
    bug: str  # BUG-n of the reference
    rule: str  # the rule it breaks
    summary: str
    owner: type
    attribute: str
    replacement: Callable[..., Any]


def defining_class(broken: Broken) -> Any:
    """Where the patched attribute is defined: the owner itself (a module or a class) or the
    class in its MRO that defines it (`Log`'s methods live in mixins such as `LogDeletion`).
    Patches go there, so they take effect and come out cleanly."""
    for home in getattr(broken.owner, "__mro__", (broken.owner,)):
        if broken.attribute in vars(home):
            return home
    # The implementation was refactored under the patch.
    raise UnknownBrokenImplError(
        f"broken implementation {broken.name!r} patches {broken.owner.__name__}."
        f"{broken.attribute}, which the implementation no longer has"
    )

