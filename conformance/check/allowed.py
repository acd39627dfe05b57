"""The checker's side of allowed sets (KL-ALLOW-1): explain an answer by another Kafka choice.

When the implementation's answer or state differs from the model's default (kafkalog's own
choices), `allowed_outcome` re-runs the step over every combination of the model's choice points
(`kafkalog.model.choices`), with pending roll flushes allowed to run first (KL-ALLOW-3). If one
outcome gives the same answer and the same `state()`, the model adopts it and the run continues
from the implementation's choice; otherwise the divergence stands.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import islice
from typing import Any

from kafkalog.conformance.check import black_box
from kafkalog.conformance.check.observe import comparable
from kafkalog.conformance.check.sut import ModelSut, StepResult, Sut
from kafkalog.conformance.check.view_checks import masked_to
from kafkalog.model import log
from kafkalog.model import values as v
from kafkalog.model.choices import outcomes
from kafkalog.model.local_log import fire_pending_flushes
from kafkalog.model.state import PartitionState
from kafkalog.model.versions import unobserved_result_fields


def same_where_defined(model: StepResult, impl: StepResult, version: str, action: str) -> bool:
    """Both succeeded with values equal in every field the Kafka profile defines (KL-VERSION-2)."""
    unobserved = unobserved_result_fields(version, action)
    if not (unobserved and model.ok and impl.ok) or type(model.value) is not type(impl.value):
        return False
    masked = dict.fromkeys(unobserved, None)
    return bool(replace(model.value, **masked) == replace(impl.value, **masked))


def same_observed_state(model_view: v.LogStateView, impl_view: v.LogStateView,
                        features: frozenset[str]) -> bool:
    """The views are equal in everything the lockstep compares: what the implementation does not
    report (`comparable`, `masked_to`) or a black box does not show is left out, as after a step."""
    model_view, impl_view = comparable(model_view, impl_view)
    model_view = masked_to(model_view, impl_view)
    if black_box.is_black_box(features):
        model_view = black_box.project_state(model_view)
        impl_view = black_box.project_state(impl_view)
    return bool(model_view == impl_view)


def allowed_outcome(model: ModelSut, sut: Sut, action: str, args: dict[str, Any],
                    before: PartitionState, impl: StepResult) -> tuple[StepResult, str] | None:
    """(the model's answer, the choices) of the outcome matching `impl`, adopted; else None."""
    function = getattr(log, action)

    def run(state: PartitionState) -> tuple[PartitionState, Any]:
        # KL-ALLOW-3: a pending roll flush may run before the step or right after it (a flush
        # scheduled inside this step to a base above the LEO, once the append passed the base).
        after, value = function(fire_pending_flushes(state), **args)
        return fire_pending_flushes(after), value

    impl_state = None
    for outcome in islice(outcomes(run, before), 1, None):
        if outcome.error is not None:
            after, answer = before, StepResult(code=outcome.error.code, message=str(outcome.error))
        else:
            after, value = outcome.value
            answer = StepResult(value=value)
        version = before.config.kafka_version
        if not (answer.same_as(impl) or same_where_defined(answer, impl, version, action)):
            continue
        if impl_state is None:
            impl_state = sut.state()
        if same_observed_state(log.view(after), impl_state, sut.features):
            model.partition_state = after
            return answer, ",".join(outcome.choices)
    return None
