"""The crash steps of one example: sweeps, the crash's verdict, idempotence and in-load checks.

`Lockstep` (conformance/check/lockstep.py) runs every action on the model and the implementation
and compares them; a crash step it hands to `CrashSteps`, which answers with values:

- `plan` sweeps every crash point of the last action (crash/sweep.py) and says which crash the
  step should make: the drawn one, or the first point the model's set does not allow, so the
  trace's crash step alone reproduces it (`Planned.covered`: the sweep already counted it);
- `judge` holds the implementation's recovered state (or its failed load) against the model's
  allowed set (KL-CRASH-1, KL-CRASH-13) and adopts a matching member; the other model states
  that still look alike come back as `Verdict.alternatives`;
- `in_load_finding` and `recrash` are the KL-CRASH-14 and KL-CRASH-7 checks after the step.

Lockstep records the trace step and raises the divergence; this class keeps only the crash
counters an example reports (points explored, distinct images, idempotence checks, CPU time).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from kafkalog.conformance.check.deadline import check_deadline
from kafkalog.conformance.check.observe import comparable
from kafkalog.conformance.check.scratch import remove_scratch
from kafkalog.conformance.check.sut import ModelSut, StepResult, Sut, execute
from kafkalog.conformance.check.view_checks import first_difference, view_invariants
from kafkalog.conformance.crash import kafka_loader
from kafkalog.conformance.crash.kafka_gaps import (
    KAFKA_GAPS,
    diverse_first,
    kafka_gap,
    kafka_load_gap,
    leftovers_at_risk,
)
from kafkalog.conformance.crash.sweep import (
    SweepPoint,
    format_in_load,
    idempotence_view,
    same_after_reload,
    sweep_plan,
)
from kafkalog.conformance.crash.torn_clues import TORN_FAULT, clues_of_error, clues_of_view
from kafkalog.conformance.errors import AdapterError
from kafkalog.conformance.traces.trace import TraceStep
from kafkalog.model import values as v
from kafkalog.model.crash.crash import LoadFailure, load_failures, loaded_outcomes
from kafkalog.model.crash.invariants import crash_violations
from kafkalog.model.crash.torn import TornClues
from kafkalog.model.log import view

Problem = tuple[str, str]  # (what differed, message), as Lockstep's checks report it
# A sweep's allowed set for one (fault, inside the action): the members' views, the same
# without index entries, and the error codes of the loads the model allows to fail.
Allowed = tuple[list[Any], frozenset[Any], frozenset[str]]
_MAX_ALTERNATIVES = 7  # alike-looking model states kept besides the adopted one


class Planned(NamedTuple):
    """The crash a step makes after its sweep; `covered` when the sweep already counted that
    (point, fault, seed), and the spec rules the sweep exercised."""

    args: dict[str, Any]
    covered: bool = False
    rules: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Verdict:
    """A crash step judged: the model's answer, the first problem (None: allowed), the model
    states still alike after it, and whether the log is offline (a load the model lets fail)."""

    model: StepResult
    problem: Problem | None
    alternatives: list[Any]
    offline: bool = False


class CrashSteps:
    """The crash side of one lockstep example (model and implementation as Lockstep has them)."""

    def __init__(self, model: ModelSut, sut: Sut, sweep: bool = False, in_load: bool = False,
                 in_load_verdicts: dict[Any, Any] | None = None) -> None:
        self.model = model
        self.sut = sut
        self.sweep = sweep  # check every crash point of the last action at each crash step
        self.in_load = in_load  # the sweep also crashes inside each image's load (KL-CRASH-14)
        self.in_load_verdicts = in_load_verdicts  # shared by a session's examples (crash_sweep)
        self.crashes: Counter[str] = Counter()  # crash points explored per fault model
        self.crash_images: set[bytes] = set()  # digests of the distinct images sweeps loaded
        # KL-CRASH-7: distinct images loaded, crashed right after the load and loaded again
        # (digests of swept ones), plus crash steps that re-crashed live (`idempotence` flag).
        self.idempotence_images: set[bytes] = set()
        self.idempotence_steps = 0
        self.unhashed_images = 0  # crash steps not covered by a sweep: one image each
        self.inside_passes = 0  # swept points inside a cleaning pass (KL-CRASH-15)
        self.crash_s = 0.0  # CPU seconds spent in crash steps (sweeps included)
        # Kafka-mode gaps a leftover planted by an earlier crash step may lead to (kafka_gaps.py)
        self.at_risk: frozenset[str] = frozenset()
        self.deadline: float | None = None  # the run's time limit (session.py), for the sweep

    def distinct_images(self) -> int:
        """Distinct crash images this example loaded (a swept image counts once)."""
        return len(self.crash_images) + self.unhashed_images

    def crash_idempotence(self) -> int:
        """Idempotence checks this example ran (KL-CRASH-7): swept distinct images re-crashed
        and reloaded, plus crash steps that did it live."""
        return len(self.idempotence_images) + self.idempotence_steps

    def in_load_points(self) -> int:
        """Crash points this example explored inside loads (KL-CRASH-14)."""
        sweeper = getattr(self.sut, "sweeper", None)
        return int(getattr(sweeper, "in_load_points", 0))

    # --- before the crash: the sweep ----------------------------------------------------------

    def plan(self, args: dict[str, Any], alternatives: list[Any]) -> Planned:
        """The crash to make: `args` itself, or (with sweeps on) the first swept point that
        fails; `alternatives` are the model states an earlier crash left possible."""
        if hasattr(self.sut, "keep_planted"):  # Kafka's loader also loads a planted image
            self.sut.keep_planted = (kafka_loader.ACTIVE is not None
                                     and str(self.model.mode) == "kafka"
                                     and args.get("leftover", "none") != "none")
        if not (self.sweep and hasattr(self.sut, "crash_sweep")):
            return Planned(args)
        sweeper = getattr(self.sut, "sweeper", None)
        if sweeper is not None:
            sweeper.in_load = self.in_load
            sweeper.deadline = self.deadline
            if self.in_load_verdicts is not None:
                sweeper.in_load_verdicts = self.in_load_verdicts
        return self._sweep(args, alternatives)

    def _sweep(self, args: dict[str, Any], alternatives: list[Any]) -> Planned:
        """Load the image of every crash point of the last action under every fault model and
        seed of `sweep_plan`, and check each against the model's set. The crash then goes to
        the first (point, fault, seed) that fails, else to one that does not reload alike or
        fails inside its load, else to the drawn one. Allowed sets are computed once per
        (fault, inside the action) and verdicts once per (image, fault, inside): equal images
        load alike."""
        loader = kafka_loader.ACTIVE if str(self.model.mode) == "kafka" else None
        sweeper = getattr(self.sut, "sweeper", None)
        if loader is not None and sweeper is not None:
            sweeper.keep_images = loader.pending  # Kafka's loader loads them too (below)
        points = self.sut.crash_sweep(  # type: ignore[attr-defined]
            sweep_plan(str(args["fault"]), int(args["seed"])))
        verdicts = _SweepVerdicts(self, alternatives)
        if loader is not None and sweeper is not None:
            self._kafka_loader(loader, sweeper, points, verdicts)
        # The sweeper crashed inside each distinct load when in-load checks are on.
        rules = {"KL-CRASH-14"} if self.in_load else set()
        not_idempotent = in_load = None
        for point in points:
            self._count(point)
            if point.idempotent is False and not_idempotent is None:
                not_idempotent = point
            if point.in_load is not None and in_load is None:
                in_load = point
            allowed = verdicts.allows(point)
            if allowed and isinstance(point.recovered, str):
                rules.add("KL-CRASH-13")  # a failed load the model allows
            if not allowed:
                return Planned(_crash_at(args, points, point), True, frozenset(rules))
        if not_idempotent is not None:  # every image allowed, but one does not reload alike
            return Planned({**_crash_at(args, points, not_idempotent), "idempotence": True},
                           True, frozenset(rules))
        if in_load is not None and in_load.in_load is not None:  # KL-CRASH-14
            return Planned({**_crash_at(args, points, in_load),
                            "in_load": format_in_load(in_load.in_load)}, True, frozenset(rules))
        # The step's own image is among the swept ones unless it plants a leftover.
        return Planned(args, args.get("leftover", "none") == "none", frozenset(rules))

    def _kafka_loader(self, loader: Any, sweeper: Any, points: list[SweepPoint],
                      verdicts: _SweepVerdicts) -> None:
        """Kafka's own loader on this sweep's new images, judged against the same allowed sets
        (kafka_loader.py; counted there, never a divergence of this example)."""
        sweeper.keep_images = None
        with sweeper._scratch() as scratch:
            loader.observe(points, verdicts._allowed_set, sweeper.config, sweeper.partition,
                           scratch, self._kafka_gap)

    def _count(self, point: SweepPoint) -> None:
        self.crashes[point.fault] += 1
        last = self.model.last
        if point.ops_lost > 0 and last is not None and last[0] == "clean":
            self.inside_passes += 1
        self.crash_images.add(point.image)
        if point.idempotent is not None:
            self.idempotence_images.add(point.image)

    # --- the crash itself ---------------------------------------------------------------------

    def judge(self, args: dict[str, Any], impl: StepResult, alternatives: list[Any],
              covered: bool) -> Verdict:
        """A crash: the implementation's recovered state must be in the model's allowed set
        (KL-CRASH-1); the model then continues from a member with that view. `covered`: the
        sweep already counted this (point, fault, seed)."""
        if not covered:
            self.crashes[str(args["fault"])] += 1
            self.unhashed_images += 1
        self._kafka_loads_planted(args, impl, alternatives)
        model = StepResult(value=impl.value) if impl.ok else StepResult(value=0)
        if not impl.ok and args.get("in_load"):  # KL-CRASH-14: the reload inside failed
            return Verdict(model, ("crash.in_load.load", (
                f"a crash inside the load leaves an image whose load fails (KL-CRASH-14): "
                f"{impl.describe()}")), alternatives)
        if not impl.ok:
            failure = self._failed_load(args, impl, alternatives)
            if isinstance(failure, StepResult):  # KL-CRASH-13: the model's load fails alike
                return Verdict(failure, None, alternatives, offline=True)  # nothing runs on
            return Verdict(model, failure, alternatives)
        found = getattr(self.sut, "in_load_finding", None) if args.get("in_load") else None
        if found is not None:
            # KL-CRASH-14 first: the state after a crash inside the load is usually outside the
            # model's set as well, but what the step shows is that it differs from the load's.
            return Verdict(model, (f"crash.in_load.{found[0]}", found[1]), alternatives)
        return self._recovered(args, impl, alternatives, model)

    def _kafka_loads_planted(self, args: dict[str, Any], impl: StepResult,
                             alternatives: list[Any]) -> None:
        """Kafka's own loader on this crash's image with its planted leftover (sweeps load
        none), judged against the model's set for the crash (kafka_loader.py; counted there)."""
        image = getattr(self.sut, "planted_image", None)
        if image is None:
            return
        self.sut.planted_image = None  # type: ignore[attr-defined]
        loader = kafka_loader.ACTIVE
        try:
            if loader is None:
                return
            leftover = str(args.get("leftover", "none"))
            ops_lost = int(impl.value) if impl.ok and isinstance(impl.value, int) else 0
            outcomes = self._all_outcomes(str(args["fault"]), ops_lost, alternatives, leftover)
            members = [view(o[0]) for o in loaded_outcomes(outcomes)]
            sweeper = self.sut.sweeper  # type: ignore[attr-defined]
            now_ms = self.sut.time.milliseconds()  # type: ignore[attr-defined]
            loader.judge_dir(image, (members, frozenset(), load_failures(outcomes)),
                             sweeper.config, sweeper.partition, now_ms,
                             f"{leftover}:{args['fault']}:{args['seed']}", self._kafka_gap)
        finally:
            remove_scratch(image)

    def _kafka_gap(self, members: list[Any], recovered: v.LogStateView) -> str | None:
        """The known kafka-mode gap of a state outside the set (as `_not_allowed` classifies)."""
        return kafka_gap(self.model.mode, members, recovered, self.at_risk)

    def _recovered(self, args: dict[str, Any], impl: StepResult, alternatives: list[Any],
                   model: StepResult) -> Verdict:
        """A load that succeeded: adopt the matching member, then KL-CRASH-10 when it applies."""
        before, alone = self.model.snapshot(), not alternatives
        leftover = str(args.get("leftover", "none"))
        outcomes = self._all_outcomes(str(args["fault"]), int(impl.value), alternatives,
                                      leftover)
        widen = None
        if self.judged_with_clues(str(args["fault"])):
            def widen(recovered: v.LogStateView) -> tuple[Any, ...]:
                return self._all_outcomes(str(args["fault"]), int(impl.value), alternatives,
                                          leftover, clues_of_view(recovered))
        problem, alternatives = self._adopt(outcomes, alternatives, widen)
        self.at_risk |= leftovers_at_risk(self.model.mode, leftover)
        # One pre-crash state, exact F. Offsets going back are corruption of synced data
        # (FLT-8): recovery may empty a flushed segment, so KL-CRASH-10 does not apply.
        if problem is None and impl.value == 0 and alone and leftover != "offsets_back":
            problem = self._crash_properties(before)
        return Verdict(model, problem, alternatives)

    def _failed_load(self, args: dict[str, Any], impl: StepResult,
                     alternatives: list[Any]) -> StepResult | Problem:
        """The model's own failed load when its set for this crash has one with the impl's
        error type (KL-CRASH-13), else the problem. A failed load does not say how many
        operations of the action it lost, so both sets (after the action, inside it) are asked."""
        leftover, fault = str(args.get("leftover", "none")), str(args["fault"])
        clues = clues_of_error(impl.describe()) if self.garbage_possible(fault) else None
        for with_clues in (None, clues) if clues is not None else (None,):
            for ops_lost in (0, 1):
                for member in self._all_outcomes(fault, ops_lost, alternatives, leftover,
                                                 with_clues):
                    if isinstance(member, LoadFailure) and member.code == impl.code:
                        return StepResult(code=member.code, message=member.message)
        gap = kafka_load_gap(self.model.mode, impl.describe(), self.at_risk,
                             str(args["fault"]))
        if gap is not None:
            return (f"crash.outside_kafka_set.{gap}",
                    f"load after the crash failed outside the kafka set ({KAFKA_GAPS[gap]}): "
                    f"{impl.describe()}")
        return "crash.load", f"load after the crash failed: {impl.describe()}"

    def judged_with_clues(self, fault: str) -> bool:
        """Whether a state outside the set under `fault` is judged again with what it shows
        (torn_clues.py): kafka mode after a power loss, which may leave a header a garbage page
        tore (torn, KL-ALLOW-10) or bring back any subset of the removed producer snapshot
        files (DUR-29, KL-CRASH-11)."""
        return str(self.model.mode) == "kafka" and fault != "process_crash"

    def garbage_possible(self, fault: str) -> bool:
        """Whether a crash under `fault` may leave a header a garbage page tore (KL-ALLOW-10):
        kafka mode, torn power loss; the allowed set is then asked again with what the
        recovered state shows (torn_clues.py) before a state is called outside it."""
        return str(self.model.mode) == "kafka" and fault == TORN_FAULT

    def _all_outcomes(self, fault: str, ops_lost: int, alternatives: list[Any],
                      leftover: str = "none", clues: TornClues | None = None
                      ) -> tuple[Any, ...]:
        """The allowed set from the model's state and from every alternative still possible
        (an earlier crash may have left states that look alike but differ in what is durable).
        Each state's set is checked against the run's time limit first: in kafka mode one can
        take tens of seconds (resurrectable layouts x epoch files x snapshot files x both
        loaders), and a run past its limit stops itself rather than meet the hard limit."""
        check_deadline(self.deadline)
        outcomes = dict.fromkeys(self.model.crash_outcomes(fault, ops_lost, leftover, clues))
        primary = self.model.snapshot()
        try:
            for alternative in alternatives:
                check_deadline(self.deadline)
                self.model.restore(alternative)
                outcomes.update(dict.fromkeys(
                    self.model.crash_outcomes(fault, ops_lost, leftover, clues)))
        finally:
            self.model.restore(primary)
        return tuple(outcomes)

    def _adopt(self, outcomes: Any, alternatives: list[Any],
               widen: Callable[[v.LogStateView], tuple[Any, ...]] | None = None
               ) -> tuple[Problem | None, list[Any]]:
        """Move the model to the first allowed member whose view is the implementation's; the
        problem when none is, and the alike-looking members kept as alternatives. `widen`: the
        set asked again with what the recovered state shows, when no member matches."""
        try:
            recovered = self.sut.state()
        except AdapterError:
            raise
        except Exception as error:
            return ("state()", f"state() raised {type(error).__name__}: {error}"), alternatives
        if not loaded_outcomes(outcomes):
            codes = ", ".join(sorted(load_failures(outcomes)))
            return ("crash.load", f"the model's load fails ({codes}, KL-CRASH-13); the "
                    "implementation loaded"), alternatives
        outcomes = loaded_outcomes(outcomes)
        matching = [o for o in outcomes if view(o[0]) == recovered]
        if not matching and widen is not None:
            matching = [o for o in loaded_outcomes(widen(recovered)) if view(o[0]) == recovered]
        if str(self.model.mode) == "kafka":
            matching = diverse_first(matching)
        if not matching:
            return self._not_allowed(outcomes, recovered), alternatives
        self.model.adopt(matching[0])
        kept = []
        for outcome in matching[1:1 + _MAX_ALTERNATIVES]:
            self.model.adopt(outcome)
            kept.append(self.model.snapshot())
        self.model.adopt(matching[0])
        broken = view_invariants(recovered)
        if broken:
            return (f"invariant.{broken[0]}", f"invariant broken: {', '.join(broken)}"), kept
        return None, kept

    def _not_allowed(self, outcomes: Any, recovered: v.LogStateView) -> Problem:
        """The problem of a recovered state outside the allowed set, against the closest member."""
        closest = min((view(o[0]) for o in outcomes),
                      key=lambda c: abs(c.log_end_offset - recovered.log_end_offset))
        where = first_difference(closest, recovered)
        gap = kafka_gap(self.model.mode, [view(o[0]) for o in outcomes], recovered, self.at_risk)
        if gap is not None:
            return (f"crash.outside_kafka_set.{gap}",
                    f"outside the kafka set ({KAFKA_GAPS[gap]}); closest allowed state "
                    f"differs at {where[0]}: model {where[1]!r} | impl {where[2]!r}")
        return (f"crash.state.{where[0]}",
                f"recovered state not allowed ({len(outcomes)} allowed states); closest "
                f"differs at {where[0]}: model {where[1]!r} | impl {where[2]!r}")

    def _crash_properties(self, before: Any) -> Problem | None:
        """KL-CRASH-10 on the adopted state: a failure here is a bug of the model's crash set."""
        state, durable, _ = before
        broken = crash_violations(state, durable, self.model.partition_state, self.model.mode)
        if broken:
            return "crash_invariant", f"crash invariants broken: {', '.join(broken)}"
        return None

    # --- after the crash: KL-CRASH-14 and KL-CRASH-7 ------------------------------------------

    def in_load_finding(self, args: dict[str, Any],
                        step: TraceStep) -> tuple[TraceStep, Problem, str] | None:
        """KL-CRASH-14 after a crash step: it crashed inside its own load (`in_load`) and the
        implementation found the reload different, or (a planted leftover, never swept) the
        implementation crashed inside its image's load itself. Then (the step with that
        `in_load`, so its trace replays the failure alone; the problem; the reload's code)."""
        found = getattr(self.sut, "in_load_finding", None) if args.get("in_load") else None
        planted, code = getattr(self.sut, "leftover_in_load", None), "ok"
        if planted is not None:
            step = replace(step, args={**step.args, "in_load": format_in_load(planted)})
            found, code = (planted.where, planted.difference), planted.code
        if found is None:
            return None
        return step, found, code

    def recrash(self, args: dict[str, Any]) -> tuple[Problem | None, str]:
        """KL-CRASH-7 on the live implementation: a process crash right after the load that
        `args` ran (point 0 of the load's own operations, nothing planted), then a load again;
        the state must be the first load's. (The problem or None, the second load's code.)"""
        self.idempotence_steps += 1
        first = self.sut.state()
        again = execute(self.sut, "crash", {"point": 0, "fault": "process_crash",
                                             "seed": int(args["seed"]), "leftover": "none"})
        code = again.code or "ok"
        if not again.ok:
            return ("crash.idempotence.load", (
                f"recovery not idempotent (KL-CRASH-7): the load after a crash right after the "
                f"load failed: {again.describe()}")), code
        second = self.sut.state()
        if same_after_reload(first, second):
            return None, code
        where = first_difference(idempotence_view(first), idempotence_view(second))
        return (f"crash.idempotence.{where[0]}", (
            f"recovery not idempotent (KL-CRASH-7): a crash right after the load "
            f"recovers another state; first differs at {where[0]}: first load "
            f"{where[1]!r} | second load {where[2]!r}")), code


