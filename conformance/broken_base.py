"""The record of one reintroduced bug, shared by broken.py and the modules that add to it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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
