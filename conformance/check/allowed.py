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

from kafkalog.conformance.check.sut import ModelSut, StepResult, Sut
from kafkalog.model import log
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


def allowed_outcome(model: ModelSut, sut: Sut, action: str, args: dict[str, Any],
                    before: PartitionState, impl: StepResult) -> tuple[StepResult, str] | None:
    """(the model's answer, the choices) of the outcome matching `impl`, adopted; else None."""
    function = getattr(log, action)

    def run(state: PartitionState) -> Any:
        return function(fire_pending_flushes(state), **args)

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
        if log.view(after) == impl_state:
            model.partition_state = after
            return answer, ",".join(outcome.choices)
    return None
