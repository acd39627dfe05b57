"""Pure helpers over `LogStateView`s that the lockstep checks use (split from lockstep.py).

`masked_to` hides from the model's view what an adapter does not report, `view_invariants` names
the observable invariants a full view breaks, `first_difference` finds where two views differ
(divergence messages and signatures).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

from kafkalog.model import values as v


def masked_to(model_state: v.LogStateView, impl_state: v.LogStateView) -> v.LogStateView:
    """The model's view without what the adapter does not report (None: no `producer_state`
    feature, or an implementation without Kafka's `.snapshot` files). Fields that are None on
    both sides already are left as they are (a copy per step costs more than the check)."""
    hidden = {name: None for name in _MASKABLE
              if getattr(impl_state, name) is None and getattr(model_state, name) is not None}
    return replace(model_state, **hidden) if hidden else model_state


#: The optional `LogStateView` fields an adapter may leave out (None: not reported).
_MASKABLE = ("producers", "producer_snapshots", "last_stable_offset", "aborted_txns",
             "producer_snapshot_tables", "cleaner_checkpoint")


def view_invariants(state: v.LogStateView) -> list[str]:
    """Names of the observable-state invariants that `state` breaks (LOG-2, REC-19)."""
    broken = []
    if not state.log_start_offset <= state.high_watermark <= state.log_end_offset:
        broken.append("log_start_offset <= high_watermark <= log_end_offset")
    if state.recovery_point > state.log_end_offset:
        broken.append("recovery_point <= log_end_offset")
    if not state.segments:
        broken.append("at least one segment")
    bases = [s.base_offset for s in state.segments]
    if bases != sorted(set(bases)):
        broken.append("segment base offsets strictly increase")
    epochs = state.epoch_entries
    pairs = zip(epochs, epochs[1:], strict=False)
    if any(a.epoch >= b.epoch or a.start_offset >= b.start_offset for a, b in pairs):
        broken.append("epoch entries strictly increase")
    return broken


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any]:
    """The path of the first field where two values differ, and both sides' values there."""
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        for f in dataclasses.fields(a):
            x, y = getattr(a, f.name), getattr(b, f.name)
            if x != y:
                return first_difference(x, y, f"{path}.{f.name}" if path else f.name)
    if isinstance(a, tuple) and isinstance(b, tuple):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            return f"{path}.length", len(a), len(b)
    return path or "value", a, b
