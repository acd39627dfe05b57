"""Summarise a cosmic-ray session of scripts/mutation.sh: score and survivors by function.

`python -m kafkalog.benchmarks.mutation_report SESSION.sqlite [ROOT]` prints the executed,
killed and surviving mutants and lists each survivor with its function and diff line. A function
no other `impl/` module calls is marked "no caller": mutants there cannot change what the log
does through its actions, so the checker cannot (and need not) kill them; the README's verdicts
start from this list.
"""

from __future__ import annotations

import math
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path


def _callers(root: Path, name: str, module: str) -> int:
    pattern = re.compile(rf"\b{re.escape(name)}\(")  # a call, as a method or by bare name
    count = 0
    for path in (root / "impl").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.stem == module:
            text = re.sub(rf"def {re.escape(name)}\b", "", text)
        count += len(pattern.findall(text))
    return count


def wilson(killed: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson interval of a sampled kill rate."""
    if total == 0:
        return 0.0, 1.0
    p = killed / total
    centre = p + z * z / (2 * total)
    margin = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    scale = 1 + z * z / total
    return (centre - margin) / scale, (centre + margin) / scale


def main(argv: list[str]) -> int:
    session, root = Path(argv[0]), Path(argv[1] if len(argv) > 1 else ".")
    db = sqlite3.connect(session)
    outcomes = Counter(row[0] for row in db.execute("select test_outcome from work_results"))
    killed, survived = outcomes.get("KILLED", 0), outcomes.get("SURVIVED", 0)
    skipped = Counter(row[0] for row in db.execute(
        "select output from work_results where test_outcome is null"))
    low, high = wilson(killed, killed + survived)
    print(f"executed {killed + survived}, killed {killed}, survived {survived} "
          f"(kill rate 95% interval {low:.0%}..{high:.0%}); skipped: "
          f"{skipped.get('not sampled', 0)} not sampled, "
          f"{sum(skipped.values()) - skipped.get('not sampled', 0)} `|` in annotations "
          "(equivalent by construction)")
    rows = db.execute(
        "select s.module_path, s.definition_name, s.start_pos_row, s.operator_name, r.diff "
        "from work_results r join mutation_specs s on r.job_id = s.job_id "
        "where r.test_outcome = 'SURVIVED' order by s.start_pos_row")
    for module_path, name, line, operator, diff in rows:
        module = Path(module_path).stem
        plus = next((d[1:].strip() for d in diff.splitlines()
                     if d.startswith("+") and not d.startswith("+++")), "")
        function = (name or "?").split(".")[-1]
        mark = "" if _callers(root, function, module) else "  [no caller in impl/]"
        print(f"{module}.py:{line} {function} {operator.split('/')[-1]}: {plus}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
