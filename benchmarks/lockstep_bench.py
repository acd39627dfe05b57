"""Conformance figures: lockstep steps per second, model alone, implementation alone.

Steps come from the real state machine: `run_seed`'s Hypothesis machine runs once per seed over
the config families of `kafkalog check` (the end-to-end figure, generation included), and the
first example's steps are recorded. The recorded steps are then replayed three ways on one core:
through `Lockstep` (model + implementation + every per-step check, `verify` every 10 steps, as
`kafkalog check` runs), on the model alone and on the implementation alone. Replays have no
generation cost, so the three numbers compare like with like.
"""

from __future__ import annotations

import contextlib
import statistics
from typing import Any

from hypothesis import Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test
from kafkalog.conformance.adapter.json_codec import decode_args
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.lockstep import DivergenceError, Lockstep
from kafkalog.conformance.check.runner import run_settings
from kafkalog.conformance.check.session import START_MS, Session
from kafkalog.conformance.check.sut import ModelSut, execute
from kafkalog.conformance.gen.configs import DEFAULT_MIX, config_family
from kafkalog.conformance.gen.machines import make_machine
from kafkalog.model import values as v

from .core import Figure, Sample, Scale, Stopwatch

Step = tuple[str, dict[str, Any]]
VERIFY_EVERY = 10  # Session's default: what `kafkalog check` does


class RecordingSession(Session):
    """A Session that keeps the decoded steps of the first finished example."""

    def __init__(self, config: v.LogConfig) -> None:
        super().__init__(config, ImplSut, ImplSut.features, verify_every=VERIFY_EVERY)
        self.recorded: list[Step] = []

    def finish(self, lockstep: Lockstep) -> None:
        if self.examples == 0:
            self.recorded = [(s.action, decode_args(s.action, s.args)) for s in lockstep.steps]
        super().finish(lockstep)


def generate(seed: int, steps: int) -> tuple[v.LogConfig, list[Step], int, Sample, bool]:
    """One `kafkalog check`-style run: (config, recorded steps, steps run, seconds, diverged)."""
    config = config_family(DEFAULT_MIX[seed % len(DEFAULT_MIX)])
    session = RecordingSession(config)
    machine = hypothesis_seed(seed)(make_machine(session))
    watch = Stopwatch()
    diverged = False
    try:
        # Generation only: shrinking a divergence is the checker's job, not a throughput figure.
        no_shrink = settings(run_settings(steps), phases=(Phase.generate,))
        run_state_machine_as_test(machine, settings=no_shrink)
    except Exception:  # noqa: BLE001 - a divergence is reported as a count, not raised here
        diverged = True
    return config, session.recorded, session.steps_executed, watch.stop(), diverged


def replay_lockstep(config: v.LogConfig, steps: list[Step]) -> Sample:
    """Seconds to run `steps` through Lockstep (both sides and every check)."""
    lockstep = Lockstep(ModelSut(config, START_MS), ImplSut(config, START_MS), VERIFY_EVERY)
    try:
        watch = Stopwatch()
        for action, args in steps:
            # A benchmark times the steps; `kafkalog check` is what reports divergences.
            with contextlib.suppress(DivergenceError):
                lockstep.step(action, args)
        return watch.stop()
    finally:
        lockstep.sut.close()
        lockstep.model.close()


def replay_one(sut: Any, steps: list[Step]) -> Sample:
    """Seconds to run `steps` on one side only (results discarded)."""
    try:
        watch = Stopwatch()
        for action, args in steps:
            execute(sut, action, args)
        return watch.stop()
    finally:
        sut.close()


def conformance_figures(scale: Scale) -> list[Figure]:
    """End-to-end, lockstep, model-only and implementation-only steps per second."""
    # Runs stop at a divergence, so seeds are added until enough steps were recorded.
    runs: list[tuple[v.LogConfig, list[Step], int, Sample, bool]] = []
    wanted = scale.conformance_steps * scale.conformance_seeds
    seed = 0
    while sum(len(r[1]) for r in runs) < wanted and seed < 4 * scale.conformance_seeds:
        runs.append(generate(seed, scale.conformance_steps))
        seed += 1
    e2e_steps = sum(r[2] for r in runs)
    e2e_s = sum(r[3].wall for r in runs)
    diverged = sum(r[4] for r in runs)
    recorded = [(config, steps) for config, steps, *_ in runs if steps]
    total = sum(len(steps) for _, steps in recorded)
    sides = {
        "lockstep": lambda c, s: replay_lockstep(c, s),
        "model": lambda c, s: replay_one(ModelSut(c, START_MS), s),
        "impl": lambda c, s: replay_one(ImplSut(c, START_MS), s),
    }
    rates: dict[str, float] = {}
    cpu_rates: dict[str, float] = {}
    for name, run in sides.items():
        for config, steps in recorded:  # warm-up
            run(config, steps)
        samples = [[run(config, steps) for config, steps in recorded] for _ in range(scale.reps)]
        rates[name] = total / statistics.median(sum(s.wall for s in rep) for rep in samples)
        cpu_rates[name] = total / statistics.median(sum(s.cpu for s in rep) for rep in samples)
    families = sorted({DEFAULT_MIX[s % len(DEFAULT_MIX)] for s in range(seed)})
    note = {"steps_replayed": total, "seeds": seed, "families": families,
            "diverged_runs": diverged, "verify_every": VERIFY_EVERY,
            "cpu_steps_per_s": round(cpu_rates["lockstep"])}
    return [
        Figure("conformance.lockstep", "conformance", "lockstep replay: model + impl + checks",
               "steps/s", round(rates["lockstep"]), goal=">= 1,000 steps/s on one core",
               met=rates["lockstep"] >= 1000, extra=note),
        Figure("conformance.end_to_end", "conformance",
               "kafkalog check runs (Hypothesis generation + lockstep)", "steps/s",
               round(e2e_steps / e2e_s), extra={"steps": e2e_steps, "seconds": round(e2e_s, 3)}),
        Figure("conformance.model", "conformance", "model alone (same steps)", "steps/s",
               round(rates["model"]), extra={"cpu_steps_per_s": round(cpu_rates["model"])}),
        Figure("conformance.impl", "conformance", "implementation alone (same steps)", "steps/s",
               round(rates["impl"]), extra={"cpu_steps_per_s": round(cpu_rates["impl"])}),
    ]
