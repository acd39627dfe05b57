"""Every source ID and every KL-* rule the repository cites is defined inside it.

Source IDs (`FMT-45`, `REC-10`, `BUG-C5`, `KAFKA-6361`, ...) name what was read in Kafka; they are
defined in specs/sources.md. Rule IDs (`KL-APPEND-7`) are defined in bold in the specs
(specs/log.md, specs/formats.md, specs/wire.md). The scan covers code, docstrings, comments,
specs, docs, the README and the tests themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
SOURCES = SPECS / "sources.md"

SCANNED_DIRS = ("model", "impl", "conformance", "kafkalog", "benchmarks", "specs", "tests",
                "docs", "scripts", "examples", "adapters", "brokers")
SCANNED_FILES = ("README.md", "CHANGELOG.md", "pyproject.toml", "setup.py")
TEXT_SUFFIXES = frozenset({".py", ".pyi", ".md", ".c", ".h", ".java", ".toml", ".sh", ".txt",
                           ".rst", ".json", ".jsonl", ".yml", ".yaml", ".cfg", ".tla"})
SKIPPED_PARTS = frozenset({"__pycache__", ".git", "node_modules", "target", "build", ".venv"})

# Tokens shaped like an ID that name a standard, not a source: UTF-8, CRC-32, AVX-512; and
# Kafka's transaction versions (TV-1, KIP-890), which its own error messages in traces print.
NOT_IDS = frozenset({"UTF", "CRC", "AVX", "SHA", "ISO", "RFC", "MD", "TV"})
# Apache's own numbering: a JIRA ticket or an improvement proposal.
EXTERNAL_PREFIXES = ("KAFKA-", "KIP-")

# An ID: an optional `KL-` (a rule), then `BUG-C<n>` or `<PREFIX>-<n>[a-z]`, optionally a range
# `..<m>` (`FMT-10..18`, `KL-WIRE-1..8`). Not preceded by a letter, digit or `-`, so the tail of
# a rule such as `KL-CRASH-7` is never read as a source ID of its own.
ID_PATTERN = re.compile(
    r"(?<![A-Za-z0-9-])(?P<rule>KL-)?"
    r"(?:(?P<bugc>BUG-C)(?P<bugc_n>\d+)|(?P<prefix>[A-Z]{2,6})-(?P<n>\d+)(?P<suffix>[a-z]?))"
    r"(?:\s*\.\.\s*(?P<end>\d+))?"
    r"(?![A-Za-z0-9])"
)
SOURCE_DEFINITION = re.compile(r"^- \*\*(?P<id>[A-Z]{2,6}(?:-C\d+|-\d+[a-z]?))\*\*", re.MULTILINE)
RULE_DEFINITION = re.compile(r"\*\*(?P<id>KL-[A-Z]+-\d+[a-z]?)\b")


def cited_ids(text: str) -> Iterator[tuple[str, bool]]:
    """Yield (id, is_rule) for every ID cited in `text`, ranges expanded (`FMT-10..12` -> 3 IDs)."""
    for m in ID_PATTERN.finditer(text):
        rule = m.group("rule") is not None
        if m.group("bugc"):
            first, suffix, stem = int(m.group("bugc_n")), "", "BUG-C"
        else:
            if m.group("prefix") in NOT_IDS and not rule:
                continue
            first, suffix, stem = int(m.group("n")), m.group("suffix"), m.group("prefix") + "-"
        last = int(m.group("end")) if m.group("end") and not suffix else first
        for n in range(first, max(first, last) + 1):
            ident = f"{stem}{n}{suffix if n == first else ''}"
            yield (f"KL-{ident}" if rule else ident), rule


def defined_sources(text: str) -> set[str]:
    """The source IDs sources.md defines: one `- **ID**` line each.

    A Kafka ticket or KIP also counts when sources.md describes it inside another definition
    (`KAFKA-7076` in BUG-4's line): a reader who searches the page finds what it is.
    """
    defined = {m.group("id") for m in SOURCE_DEFINITION.finditer(text)}
    mentioned = {ident for ident, rule in cited_ids(text) if not rule}
    return defined | {ident for ident in mentioned if ident.startswith(EXTERNAL_PREFIXES)}


def defined_rules(texts: list[str]) -> set[str]:
    """The KL-* rules defined (in bold) in the specs."""
    return {m.group("id") for text in texts for m in RULE_DEFINITION.finditer(text)}


def scanned_files() -> Iterator[Path]:
    for name in SCANNED_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name
    for folder in SCANNED_DIRS:
        base = ROOT / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if (path.is_file() and path.suffix in TEXT_SUFFIXES
                    and not SKIPPED_PARTS.intersection(path.relative_to(ROOT).parts)):
                yield path


def citations() -> Iterator[tuple[str, bool, str]]:
    """Yield (id, is_rule, "path:line") for every citation in the repository."""
    for path in scanned_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for ident, rule in cited_ids(line):
                yield ident, rule, f"{path.relative_to(ROOT)}:{lineno}"


def undefined(citations_: Iterator[tuple[str, bool, str]], sources: set[str],
              rules: set[str]) -> dict[str, list[str]]:
    """Map each cited but undefined ID to the places that cite it."""
    missing: dict[str, list[str]] = {}
    for ident, rule, where in citations_:
        if ident not in (rules if rule else sources):
            missing.setdefault(ident, []).append(where)
    return missing


@pytest.fixture(scope="module")
def sources() -> set[str]:
    return defined_sources(SOURCES.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rules() -> set[str]:
    return defined_rules([p.read_text(encoding="utf-8") for p in sorted(SPECS.glob("*.md"))])


def test_extractor__ranges_rules_and_suffixes__reads_each_id() -> None:
    """Ranges expand, `KL-` marks a rule, letter suffixes and BUG-C IDs are kept, UTF-8 is no ID."""
    text = "see FMT-10..12, LOG-15a, BUG-C5, KL-CRASH-7 and KL-WIRE-1..2; UTF-8, CRC-32"
    assert list(cited_ids(text)) == [
        ("FMT-10", False), ("FMT-11", False), ("FMT-12", False), ("LOG-15a", False),
        ("BUG-C5", False), ("KL-CRASH-7", True), ("KL-WIRE-1", True), ("KL-WIRE-2", True),
    ]


def test_undefined__made_up_ids__are_reported_with_their_place() -> None:
    """The check can fail: a made-up source ID and a made-up rule are both reported."""
    fake_source, fake_rule = "-".join(("REC", "999")), "-".join(("KL", "APPEND", "999"))
    text = f"Spec: {fake_rule} ({fake_source}, REC-10)"
    found = [(ident, rule, "x.py:1") for ident, rule in cited_ids(text)]
    assert undefined(iter(found), {"REC-10"}, {"KL-APPEND-1"}) == {
        fake_rule: ["x.py:1"], fake_source: ["x.py:1"],
    }


def test_sources_md__definitions__are_unique_and_non_empty() -> None:
    """Each source ID is defined once, with a sentence after it."""
    text = SOURCES.read_text(encoding="utf-8")
    ids = [m.group("id") for m in SOURCE_DEFINITION.finditer(text)]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    bare = [line for line in text.splitlines()
            if SOURCE_DEFINITION.match(line) and len(line.split("**", 2)[2].strip()) < 20]
    assert not bare


def test_repository__every_cited_id__is_defined(sources: set[str], rules: set[str]) -> None:
    """No code, docstring, spec, doc or test cites a source ID or KL-* rule defined nowhere."""
    missing = undefined(citations(), sources, rules)
    report = "\n".join(f"{ident}: {', '.join(places[:3])}"
                       for ident, places in sorted(missing.items()))
    assert not missing, f"{len(missing)} undefined IDs (sources: specs/sources.md):\n{report}"


def test_explain__source_id__prints_its_definition_from_sources_md() -> None:
    """`kafkalog explain rec-10` prints REC-10's line of specs/sources.md."""
    from click.testing import CliRunner

    from kafkalog.cli.explain_cmd import explain

    result = CliRunner().invoke(explain, ["rec-10"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("REC-10  ") and "recovery point" in result.output


def test_explain__rule_id__prints_the_rule_of_the_spec() -> None:
    """`kafkalog explain KL-APPEND-7` prints the rule's bullet, naming its spec."""
    from click.testing import CliRunner

    from kafkalog.cli.explain_cmd import explain

    result = CliRunner().invoke(explain, ["KL-APPEND-7"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("specs/log.md:\n- **KL-APPEND-7 ")


def test_explain__undefined_id__fails_in_one_line() -> None:
    """An ID the specs do not define is a usage error naming it, not a traceback."""
    from click.testing import CliRunner

    from kafkalog.cli.explain_cmd import explain

    fake = "-".join(("REC", "999"))
    result = CliRunner().invoke(explain, [fake])
    assert result.exit_code == 2 and fake in result.output and result.exception is not None
    assert not isinstance(result.exception, (KeyError, AttributeError, FileNotFoundError))