class _SweepVerdicts:
    """One sweep's verdicts: allowed sets once per (fault, inside the action), verdicts once
    per (image, fault, inside), since equal images load alike."""

    def __init__(self, crash_steps: CrashSteps, alternatives: list[Any]) -> None:
        self._crash_steps, self._alternatives = crash_steps, alternatives
        self._allowed: dict[tuple[str, bool], Allowed] = {}
        self._verdicts: dict[tuple[bytes, str, bool], bool] = {}

    def allows(self, point: SweepPoint) -> bool:
        inside = point.ops_lost > 0
        key = (point.image, point.fault, inside)
        if key not in self._verdicts:
            self._verdicts[key] = (_allows(self._allowed_set(point, inside), point.recovered)
                                   or self._allows_with_clues(point))
        return self._verdicts[key]

    def _allows_with_clues(self, point: SweepPoint) -> bool:
        """A state outside the set, judged again with what it shows of a header a garbage
        page tore (KL-ALLOW-10) or of the removed snapshot files that came back (DUR-29)."""
        if not self._crash_steps.judged_with_clues(point.fault):
            return False
        recovered = point.recovered
        if isinstance(recovered, str) and not self._crash_steps.garbage_possible(point.fault):
            return False
        clues = (clues_of_error(recovered) if isinstance(recovered, str)
                 else clues_of_view(recovered))
        if clues is None:
            return False
        return _allows(_allowed_of(self._crash_steps._all_outcomes(
            point.fault, point.ops_lost, self._alternatives, clues=clues)), recovered)

    def _allowed_set(self, point: SweepPoint, inside: bool) -> Allowed:
        if (point.fault, inside) not in self._allowed:
            self._allowed[point.fault, inside] = _allowed_of(self._crash_steps._all_outcomes(
                point.fault, point.ops_lost, self._alternatives))
        return self._allowed[point.fault, inside]


