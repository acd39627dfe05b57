"""Mutation testing of the compiled scan units (impl/records/_scan*.c) with default check.

cosmic-ray mutates Python only; the C units that replace the Python twins on the hot paths
(batch_scan.py) need their own mutants. `python -m kafkalog.benchmarks.c_mutation --sample N`
draws N mutation sites by a fixed seed from every C unit (a relational operator replaced by its
neighbour, `&&` by `||` and back, a `+ 1` or `- 1` dropped), and for each one builds the
extension from a copy of the committed tree with that one change, checks that the compiled
units are the ones in use, and runs the killing test (benchmarks/mutation.py: all of default
`kafkalog check`, the producer and transaction runs first). A mutant that does not compile is
counted apart. The worktree is never touched. A benchmark-style job, never CI.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNITS = sorted((ROOT / "impl" / "records").glob("_scan*.c"))
#: (pattern, replacement) per operator; relational operators never match `->`, `<<`, `>>`.
OPERATORS: dict[str, tuple[str, dict[str, str]]] = {
    "relational": (r"(?<![<>=!\-&|+*/%^])(<=|>=|==|!=|<|>)(?![<>=])",
                   {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}),
    "logical": (r"&&|\|\|", {"&&": "||", "||": "&&"}),
    "off_by_one": (r"\s[+-] 1\b(?!\d)", {}),
}


@dataclass(frozen=True)
class Site:
    unit: str
    line: int  # 1-based
    column: int
    operator: str
    old: str
    new: str


def _code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, code) with comments, strings and preprocessor lines blanked."""
    out, in_comment = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        code = ""
        i = 0
        while i < len(line):
            if in_comment:
                end = line.find("*/", i)
                if end < 0:
                    code += " " * (len(line) - i)
                    break
                code += " " * (end + 2 - i)
                i, in_comment = end + 2, False
            elif line.startswith("/*", i):
                in_comment = True
            elif line.startswith("//", i):
                code += " " * (len(line) - i)
                break
            elif line[i] == '"':
                end = line.find('"', i + 1)
                end = len(line) - 1 if end < 0 else end
                code += " " * (end + 1 - i)
                i = end + 1
            else:
                code += line[i]
                i += 1
        if not code.lstrip().startswith("#"):
            out.append((number, code))
    return out


def sites(unit: Path) -> list[Site]:
    """Every mutation site of one C unit."""
    found = []
    for number, code in _code_lines(unit.read_text(encoding="utf-8")):
        for name, (pattern, swap) in OPERATORS.items():
            for match in re.finditer(pattern, code):
                old = match.group(0)
                new = swap.get(old, "") if name != "off_by_one" else ""
                found.append(Site(unit.name, number, match.start(), name, old, new))
    return found


def mutated(text: str, site: Site) -> str:
    lines = text.splitlines(keepends=True)
    line = lines[site.line - 1]
    assert line[site.column:site.column + len(site.old)] == site.old, site
    lines[site.line - 1] = line[:site.column] + site.new + line[site.column + len(site.old):]
    return "".join(lines)


def _sandbox(base: Path) -> Path:
    """A copy of the committed tree importable as `kafkalog` (as scripts/mutation.sh makes)."""
    src, pkg = base / "src", base / "pkg" / "kafkalog"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    pkg.mkdir(parents=True)
    for entry in (src / "kafkalog").iterdir():
        (pkg / entry.name).symlink_to(entry)
    for part in ("model", "impl", "conformance", "benchmarks"):
        (pkg / part).symlink_to(src / part)
    (base / "pkg" / "sitecustomize.py").write_text(
        "import sys\nsys.meta_path[:] = [f for f in sys.meta_path "
        "if '__editable__' not in getattr(f, '__module__', '')]\n")
    return src


def _run(args: list[str], base: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(base / "pkg")}
    env.pop("KAFKALOG_PURE_PYTHON", None)
    return subprocess.run(args, cwd=base, env=env, capture_output=True, text=True,
                          timeout=timeout)


def judge(site: Site, src: Path, base: Path, test: list[str], timeout: float) -> str:
    """`killed`, `survived`, `timeout` or `not_compiled` for one mutant."""
    unit = src / "impl" / "records" / site.unit
    original = unit.read_text(encoding="utf-8")
    unit.write_text(mutated(original, site), encoding="utf-8")
    try:
        if not _build(src):
            return "not_compiled"
        probe = _run([sys.executable, "-c", "from kafkalog.impl.records.batch_scan import "
                      "ACTIVE; assert ACTIVE.startswith('C extension'), ACTIVE"], base, 60)
        if probe.returncode != 0:
            return "not_compiled"
        try:
            result = _run([sys.executable, "-m", "kafkalog.benchmarks.mutation", *test], base,
                          timeout)
        except subprocess.TimeoutExpired:
            return "timeout"
        return "killed" if result.returncode != 0 else "survived"
    finally:
        unit.write_text(original, encoding="utf-8")


def _build(src: Path) -> bool:
    """The extension built in place from the (mutated) sources; False when it does not compile
    (setup.py marks it optional, so a failed build would silently leave the Python twins)."""
    for old in (src / "impl" / "records").glob("_scan*.so"):
        old.unlink()
    result = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                            cwd=src, capture_output=True, text=True, timeout=600)
    return result.returncode == 0 and any((src / "impl" / "records").glob("_scan*.so"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=30, help="mutants to draw")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per killing test")
    parser.add_argument("--json", type=Path, default=None, help="write every verdict here")
    parser.add_argument("--first", default="producers,producers_append_time,transactions")
    args = parser.parse_args(argv)
    every = [site for unit in UNITS for site in sites(unit)]
    drawn = sorted(random.Random(args.seed).sample(every, min(args.sample, len(every))),
                   key=lambda s: (s.unit, s.line, s.column))
    print(f"{len(every)} mutation sites in {len(UNITS)} C units; {len(drawn)} drawn", flush=True)
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="kafkalog-c-mutation-") as scratch:
        base = Path(scratch)
        src = _sandbox(base)
        for i, site in enumerate(drawn, start=1):
            verdict = judge(site, src, base, ["--first", args.first], args.timeout)
            verdicts.append({**asdict(site), "verdict": verdict})
            print(f"[{i}/{len(drawn)}] {site.unit}:{site.line} {site.operator} "
                  f"{site.old!r}->{site.new!r}: {verdict}", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(verdicts, indent=1) + "\n")
    counts = {v: sum(1 for x in verdicts if x["verdict"] == v)
              for v in ("killed", "survived", "timeout", "not_compiled")}
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
