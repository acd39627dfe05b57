"""One step in lockstep: run an action on the implementation and the model, then compare.

Shared by the Hypothesis machine (machine.py) and replay (replay.py), so a trace replays through
exactly the checks that produced it. After each step (issue #4, item 3): equal results or error
codes, equal `state()`, `log_start_offset <= high_watermark <= log_end_offset`,
`recovery_point <= log_end_offset`, the model's invariants and the implementation's `check()`
hold; every `verify_every` steps the on-disk directory passes `verify`.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from kafkalog.conformance.adapter.json_codec import encode_args, without_transactions
from kafkalog.conformance.check import black_box
from kafkalog.conformance.check.allowed import allowed_outcome, same_where_defined
from kafkalog.conformance.check.coverage import RUN_RULES, invariant_rule_ids
from kafkalog.conformance.check.observe import comparable
from kafkalog.conformance.check.sut import ModelSut, StepResult, Sut, UnsupportedError, execute
from kafkalog.conformance.check.view_checks import first_difference, masked_to, view_invariants
from kafkalog.conformance.crash.kafka_gaps import (
    KAFKA_GAPS,
    diverse_first,
    kafka_gap,
    kafka_load_gap,
    leftovers_at_risk,
)
from kafkalog.conformance.errors import AdapterError
from kafkalog.conformance.traces.trace import TraceStep
from kafkalog.model import values as v
from kafkalog.model.errors import ACTION_ERRORS, KafkalogError


class DivergenceError(AssertionError):
    """Model and implementation disagreed; `signature` buckets it, `step` is the trace line."""

    def __init__(self, message: str, signature: str, step: TraceStep) -> None:
        super().__init__(message)
        self.signature = signature
        self.step = step


def _rules_exercised() -> Any:
    """model.coverage.rules_exercised, or None while the model has no coverage module yet."""
    try:
        from kafkalog.model.coverage.rules import rules_exercised
    except ImportError:
        return None
    return rules_exercised


class Lockstep:
    """Drives one model and one implementation side by side and keeps the trace so far."""

    def __init__(self, model: ModelSut, sut: Sut, verify_every: int = 0,
                 sweep: bool = False, in_load: bool = False,
                 in_load_verdicts: dict[Any, Any] | None = None) -> None:
        self.model = model
        self.sut = sut
        self.verify_every = verify_every
        self.steps: list[TraceStep] = []
        self.actions: Counter[str] = Counter()
        self.rules: set[str] = set()
        self._classify = _rules_exercised()
        self.last_rules: frozenset[str] = frozenset()
        self.last_signature: str | None = None
        self.crashes: Counter[str] = Counter()  # crash points explored per fault model
        self.crash_images: set[bytes] = set()  # digests of the distinct images sweeps loaded
        # KL-CRASH-7: distinct images loaded, crashed right after the load and loaded again
        # (digests of swept ones), plus crash steps that re-crashed live (`idempotence` flag).
        self.idempotence_images: set[bytes] = set()
        self.idempotence_steps = 0
        self.unhashed_images = 0  # crash steps not covered by a sweep: one image each
        self.crash_s = 0.0  # CPU seconds spent in crash steps (sweeps included)
        self._swept = False  # the current crash step's own image was checked by its sweep
        self.sweep = sweep  # check every crash point of the last action at each crash step
        self.in_load = in_load  # the sweep also crashes inside each image's load (KL-CRASH-14)
        self.in_load_verdicts = in_load_verdicts  # shared by a session's examples (crash_sweep)
        self.alternatives: list[Any] = []  # other model states the last crash allows
        self.offline = False  # a crash's load failed as the model allows: the example ends
        # Kafka-mode gaps a leftover planted by an earlier crash step may lead to (kafka_gaps.py)
        self.at_risk: frozenset[str] = frozenset()
        self._action = ""

    def step(self, action: str, args: dict[str, Any]) -> tuple[StepResult, StepResult] | None:
        """Run one action on both sides; None if the implementation does not support it, or
        once a crash left the log unloadable as the model allows (KL-CRASH-13: nothing runs).

        Raises DivergenceError (after recording the step) when any check fails, and
        AdapterError when the implementation could not be driven. Any other exception is a bug
        of the harness or the model: it too becomes a recorded step and a DivergenceError whose
        signature starts with `harness|`, so the run still leaves a replayable trace.
        """
        if self.offline:
            return None
        try:
            return self._step(action, args)
        except (DivergenceError, AdapterError, UnsupportedError):
            raise
        except Exception as error:  # noqa: BLE001 - reported with the steps that led here
            raise self._harness_error(action, args, error) from error

    def _harness_error(self, action: str, args: dict[str, Any],
                       error: Exception) -> DivergenceError:
        """Record the step that crashed the checker; the error that reports it."""
        try:
            wire_args = encode_args(action, args)
        except Exception:  # noqa: BLE001 - the arguments are what failed: keep them readable
            wire_args = {k: repr(a) for k, a in args.items()}
        message = f"harness error: {type(error).__name__}: {error}"
        step = TraceStep(action, wire_args, None, None, message)
        self.steps.append(step)
        self.last_signature = f"harness|{type(error).__name__}|{error}"
        return DivergenceError(message, self.last_signature, step)

    def _step(self, action: str, args: dict[str, Any]) -> tuple[StepResult, StepResult] | None:
        if action == "crash":
            started, self._swept = time.process_time(), False
            try:
                return self._crash_step(args)
            finally:
                self.crash_s += time.process_time() - started
        wire_args = encode_args(action, args)
        self._action = action
        try:
            impl = execute(self.sut, action, args)
        except UnsupportedError as error:
            unsupported = {"unsupported": {"message": str(error)}}
            self.steps.append(TraceStep(action, wire_args, None, unsupported))
            return None
        before = self.model.partition_state
        alternatives = self._advance_alternatives(action, args, impl)
        model = execute(self.model, action, args)
        if "transactions" not in self.sut.features and isinstance(model.value, v.FetchDataInfo):
            model = replace(model, value=without_transactions(model.value))
        self.actions[action] += 1
        self._cover(action, before, model)
        problem = self._compare(model, impl)
        if problem is not None and alternatives:
            # After a crash the model may not know which of several equal-looking states the
            # implementation recovered (e.g. an index rebuilt or kept): continue from one that
            # answers like the implementation.
            self.model.restore(alternatives[0])
            self.alternatives = alternatives[1:]
            model = StepResult(value=impl.value) if impl.ok else impl
            problem = self._compare(model, impl)
        choice = None
        if problem is not None and (problem[0] == "result" or problem[0].startswith("state.")):
            allowed = allowed_outcome(self.model, self.sut, action, args, before, impl)
            if allowed is not None:  # another Kafka-legal choice (KL-ALLOW-1): continue from it
                model, choice = allowed
                self._cover(action, before, model)
                problem = self._compare(model, impl)
        message = None if problem is None else problem[1]
        step = TraceStep(action, wire_args, model.to_json(), impl.to_json(), message, choice)
        self.steps.append(step)
        if problem is not None:
            self.last_signature = self._signature(action, model, impl, problem[0])
            raise DivergenceError(problem[1], self.last_signature, step)
        return model, impl

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

    def _crash_step(self, args: dict[str, Any]) -> tuple[StepResult, StepResult] | None:
        """A crash step: the sweep (when on), then the crash itself, checked by `_crash`."""
        if self.sweep and hasattr(self.sut, "crash_sweep"):
            sweeper = getattr(self.sut, "sweeper", None)
            if sweeper is not None:
                sweeper.in_load = self.in_load
                if self.in_load_verdicts is not None:
                    sweeper.in_load_verdicts = self.in_load_verdicts
            args = self._sweep(args)
        wire_args = encode_args("crash", args)
        self._action = "crash"
        try:
            impl = execute(self.sut, "crash", args)
        except UnsupportedError as error:
            unsupported = {"unsupported": {"message": str(error)}}
            self.steps.append(TraceStep("crash", wire_args, None, unsupported))
            return None
        results = self._crash(args, wire_args, impl)
        self._check_in_load(args)
        if args.get("idempotence") and not self.offline:  # a failed load has no state to keep
            self._recrash(args)
        return results

    def _recrash(self, args: dict[str, Any]) -> None:
        """KL-CRASH-7 on the live implementation: a process crash right after the load that
        `args` ran (point 0 of the load's own operations, nothing planted), then a load again;
        the state must be the first load's. A failure is reported on the crash step itself."""
        self.idempotence_steps += 1
        first = self.sut.state()
        again = execute(self.sut, "crash", {"point": 0, "fault": "process_crash",
                                             "seed": int(args["seed"]), "leftover": "none"})
        problem: tuple[str, str] | None = None
        if not again.ok:
            problem = "crash.idempotence.load", (
                f"recovery not idempotent (KL-CRASH-7): the load after a crash right after the "
                f"load failed: {again.describe()}")
        else:
            from kafkalog.conformance.crash.sweep import idempotence_view

            second = self.sut.state()
            if idempotence_view(second) != idempotence_view(first):
                where = first_difference(idempotence_view(first), idempotence_view(second))
                problem = f"crash.idempotence.{where[0]}", (
                    f"recovery not idempotent (KL-CRASH-7): a crash right after the load "
                    f"recovers another state; first differs at {where[0]}: first load "
                    f"{where[1]!r} | second load {where[2]!r}")
        if problem is None:
            return
        step = self.steps[-1] = replace(self.steps[-1], divergence=problem[1])
        kind = re.sub(r"\[\d+\]", "[]", problem[0])
        self.last_signature = f"crash|ok|{again.code or 'ok'}|{kind}|KL-CRASH-7"
        raise DivergenceError(problem[1], self.last_signature, step)

    def _check_in_load(self, args: dict[str, Any]) -> None:
        """KL-CRASH-14 after a crash step: it crashed inside its own load (`in_load`) and the
        implementation found the reload different, or (a planted leftover, never swept) the
        implementation crashed inside its image's load itself; then the step gets that
        `in_load`, so its trace replays the failure alone."""
        found = getattr(self.sut, "in_load_finding", None) if args.get("in_load") else None
        planted, code, step = getattr(self.sut, "leftover_in_load", None), "ok", self.steps[-1]
        if planted is not None:
            from kafkalog.conformance.crash.sweep import format_in_load

            step = replace(step, args={**step.args, "in_load": format_in_load(planted)})
            found, code = (planted.where, planted.difference), planted.code
        if found is None:
            return
        step = self.steps[-1] = replace(step, divergence=found[1])
        kind = re.sub(r"\[\d+\]", "[]", found[0])
        self.last_signature = f"crash|ok|{code}|crash.in_load.{kind}|KL-CRASH-14"
        raise DivergenceError(found[1], self.last_signature, step)

    def _advance_alternatives(self, action: str, args: dict[str, Any],
                              impl: StepResult) -> list[Any]:
        """Run `action` on every alternative state; keep those that answer like the impl."""
        if not self.alternatives:
            return []
        primary = self.model.snapshot()
        kept: list[Any] = []
        try:
            for alternative in self.alternatives:
                self.model.restore(alternative)
                answer = execute(self.model, action, args)
                if answer.same_as(impl) and self.model.state() == self.sut.state():
                    kept.append(self.model.snapshot())
        finally:
            self.model.restore(primary)
        self.alternatives = kept
        return kept

    def _crash(self, args: dict[str, Any], wire_args: Any,
               impl: StepResult) -> tuple[StepResult, StepResult]:
        """A crash: the implementation's recovered state must be in the model's allowed set
        (KL-CRASH-1); the model then continues from a member with that view."""
        self.actions["crash"] += 1
        if not self._swept:  # else its (point, fault, seed) was counted by the sweep
            self.crashes[str(args["fault"])] += 1
            self.unhashed_images += 1
        model = StepResult(value=impl.value) if impl.ok else StepResult(value=0)
        problem: tuple[str, str] | None = None
        if not impl.ok and args.get("in_load"):  # KL-CRASH-14: the reload inside failed
            problem = "crash.in_load.load", (
                f"a crash inside the load leaves an image whose load fails (KL-CRASH-14): "
                f"{impl.describe()}")
        elif not impl.ok:
            failure = self._failed_load(args, impl)
            if isinstance(failure, StepResult):  # KL-CRASH-13: the model's load fails alike
                model, self.offline = failure, True  # the log is offline: nothing runs on
            else:
                problem = failure
        elif args.get("in_load") and getattr(self.sut, "in_load_finding", None) is not None:
            # KL-CRASH-14 first: the state after a crash inside the load is usually outside the
            # model's set as well, but what the step shows is that it differs from the load's.
            found = self.sut.in_load_finding  # type: ignore[attr-defined]
            problem = f"crash.in_load.{found[0]}", found[1]
        else:
            before, alone = self.model.snapshot(), not self.alternatives
            leftover = str(args.get("leftover", "none"))
            outcomes = self._all_outcomes(str(args["fault"]), int(impl.value), leftover)
            problem = self._adopt(outcomes)
            self.at_risk |= leftovers_at_risk(self.model.mode, leftover)
            # One pre-crash state, exact F. Offsets going back are corruption of synced data
            # (FLT-8): recovery may empty a flushed segment, so KL-CRASH-10 does not apply.
            if problem is None and impl.value == 0 and alone and leftover != "offsets_back":
                problem = self._crash_properties(before)
        if problem is None and not self.offline:
            problem = self._internal_checks()
        message = None if problem is None else problem[1]
        step = TraceStep("crash", wire_args, model.to_json(), impl.to_json(), message)
        self.steps.append(step)
        self.last_rules = frozenset(_crash_rules(args, impl))
        self.rules |= self.last_rules
        if problem is not None:
            self.last_signature = self._signature("crash", model, impl, problem[0])
            if problem[0].startswith("crash.in_load."):
                self.last_signature = self.last_signature.rsplit("|", 1)[0] + "|KL-CRASH-14"
            raise DivergenceError(problem[1], self.last_signature, step)
        return model, impl

    def _failed_load(self, args: dict[str, Any],
                     impl: StepResult) -> StepResult | tuple[str, str]:
        """The model's own failed load when its set for this crash has one with the impl's
        error type (KL-CRASH-13), else the problem. A failed load does not say how many
        operations of the action it lost, so both sets (after the action, inside it) are asked."""
        from kafkalog.model.crash.crash import LoadFailure

        leftover = str(args.get("leftover", "none"))
        for ops_lost in (0, 1):
            for member in self._all_outcomes(str(args["fault"]), ops_lost, leftover):
                if isinstance(member, LoadFailure) and member.code == impl.code:
                    return StepResult(code=member.code, message=member.message)
        gap = kafka_load_gap(self.model.mode, impl.describe(), self.at_risk)
        if gap is not None:
            return (f"crash.outside_kafka_set.{gap}",
                    f"load after the crash failed outside the kafka set ({KAFKA_GAPS[gap]}): "
                    f"{impl.describe()}")
        return "crash.load", f"load after the crash failed: {impl.describe()}"

    def _sweep(self, args: dict[str, Any]) -> dict[str, Any]:
        """Load the image of every crash point of the last action under every fault model and
        seed of `sweep_plan`, and check each against the model's set. The crash then goes to
        the first (point, fault, seed) that fails (so the trace's crash step alone reproduces
        it), else to the drawn one. Allowed sets are computed once per (fault, inside the
        action) and verdicts once per (image, fault, inside): equal images load alike."""
        from kafkalog.conformance.crash.sweep import sweep_plan
        from kafkalog.model.crash.crash import load_failures, loaded_outcomes
        from kafkalog.model.log import view

        points = self.sut.crash_sweep(  # type: ignore[attr-defined]
            sweep_plan(str(args["fault"]), int(args["seed"])))
        allowed: dict[tuple[str, bool], tuple[list[Any], frozenset[Any], frozenset[str]]] = {}
        verdicts: dict[tuple[bytes, str, bool], bool] = {}
        self._swept = args.get("leftover", "none") == "none"  # the step's image is among them
        if self.in_load:
            self.rules.add("KL-CRASH-14")  # the sweeper crashed inside each distinct load
        not_idempotent = in_load = None
        for point in points:
            self.crashes[point.fault] += 1
            self.crash_images.add(point.image)
            if point.idempotent is not None:
                self.idempotence_images.add(point.image)
            if point.idempotent is False and not_idempotent is None:
                not_idempotent = point
            if point.in_load is not None and in_load is None:
                in_load = point
            inside = point.ops_lost > 0
            key = (point.image, point.fault, inside)
            if key not in verdicts:
                if (point.fault, inside) not in allowed:
                    outcomes = self._all_outcomes(point.fault, point.ops_lost)
                    members = [view(o[0]) for o in loaded_outcomes(outcomes)]
                    allowed[point.fault, inside] = (members, frozenset(map(_unindexed, members)),
                                                    load_failures(outcomes))
                verdicts[key] = _allows(allowed[point.fault, inside], point.recovered)
                if verdicts[key] and isinstance(point.recovered, str):
                    self.rules.add("KL-CRASH-13")  # a failed load the model allows
            if not verdicts[key]:
                total = points[0].ops_lost
                self._swept = True
                return {**args, "point": total - point.ops_lost, "fault": point.fault,
                        "seed": point.seed, "leftover": "none"}
        if not_idempotent is not None:  # every image allowed, but one does not reload alike
            self._swept = True
            return {**args, "point": points[0].ops_lost - not_idempotent.ops_lost,
                    "fault": not_idempotent.fault, "seed": not_idempotent.seed,
                    "leftover": "none", "idempotence": True}
        if in_load is not None and in_load.in_load is not None:  # KL-CRASH-14
            from kafkalog.conformance.crash.sweep import format_in_load

            self._swept = True
            return {**args, "point": points[0].ops_lost - in_load.ops_lost,
                    "fault": in_load.fault, "seed": in_load.seed, "leftover": "none",
                    "in_load": format_in_load(in_load.in_load)}
        return args

    def _all_outcomes(self, fault: str, ops_lost: int, leftover: str = "none") -> tuple[Any, ...]:
        """The allowed set from the model's state and from every alternative still possible
        (an earlier crash may have left states that look alike but differ in what is durable)."""
        outcomes = dict.fromkeys(self.model.crash_outcomes(fault, ops_lost, leftover))
        primary = self.model.snapshot()
        try:
            for alternative in self.alternatives:
                self.model.restore(alternative)
                outcomes.update(dict.fromkeys(
                    self.model.crash_outcomes(fault, ops_lost, leftover)))
        finally:
            self.model.restore(primary)
        return tuple(outcomes)

    def _crash_properties(self, before: Any) -> tuple[str, str] | None:
        """KL-CRASH-10 on the adopted state: a failure here is a bug of the model's crash set."""
        from kafkalog.model.crash.invariants import crash_violations

        state, durable, _ = before
        broken = crash_violations(state, durable, self.model.partition_state, self.model.mode)
        if broken:
            return "crash_invariant", f"crash invariants broken: {', '.join(broken)}"
        return None

    def _adopt(self, outcomes: Any) -> tuple[str, str] | None:
        try:
            recovered = self.sut.state()
        except AdapterError:
            raise
        except Exception as error:
            return "state()", f"state() raised {type(error).__name__}: {error}"
        from kafkalog.model.crash.crash import load_failures, loaded_outcomes
        from kafkalog.model.log import view

        if not loaded_outcomes(outcomes):
            codes = ", ".join(sorted(load_failures(outcomes)))
            return "crash.load", f"the model's load fails ({codes}, KL-CRASH-13); the " \
                "implementation loaded"
        outcomes = loaded_outcomes(outcomes)
        matching = [o for o in outcomes if view(o[0]) == recovered]
        if str(self.model.mode) == "kafka":
            matching = diverse_first(matching)
        if not matching:
            closest = min((view(o[0]) for o in outcomes),
                          key=lambda c: abs(c.log_end_offset - recovered.log_end_offset))
            where = first_difference(closest, recovered)
            gap = kafka_gap(self.model.mode, [view(o[0]) for o in outcomes], recovered,
                            self.at_risk)
            if gap is not None:
                return (f"crash.outside_kafka_set.{gap}",
                        f"outside the kafka set ({KAFKA_GAPS[gap]}); closest allowed state "
                        f"differs at {where[0]}: model {where[1]!r} | impl {where[2]!r}")
            return (f"crash.state.{where[0]}",
                    f"recovered state not allowed ({len(outcomes)} allowed states); closest "
                    f"differs at {where[0]}: model {where[1]!r} | impl {where[2]!r}")
        self.model.adopt(matching[0])
        self.alternatives = []
        for outcome in matching[1:8]:
            self.model.adopt(outcome)
            self.alternatives.append(self.model.snapshot())
        self.model.adopt(matching[0])
        broken = view_invariants(recovered)
        if broken:
            return f"invariant.{broken[0]}", f"invariant broken: {', '.join(broken)}"
        return None

    def _cover(self, action: str, before: Any, model: StepResult) -> None:
        """Add the spec rules the model says this step exercised (model/coverage/rules.py)."""
        self.last_rules = frozenset()
        if self._classify is None:
            return
        outcome: Any = model.value
        if not model.ok:
            outcome = _error_of(ACTION_ERRORS.get(model.code or "", KafkalogError), model.message)
        after = self.model.partition_state
        self.last_rules = frozenset(self._classify(action, before, after, outcome))
        self.rules |= self.last_rules

    def _compare(self, model: StepResult, impl: StepResult) -> tuple[str, str] | None:
        """(kind, message) of the first failed check after a step, or None when all pass."""
        opaque = black_box.is_black_box(self.sut.features)  # compare what the wire shows only
        if opaque and model.ok and impl.ok:
            model = dataclasses.replace(model, value=black_box.project_result(model.value))
            impl = dataclasses.replace(impl, value=black_box.project_result(impl.value))
        version = self.model.partition_state.config.kafka_version
        if not model.same_as(impl) and not same_where_defined(model, impl, version, self._action):
            text = f"results differ: model {model.describe()} | impl {impl.describe()}"
            if model.ok and impl.ok:
                where = first_difference(model.value, impl.value)
                text = f"results differ at {where[0]}: model {where[1]!r} | impl {where[2]!r}; " \
                    + text[len("results differ: "):]
            return "result", text
        try:
            model_state, impl_state = self.model.state(), self.sut.state()
        except AdapterError:
            raise
        except Exception as error:
            return "state()", f"state() raised {type(error).__name__}: {error}"
        model_state, impl_state = comparable(model_state, impl_state)  # observe.py
        model_state = masked_to(model_state, impl_state)
        if opaque:
            model_state = black_box.project_state(model_state)
            impl_state = black_box.project_state(impl_state)
        if model_state != impl_state:
            where = first_difference(model_state, impl_state)
            text = f"state differs at {where[0]}: model {where[1]!r} | impl {where[2]!r}"
            return f"state.{where[0]}", text
        broken = black_box.view_invariants(impl_state) if opaque else view_invariants(impl_state)
        if broken:
            return f"invariant.{broken[0]}", f"invariant broken: {', '.join(broken)}"
        return self._internal_checks()

    def _internal_checks(self) -> tuple[str, str] | None:
        model_problems = self.model.check()
        self.rules |= invariant_rule_ids() | RUN_RULES
        if model_problems:
            return "model_invariant", f"model invariants broken: {', '.join(model_problems)}"
        try:
            impl_problems = self.sut.check()
        except AdapterError:
            raise
        except Exception as error:  # Log.check() asserts: an AssertionError is a finding
            impl_problems = [f"{type(error).__name__}: {error}"]
        if impl_problems:
            return "check", f"impl check() failed: {'; '.join(impl_problems)}"
        if self.verify_every and sum(self.actions.values()) % self.verify_every == 0:
            try:
                findings = self.sut.verify()
            except AdapterError:
                raise
            except Exception as error:  # a verify that crashes is a finding like any other
                findings = [f"verify() raised {type(error).__name__}: {error}"]
            if findings:
                return "verify", f"on-disk verify found: {'; '.join(findings[:5])}"
        return None

    def _signature(self, action: str, model: StepResult, impl: StepResult, kind: str) -> str:
        """Bucket key: action, both error codes (or ok), what differed, the step's first rule."""
        rules = sorted(self.last_rules)
        rule = rules[0] if rules else "-"
        kind = re.sub(r"\[\d+\]", "[]", kind)  # bucket by field, not by segment number
        return f"{action}|{model.code or 'ok'}|{impl.code or 'ok'}|{kind}|{rule}"


def _unindexed(state: v.LogStateView) -> v.LogStateView:
    """A view without index entries, as a load reports it (Log.state())."""
    return replace(state, segments=tuple(replace(s, offset_index=None, time_index=None)
                                         for s in state.segments))


def _allows(allowed: tuple[list[Any], frozenset[Any], frozenset[str]], recovered: Any) -> bool:
    """A sweep's verdict: `recovered` (a load's state, or its error) is in the allowed set,
    compared as a crash step compares (observe.comparable). A load reports no index entries,
    which makes that comparison a lookup among the members without theirs."""
    if isinstance(recovered, str):  # the load's error, "<code>: <message>" (KL-CRASH-13)
        return recovered.split(":", 1)[0] in allowed[2]
    if all(s.offset_index is None and s.time_index is None for s in recovered.segments):
        return recovered in allowed[1]
    return any(ours == theirs for ours, theirs in
               (comparable(member, recovered) for member in allowed[0]))


def _crash_rules(args: dict[str, Any], impl: StepResult) -> set[str]:
    """The KL-CRASH rules one crash step exercised (specs/log.md §15)."""
    rules = {"KL-CRASH-1", "KL-CRASH-4", "KL-CRASH-5", "KL-CRASH-6", "KL-CRASH-7", "KL-CRASH-10",
             "KL-CRASH-11"}
    if args.get("fault") != "process_crash":
        rules.add("KL-CRASH-2")
    if impl.ok and isinstance(impl.value, int) and impl.value > 0:
        rules.add("KL-CRASH-8")
    if args.get("leftover", "none") != "none":
        rules.add("KL-CRASH-9")
    if not impl.ok:
        rules.add("KL-CRASH-13")
    return rules


def _error_of(cls: type[KafkalogError], message: str) -> KafkalogError:
    try:
        return cls(message)
    except TypeError:  # UnexpectedAppendOffsetError needs its offsets; coverage wants the type
        return cls(message, -1, -1)  # type: ignore[call-arg]