def _allowed_of(outcomes: tuple[Any, ...]) -> Allowed:
    """A sweep's allowed set: the loaded members' views, the same without index entries, and
    the codes of the failed loads."""
    members = [view(o[0]) for o in loaded_outcomes(outcomes)]
    return members, frozenset(map(_unindexed, members)), load_failures(outcomes)


def _crash_at(args: dict[str, Any], points: list[SweepPoint], point: SweepPoint) -> dict[str, Any]:
    """The crash step's arguments that make exactly `point` (no leftover planted)."""
    return {**args, "point": points[0].ops_lost - point.ops_lost, "fault": point.fault,
            "seed": point.seed, "leftover": "none"}


def _unindexed(state: v.LogStateView) -> v.LogStateView:
    """A view without index entries and snapshot contents, as a load reports it
    (Log.state(); the crash step itself compares both)."""
    return replace(state, producer_snapshot_tables=None,
                   segments=tuple(replace(s, offset_index=None, time_index=None)
                                  for s in state.segments))


def _allows(allowed: Allowed, recovered: Any) -> bool:
    """A sweep's verdict: `recovered` (a load's state, or its error) is in the allowed set,
    compared as a crash step compares (observe.comparable). A load reports no index entries,
    which makes that comparison a lookup among the members without theirs."""
    if isinstance(recovered, str):  # the load's error, "<code>: <message>" (KL-CRASH-13)
        return recovered.split(":", 1)[0] in allowed[2]
    if all(s.offset_index is None and s.time_index is None for s in recovered.segments):
        return recovered in allowed[1]
    return any(ours == theirs for ours, theirs in
               (comparable(member, recovered) for member in allowed[0]))


