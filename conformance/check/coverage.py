"""The catalogue of spec rule IDs, to report which ones a check never exercised.

Rules are defined in specs/log.md as bold list items (`- **KL-APPEND-1 Leader offsets** ...`);
the model's coverage classifier (model/coverage/rules.py) says which of them each step exercised.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from kafkalog.model.invariants import INVARIANTS

from kafkalog.resources import specs_dir

SPEC = specs_dir() / "log.md"  # the checkout's specs/, or the wheel's kafkalog/specs/
_DEFINITION = re.compile(r"^\s*-\s+\*\*(KL-[A-Z]+-\d+[a-z]?)\b", re.MULTILINE)


@functools.cache
def all_rule_ids(spec: Path = SPEC) -> frozenset[str]:
    """Every rule ID defined in `spec`; empty when the spec is not beside the package."""
    try:
        text = spec.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    return frozenset(_DEFINITION.findall(text))


_RULE_ID = re.compile(r"\bKL-[A-Z]+-\d+[a-z]?\b")

#: Rules every run exercises by construction: it starts from `empty_log` with a validated config
#: (KL-STATE-1, KL-STATE-2) and compares `view()` of both sides after every step (KL-STATE-3).
RUN_RULES = frozenset({"KL-STATE-1", "KL-STATE-2", "KL-STATE-3"})


@functools.cache
def invariant_rule_ids() -> frozenset[str]:
    """The KL-INV-* rules of model/invariants.py, all evaluated by `check_all` after each step."""
    found: set[str] = set()
    for predicate in INVARIANTS.values():
        found.update(_RULE_ID.findall((predicate.__doc__ or "").split(":")[0]))
    return frozenset(found)
