"""The findings `kafkalog verify` reports (impl/verify/verifier.py): a problem or a note about one
file.

Split from verifier.py by concern, with `scan.py` (the `.log` scan) and `index.py` (the
index checks); `kafkalog.impl.verify.verifier` re-exports every public name, so its import path
stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    """A problem makes `verify` exit 1; a note is information only."""

    PROBLEM = "problem"
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    """One observation about one file; `position` is a byte position (or line for checkpoints)."""

    severity: Severity
    kind: str
    path: str
    position: int | None
    message: str
    rule: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity.value, "kind": self.kind, "path": self.path,
                "position": self.position, "message": self.message, "rule": self.rule}

    def __str__(self) -> str:
        where = self.path if self.position is None else f"{self.path}@{self.position}"
        rule = f" [{self.rule}]" if self.rule else ""
        return f"{self.severity.value}: {self.kind}: {where}: {self.message}{rule}"


def problem(kind: str, path: str, position: int | None, message: str, rule: str) -> Finding:
    """A finding that makes `verify` exit 1."""
    return Finding(Severity.PROBLEM, kind, path, position, message, rule)


def note(kind: str, path: str, position: int | None, message: str, rule: str) -> Finding:
    """A finding for information only."""
    return Finding(Severity.NOTE, kind, path, position, message, rule)
