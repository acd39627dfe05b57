"""Every rule ID of specs/log.md is cited by the model and pinned by at least one test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULE = re.compile(r"\*\*(KL-[A-Z]+-\d+)\b")


def spec_rules() -> list[str]:
    text = (ROOT / "specs" / "log.md").read_text()
    return sorted(set(RULE.findall(text)))


def cited(rule: str, folder: Path) -> bool:
    pattern = re.compile(re.escape(rule) + r"(?!\d)")
    return any(pattern.search(p.read_text()) for p in folder.rglob("*.py"))


def test_spec__defines_rules_in_every_area() -> None:
    """The spec is not empty: every area of the design's vocabulary has rules."""
    areas = {r.rsplit("-", 1)[0] for r in spec_rules()}
    assert {"KL-APPEND", "KL-READ", "KL-HW", "KL-LSO", "KL-RET", "KL-ROLL", "KL-TRUNC",
            "KL-FLUSH", "KL-EPOCH", "KL-TIME", "KL-RELOAD", "KL-INV", "KL-DEL"} <= areas


@pytest.mark.parametrize("rule", spec_rules())
def test_spec_rule__is_cited_by_a_model_docstring(rule: str) -> None:
    """A rule the model does not cite is a rule nobody implemented."""
    assert cited(rule, ROOT / "model"), f"{rule} is not cited in model/"


@pytest.mark.parametrize("rule", spec_rules())
def test_spec_rule__is_cited_by_a_test(rule: str) -> None:
    """A rule no test names is a rule nobody checked."""
    assert cited(rule, ROOT / "tests"), f"{rule} is not cited in tests/"


def test_spec__every_rule_cites_a_reference_or_decision() -> None:
    """Each rule line names where it comes from (reference IDs or a kafkalog decision)."""
    text = (ROOT / "specs" / "log.md").read_text()
    for line in text.splitlines():
        match = re.match(r"- \*\*(KL-[A-Z]+-\d+)", line)
        if match and not match.group(1).startswith("KL-INV"):
            assert re.search(r"\((\[TRUNK\] )?([A-Z]+-\d+|design|kafkalog)", line), line
