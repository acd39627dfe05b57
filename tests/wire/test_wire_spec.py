"""Every rule of specs/wire.md is implemented (cited in conformance/) and pinned by a test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULE = re.compile(r"\*\*(KL-WIRE-\d+)\b")


def wire_rules() -> list[str]:
    return sorted(set(RULE.findall((ROOT / "specs" / "wire.md").read_text())))


def cited(rule: str, folder: Path) -> bool:
    pattern = re.compile(re.escape(rule) + r"(?!\d)")
    return any(pattern.search(p.read_text()) for p in folder.rglob("*.py"))


def test_wire_spec__defines_rules() -> None:
    """The wire spec is not empty."""
    assert len(wire_rules()) >= 8


@pytest.mark.parametrize("rule", wire_rules())
def test_wire_rule__is_cited_by_the_adapter_code(rule: str) -> None:
    """A rule the wire adapter does not cite is a rule nobody implemented."""
    assert cited(rule, ROOT / "conformance"), f"{rule} is not cited in conformance/"


@pytest.mark.parametrize("rule", wire_rules())
def test_wire_rule__is_cited_by_a_test(rule: str) -> None:
    """A rule no test names is a rule nobody checked."""
    assert cited(rule, ROOT / "tests"), f"{rule} is not cited in tests/"
