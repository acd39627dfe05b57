"""One step in lockstep: run an action on the implementation and the model, then compare.

Shared by the Hypothesis machine (gen/machine.py) and replay (traces/replay.py), so a trace
replays through exactly the checks that produced it. After each step: equal results or error
codes, equal `state()`, `log_start_offset <= high_watermark <= log_end_offset`,
`recovery_point <= log_end_offset`, the model's invariants and the implementation's `check()`
hold; every `verify_every` steps the on-disk directory passes `verify`. Crash steps (sweeps,
the allowed set, idempotence) are judged by `CrashSteps` (crash/crash_steps.py); this class
records them like every other step.
"""

from __future__ import annotations

import dataclasses
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
from kafkalog.conformance.crash.crash_steps import CrashSteps, Problem, crash_rules, signature_kind
from kafkalog.conformance.errors import AdapterError
from kafkalog.conformance.traces.trace import TraceStep
from kafkalog.model import values as v
from kafkalog.model.coverage.rules import rules_exercised
from kafkalog.model.errors import ACTION_ERRORS, KafkalogError


class DivergenceError(AssertionError):
    """Model and implementation disagreed; `signature` buckets it, `step` is the trace line."""

    def __init__(self, message: str, signature: str, step: TraceStep) -> None:
        super().__init__(message)
        self.signature = signature
        self.step = step


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
        self.last_rules: frozenset[str] = frozenset()
        self.last_signature: str | None = None
        self.alternatives: list[Any] = []  # other model states the last crash allows
        self.offline = False  # a crash's load failed as the model allows: the example ends
        self.crash_steps = CrashSteps(model, sut, sweep, in_load, in_load_verdicts)

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
            if action == "crash":
                return self._timed_crash_step(args)
            return self._step(action, args)
        except (DivergenceError, AdapterError, UnsupportedError):
            raise
        except Exception as error:  # noqa: BLE001 - reported with the steps that led here
            raise self._harness_error(action, args, error) from error

    def _harness_error(self, action: str, args: dict[str, Any],
                       error: Exception) -> DivergenceError:
        """Record the step that crashed the checker; the error that reports it."""
        try:
            json_args = encode_args(action, args)
        except Exception:  # noqa: BLE001 - the arguments are what failed: keep them readable
            json_args = {k: repr(a) for k, a in args.items()}
        message = f"harness error: {type(error).__name__}: {error}"
        step = TraceStep(action, json_args, None, None, message)
        self.steps.append(step)
        self.last_signature = f"harness|{type(error).__name__}|{error}"
        return DivergenceError(message, self.last_signature, step)

    def _unsupported(self, action: str, json_args: Any, error: UnsupportedError) -> None:
        """Record a step the implementation does not support (no result, no divergence)."""
        unsupported = {"unsupported": {"message": str(error)}}
        self.steps.append(TraceStep(action, json_args, None, unsupported))

    def _step(self, action: str, args: dict[str, Any]) -> tuple[StepResult, StepResult] | None:
        json_args = encode_args(action, args)
        try:
            impl = execute(self.sut, action, args)
        except UnsupportedError as error:
            self._unsupported(action, json_args, error)
            return None
        before = self.model.partition_state
        alternatives = self._advance_alternatives(action, args, impl)
        model = execute(self.model, action, args)
        if "transactions" not in self.sut.features and isinstance(model.value, v.FetchDataInfo):
            model = replace(model, value=without_transactions(model.value))
        self.actions[action] += 1
        self._cover(action, before, model, args)
        problem = self._compare(action, model, impl)
        if problem is not None and alternatives:
            # After a crash the model may not know which of several equal-looking states the
            # implementation recovered (e.g. an index rebuilt or kept): continue from one that
            # answers like the implementation.
            self.model.restore(alternatives[0])
            self.alternatives = alternatives[1:]
            model = StepResult(value=impl.value) if impl.ok else impl
            problem = self._compare(action, model, impl)
        choice = None
        if problem is not None and (problem[0] == "result" or problem[0].startswith("state.")):
            allowed = allowed_outcome(self.model, self.sut, action, args, before, impl)
            if allowed is not None:  # another Kafka-legal choice (KL-ALLOW-1): continue from it
                model, choice = allowed
                self._cover(action, before, model, args)
                problem = self._compare(action, model, impl)
        if problem is not None and problem[0] == "result" and \
                black_box.is_black_box(self.sut.features):
            pruned = black_box.after_background_deletion(self.model, action, args, before, impl)
            if pruned is not None:  # the broker's retention thread ran (KL-WIRE-10)
                model, choice = pruned, black_box.BACKGROUND_DELETION
                problem = self._compare(action, model, impl)
        if problem is not None and problem[0] == "result" and \
                black_box.is_black_box(self.sut.features):
            dated = black_box.with_broker_file_times(self.model, action, args, before, impl)
            if dated is not None:  # the broker's file times are its wall clock (KL-WIRE-5)
                model, choice = dated, black_box.BROKER_FILE_TIMES
                problem = self._compare(action, model, impl)
        message = None if problem is None else problem[1]
        step = TraceStep(action, json_args, model.to_json(), impl.to_json(), message, choice)
        self.steps.append(step)
        if problem is not None:
            self.last_signature = self._signature(action, model, impl, problem[0])
            raise DivergenceError(problem[1], self.last_signature, step)
        return model, impl

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

    # --- crash steps (judged by crash/crash_steps.py, recorded here) ---------------------------

    def _timed_crash_step(self, args: dict[str, Any]) -> tuple[StepResult, StepResult] | None:
        started = time.process_time()
        try:
            return self._crash_step(args)
        finally:
            self.crash_steps.crash_s += time.process_time() - started

    def _crash_step(self, args: dict[str, Any]) -> tuple[StepResult, StepResult] | None:
        """A crash step: the sweep (when on), then the crash itself, then the in-load and
        idempotence checks it asks for."""
        since_last_crash, transactional = self._actions_since_crash(), self._transactional()
        # KL-ALLOW-10 is exercised when a torn image is judged (drawn, or swept with the rest)
        # while the model's torn set holds mixed headers.
        torn = (args.get("fault") == "power_loss_torn" or self.crash_steps.sweep) \
            and self.model.torn_headers()
        planned = self.crash_steps.plan(args, self.alternatives)
        self.rules |= planned.rules
        args = planned.args
        json_args = encode_args("crash", args)
        try:
            impl = execute(self.sut, "crash", args)
        except UnsupportedError as error:
            self._unsupported("crash", json_args, error)
            return None
        context = since_last_crash, transactional, torn
        results = self._crash(args, json_args, impl, planned.covered, context)
        found = self.crash_steps.in_load_finding(args, self.steps[-1])
        if found is not None:
            step, problem, code = found
            self._fail_crash_step(step, problem, f"crash|ok|{code}|crash.in_load.", "KL-CRASH-14")
        if args.get("idempotence") and not self.offline:  # a failed load has no state to keep
            problem, code = self.crash_steps.recrash(args)
            if problem is not None:
                self._fail_crash_step(self.steps[-1], problem, f"crash|ok|{code}|", "KL-CRASH-7")
        return results

    def _crash(self, args: dict[str, Any], json_args: Any, impl: StepResult, covered: bool,
               context: tuple[frozenset[str], bool, bool]) -> tuple[StepResult, StepResult]:
        """Record a crash step with `CrashSteps.judge`'s verdict and the internal checks."""
        self.actions["crash"] += 1
        verdict = self.crash_steps.judge(args, impl, self.alternatives, covered)
        self.alternatives, self.offline = verdict.alternatives, verdict.offline
        problem = verdict.problem
        if problem is None and not self.offline:
            problem = self._internal_checks()
        message = None if problem is None else problem[1]
        step = TraceStep("crash", json_args, verdict.model.to_json(), impl.to_json(), message)
        self.steps.append(step)
        self.last_rules = frozenset(crash_rules(args, impl, *context))
        self.rules |= self.last_rules
        if problem is not None:
            self.last_signature = self._signature("crash", verdict.model, impl, problem[0])
            if problem[0].startswith("crash.in_load."):
                self.last_signature = self.last_signature.rsplit("|", 1)[0] + "|KL-CRASH-14"
            raise DivergenceError(problem[1], self.last_signature, step)
        return verdict.model, impl

    def _actions_since_crash(self) -> frozenset[str]:
        """The actions recorded since the last crash step (or the start)."""
        actions: set[str] = set()
        for step in reversed(self.steps):
            if step.action == "crash":
                break
            actions.add(step.action)
        return frozenset(actions)

    def _transactional(self) -> bool:
        """Whether the model's log holds an aborted or an ongoing transaction."""
        view = self.model.state()
        return bool(view.aborted_txns) or any(p.current_txn_first_offset >= 0
                                              for p in view.producers)

    def _fail_crash_step(self, step: TraceStep, problem: Problem, prefix: str, rule: str) -> None:
        """A check after the crash failed: it becomes the crash step's divergence."""
        step = self.steps[-1] = replace(step, divergence=problem[1])
        self.last_signature = f"{prefix}{signature_kind(problem[0])}|{rule}"
        raise DivergenceError(problem[1], self.last_signature, step)

    # --- coverage and comparing -------------------------------------------------------------

    def _cover(self, action: str, before: Any, model: StepResult,
               args: dict[str, Any] | None = None) -> None:
        """Add the spec rules the model says this step exercised (model/coverage/rules.py)."""
        outcome: Any = model.value
        if not model.ok:
            outcome = _error_of(ACTION_ERRORS.get(model.code or "", KafkalogError), model.message)
        after = self.model.partition_state
        self.last_rules = frozenset(rules_exercised(action, before, after, outcome, args))
        self.rules |= self.last_rules

    def _compare(self, action: str, model: StepResult,
                 impl: StepResult) -> Problem | None:
        """(kind, message) of the first failed check after a step, or None when all pass."""
        opaque = black_box.is_black_box(self.sut.features)  # compare what the wire shows only
        if opaque and model.ok and impl.ok:
            model = dataclasses.replace(model, value=black_box.project_result(model.value))
            impl = dataclasses.replace(impl, value=black_box.project_result(impl.value))
        version = self.model.partition_state.config.kafka_version
        if not model.same_as(impl) and not same_where_defined(model, impl, version, action):
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
            model_state, impl_state = black_box.project_states(model_state, impl_state)
        if model_state != impl_state:
            where = first_difference(model_state, impl_state)
            text = f"state differs at {where[0]}: model {where[1]!r} | impl {where[2]!r}"
            return f"state.{where[0]}", text
        broken = black_box.view_invariants(impl_state) if opaque else view_invariants(impl_state)
        if broken:
            return f"invariant.{broken[0]}", f"invariant broken: {', '.join(broken)}"
        return self._internal_checks()

    def _internal_checks(self) -> Problem | None:
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
        return f"{action}|{model.code or 'ok'}|{impl.code or 'ok'}|{signature_kind(kind)}|{rule}"


def _error_of(cls: type[KafkalogError], message: str) -> KafkalogError:
    try:
        return cls(message)
    except TypeError:  # UnexpectedAppendOffsetError needs its offsets; coverage wants the type
        return cls(message, -1, -1)  # type: ignore[call-arg]
