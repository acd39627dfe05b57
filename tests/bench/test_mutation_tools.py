"""The mutation-testing tools: the killing test's plan, the seeded sample, the interval."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kafkalog.benchmarks.mutation import EXAMPLES, plan
from kafkalog.benchmarks.mutation_report import wilson

PRODUCERS = {"producers", "producers_append_time", "transactions"}


def test_plan__first_families__all_of_default_check_those_ahead() -> None:
    """`--first` keeps every run of default check (its verdict), the named families' first."""
    ordered = plan(None, None, PRODUCERS)
    assert sorted(ordered) == plan(None, None)
    assert len(ordered) == EXAMPLES
    leading = [family in PRODUCERS for _, family in ordered]
    assert leading == sorted(leading, reverse=True) and any(leading)


def test_wilson__interval_holds_the_rate_and_narrows_with_the_sample() -> None:
    low, high = wilson(9, 10)
    assert low < 0.9 < high
    wide, narrow = wilson(9, 10), wilson(90, 100)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.skipif(shutil.which("cosmic-ray") is None and not (
    Path(sys.executable).parent / "cosmic-ray").exists(), reason="cosmic-ray not installed")
def test_mutation_sample__keeps_n_seeded_mutants(tmp_path: Path) -> None:
    """N pending mutants are kept, the rest marked skipped; a second draw has none left to
    skip."""
    from cosmic_ray.work_db import use_db
    from kafkalog.benchmarks.mutation_sample import sample

    module = tmp_path / "m.py"
    module.write_text("def f(a, b):\n    return a + b < 3 and a - 1 > 0\n")
    config = tmp_path / "c.toml"
    config.write_text(f'[cosmic-ray]\nmodule-path = "{module}"\ntimeout = 10.0\n'
                      'excluded-modules = []\ntest-command = "true"\n'
                      '[cosmic-ray.distributor]\nname = "local"\n')
    session = tmp_path / "s.sqlite"
    cosmic_ray = Path(sys.executable).parent / "cosmic-ray"
    subprocess.run([str(cosmic_ray), "init", str(config), str(session)], check=True,
                   capture_output=True)
    with use_db(str(session)) as db:
        total = db.num_work_items
        assert total > 3
        assert sample(db, 3, 7) == (3, total - 3)
        assert len(list(db.pending_work_items)) == 3
        assert sample(db, 3, 7) == (3, 0)


def test_c_mutation_sites__code_only__each_mutant_one_change(tmp_path: Path) -> None:
    """Sites come from code, never comments, strings or preprocessor lines; `->`, `<<` and
    `>>` are not relational operators; a mutant changes exactly its site."""
    from kafkalog.benchmarks.c_mutation import mutated, sites

    unit = tmp_path / "_scan_x.c"
    unit.write_text('#include <string.h>\n/* a < b && c */\nstatic int f(int a, int *p) {\n'
                    '    if (a < 3 && p->x >= 1) return a << 2; // x == y\n'
                    '    return g("<") + 1;\n}\n')
    found = sites(unit)
    assert [(s.line, s.old, s.new) for s in found] == [
        (4, "<", "<="), (4, ">=", ">"), (4, "&&", "||"), (5, " + 1", "")]
    text = unit.read_text()
    first = mutated(text, found[0])
    assert "if (a <= 3 && p->x >= 1)" in first
    assert sum(a != b for a, b in zip(first.splitlines(), text.splitlines(), strict=True)) == 1


def test_killing_test__stopped_by_sigterm__leaves_no_scratch_directory(tmp_path: Path) -> None:
    """A mutation tool stops a slow killing test with SIGTERM: the run's scratch directories
    go with it (a SIGTERM once ended the interpreter with them still on /dev/shm)."""
    import os
    import signal
    import time

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "KAFKALOG_SCRATCH": str(scratch)}
    proc = subprocess.Popen([sys.executable, "-m", "kafkalog.benchmarks.mutation"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not any(scratch.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any(scratch.iterdir()), "the killing test made no scratch directory"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) != 0
    finally:
        proc.kill()
        proc.wait()
    assert list(scratch.iterdir()) == []
