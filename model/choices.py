"""Allowed sets: where Kafka is nondeterministic, every behaviour it may show (specs/log.md §18).

kafkalog decides a few things deterministically that Kafka leaves to chance or to a background
thread (KL-ALLOW-1..4). An implementation that makes another Kafka-legal choice must still conform,
so the model marks each such decision as a *choice point*: `choose(point, options)` returns
`options[0]` — kafkalog's own choice — in an ordinary call, and `outcomes` re-runs an action once
per combination of options, yielding every allowed outcome. The checker
(conformance/check/lockstep.py)
accepts an implementation whose answer and state match any outcome and continues from that one.

Pure: the chooser is a context variable read only while `outcomes` runs an action; outside it the
model behaves exactly as if there were no choice points.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import KafkalogError

T = TypeVar("T")


class _Chooser:
    """Follows a script of option indexes; past its end it takes option 0 and notes the point."""

    def __init__(self, script: tuple[int, ...]) -> None:
        self.script = script
        self.trail: list[tuple[str, int, int]] = []  # (point, index taken, option count)

    def pick(self, point: str, count: int) -> int:
        position = len(self.trail)
        index = self.script[position] if position < len(self.script) else 0
        self.trail.append((point, index, count))
        return index


_CHOOSER: ContextVar[_Chooser | None] = ContextVar("kafkalog_model_chooser", default=None)


def choose(point: str, options: Sequence[T]) -> T:
    """One of `options` (never empty); `options[0]` is kafkalog's choice. Spec: KL-ALLOW-1."""
    chooser = _CHOOSER.get()
    if chooser is None or len(options) == 1:
        return options[0]
    return options[chooser.pick(point, len(options))]


@dataclass(frozen=True)
class Outcome:
    """One allowed outcome: the choices taken (`point=index`), and a value or a typed error."""

    choices: tuple[str, ...]
    value: Any = None
    error: KafkalogError | None = None


def outcomes(action: Callable[..., T], *args: Any, limit: int = 64) -> Iterator[Outcome]:
    """Every outcome of `action(*args)` over all combinations of its choice points.

    The first is kafkalog's own (every point at option 0); at most `limit` are produced (the
    points of one action multiply to a handful in practice). Spec: KL-ALLOW-1.
    """
    pending: list[tuple[int, ...]] = [()]
    produced = 0
    while pending and produced < limit:
        script = pending.pop(0)
        chooser = _Chooser(script)
        token = _CHOOSER.set(chooser)
        try:
            value: Any = action(*args)
            error = None
        except KafkalogError as raised:
            value, error = None, raised
        finally:
            _CHOOSER.reset(token)
        labels = tuple(f"{point}={index}" for point, index, _ in chooser.trail if index)
        produced += 1
        yield Outcome(labels, value, error)
        taken = tuple(index for _, index, _ in chooser.trail)
        for position in range(len(script), len(chooser.trail)):
            count = chooser.trail[position][2]
            pending.extend(taken[:position] + (alt,) for alt in range(1, count))