#: Actions whose cut or removal must be durable before they return (KL-CRASH-3): a crash after
#: one, or inside one under the sweep, checks that no removed offset comes back.
CUTTING_ACTIONS = frozenset({"truncate_to", "truncate_fully_and_start_at", "delete_old_segments",
                             "maybe_increment_log_start_offset"})


def crash_rules(args: dict[str, Any], impl: StepResult,
                since_last_crash: frozenset[str] = frozenset(),
                transactional: bool = False, torn_headers: bool = False) -> set[str]:
    """The KL-CRASH rules one crash step exercised (specs/log.md §15): `since_last_crash` are the
    actions run since the previous crash (or the start), `transactional` whether the log held
    transactional data when it crashed (its recovery then rebuilds `.txnindex` entries and
    ongoing transactions, KL-CRASH-12), `torn_headers` whether a torn image it judged had a
    set with mixed headers (KL-ALLOW-10)."""
    rules = {"KL-CRASH-1", "KL-CRASH-4", "KL-CRASH-5", "KL-CRASH-6", "KL-CRASH-7", "KL-CRASH-10",
             "KL-CRASH-11"}
    if since_last_crash & CUTTING_ACTIONS:
        rules.add("KL-CRASH-3")
    if "clean" in since_last_crash:
        rules.add("KL-CRASH-15")  # a pass's swaps and cleaner checkpoint, durable or part-way
    if transactional:
        rules.add("KL-CRASH-12")
    if args.get("fault") != "process_crash":
        rules.add("KL-CRASH-2")
    if impl.ok and isinstance(impl.value, int) and impl.value > 0:
        rules.add("KL-CRASH-8")
    if args.get("leftover", "none") != "none":
        rules.add("KL-CRASH-9")
    if not impl.ok:
        rules.add("KL-CRASH-13")
    if torn_headers:
        rules.add("KL-ALLOW-10")
    return rules


def signature_kind(where: str) -> str:
    """A problem's field path bucketed by field, not by segment number."""
    return re.sub(r"\[\d+\]", "[]", where)
