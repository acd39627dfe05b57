"""`crosshair check` over every contracted pure helper of the model; a counterexample fails CI.

The helpers state PEP 316 `pre:`/`post:` lines (model/helpers.py, epochs.py, sizes.py,
cleaner/offsets.py). One
session fixture runs CrossHair once per module group, two groups side by side (the CI machine has
two cores), with `--report_all` so every post-condition reports "Confirmed over all paths", "Not
confirmed" (search ended without a counterexample) or an error. Loop-free integer helpers are
confirmed, which amounts to a proof; list-shaped ones are searched within the per-condition
budget and are also compared with naive versions (test_naive_equivalence.py) and proved up to a
length bound by Z3 (test_z3_invariants.py). A seeded bug must make CrossHair fail (negative
control), so a silent or broken CrossHair cannot pass this module.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("crosshair", reason="crosshair-tool is a dev dependency; install '.[dev]'")

from kafkalog.model import epochs, helpers, sizes  # noqa: E402
from kafkalog.model.cleaner import offsets as cleaner_offsets  # noqa: E402

PER_CONDITION_TIMEOUT = 3  # seconds; loop-free helpers finish far sooner (exhausted)
MAX_UNINTERESTING = 20  # stop a condition after this many iterations without new coverage
HARD_TIMEOUT = 300  # seconds for one `crosshair check` process before the test fails
# batch_size: CrossHair ignores the per-condition timeout on it (>60 s, no verdict, measured with
# crosshair-tool 0.0.112); its exact sizes are pinned by tests/model/test_model_sizes.py instead.
# rebuilt_batch_size runs the same per-record sum and is left out with it; the compaction tests
# compare its sizes with the implementation's bytes (tests/impl/test_cleaner.py).
EXCLUDED = {"batch_size", "rebuilt_batch_size"}
GROUPS: tuple[tuple[ModuleType, ...], ...] = ((helpers,), (epochs, sizes, cleaner_offsets))
LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<kind>info|error|warning): (?P<msg>.*)$")


def contracted(module: ModuleType) -> list[Callable[..., object]]:
    """The module's own top-level functions whose docstring carries a `post:` line."""
    found: list[Callable[..., object]] = []
    for name, fn in vars(module).items():
        if not inspect.isfunction(fn) or fn.__module__ != module.__name__ or name in EXCLUDED:
            continue
        if re.search(r"^\s*post(\[.*\])?:", fn.__doc__ or "", flags=re.MULTILINE):
            found.append(fn)
    return found


TARGETS = [fn for group in GROUPS for module in group for fn in contracted(module)]


@dataclass(frozen=True)
class Report:
    """One line of `crosshair check` output."""

    file: str
    line: int
    kind: str
    message: str


@dataclass(frozen=True)
class Run:
    """The outcome of the CrossHair processes: exit codes, parsed lines, wall time."""

    returncodes: tuple[int, ...]
    reports: tuple[Report, ...]
    stray: tuple[str, ...]  # output lines that are not `file:line: kind: message`
    seconds: float


def crosshair_command(targets: list[str]) -> list[str]:
    return [sys.executable, "-m", "crosshair", "check", *targets,
            "--per_condition_timeout", str(PER_CONDITION_TIMEOUT),
            "--max_uninteresting_iterations", str(MAX_UNINTERESTING), "--report_all"]


def parse(output: str) -> tuple[list[Report], list[str]]:
    reports, stray = [], []
    for raw in output.splitlines():
        match = LINE.match(raw.strip())
        if match:
            reports.append(Report(str(Path(match["file"]).resolve()), int(match["line"]),
                                  match["kind"], match["msg"]))
        elif raw.strip():
            stray.append(raw)
    return reports, stray


def run_crosshair(groups: list[list[str]], cwd: Path) -> Run:
    """Run one `crosshair check` per group concurrently; a hang fails rather than blocks CI."""
    start = time.monotonic()
    procs = [subprocess.Popen(crosshair_command(g), cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for g in groups]
    outputs, codes = [], []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=HARD_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            out += f"\nHARD TIMEOUT after {HARD_TIMEOUT} s"
        outputs.append(out)
        codes.append(proc.returncode)
    reports, stray = parse("\n".join(outputs))
    return Run(tuple(codes), tuple(reports), tuple(stray), time.monotonic() - start)


@pytest.fixture(scope="module")
def model_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """CrossHair over every contracted model helper, run once for this module."""
    groups = [[f"{fn.__module__}.{fn.__name__}" for m in group for fn in contracted(m)]
              for group in GROUPS]
    return run_crosshair(groups, tmp_path_factory.mktemp("crosshair"))


def reports_for(run: Run, fn: Callable[..., object]) -> list[Report]:
    """The report lines that fall inside `fn`'s source."""
    lines, first = inspect.getsourcelines(fn)
    path = str(Path(inspect.getfile(fn)).resolve())
    return [r for r in run.reports if r.file == path and first <= r.line < first + len(lines)]


def test_crosshair__model_helpers__exit_zero_without_stray_output(model_run: Run) -> None:
    """Exit code 0 (no counterexample, no error) from every group, and nothing unparsed."""
    assert model_run.returncodes == (0,) * len(GROUPS), model_run.reports
    assert not model_run.stray, model_run.stray


def _target_id(fn: Callable[..., object]) -> str:
    return f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"


@pytest.mark.parametrize("fn", TARGETS, ids=_target_id)
def test_crosshair__contracted_helper__has_no_counterexample(model_run: Run,
                                                             fn: Callable[..., object]) -> None:
    """Every post-condition of the helper was analysed, none with a counterexample or error."""
    found = reports_for(model_run, fn)
    posts = len(re.findall(r"^\s*post(\[.*\])?:", fn.__doc__ or "", flags=re.MULTILINE))
    assert len(found) == posts, f"expected {posts} verdicts, got {found}"
    errors = [r for r in found if r.kind != "info"]
    assert not errors, errors


SEEDED_BUGS = '''
def clamp_without_lower_bound(hw: int, log_start_offset: int, log_end_offset: int) -> int:
    """LOG-5 with the lower clamp forgotten.

    pre: 0 <= log_start_offset <= log_end_offset
    post: log_start_offset <= __return__ <= log_end_offset
    """
    return min(hw, log_end_offset)


def fits_unsigned(offset: int, base_offset: int) -> bool:
    """FMT-11 with the unsigned 32-bit range instead of [0, Int.MAX].

    post: __return__ == (0 <= offset - base_offset <= 2147483647)
    """
    return 0 <= offset - base_offset <= 4294967295
'''


def test_crosshair__seeded_bugs__are_reported_as_counterexamples(tmp_path: Path) -> None:
    """Negative control: exit code 1 and one counterexample per seeded bug."""
    module = tmp_path / "seeded_bugs.py"
    module.write_text(SEEDED_BUGS)
    run = run_crosshair([[str(module)]], tmp_path)
    assert run.returncodes == (1,)
    failing = {r.line for r in run.reports if r.kind == "error"}
    assert len(failing) == 2, run.reports
