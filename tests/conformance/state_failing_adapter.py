"""An adapter whose log fails to report its state once it holds a record (`serve-adapter` over
the model otherwise), as Tansu-SQLite's ListOffsets fails over a record without a timestamp:
the `state` request's implementation raises UnexpectedException (test_state_failure.py)."""

from __future__ import annotations

from kafkalog.conformance.adapter.server import serve
from kafkalog.conformance.check.sut import ModelSut
from kafkalog.conformance.errors import UnexpectedException
from kafkalog.model import values as v

FEATURES = frozenset({"core"})


class StateFailsSut(ModelSut):
    """The model, except that `state()` raises once the log is not empty."""

    def state(self) -> v.LogStateView:
        view = super().state()
        if view.log_end_offset > 0:
            raise UnexpectedException("ListOffsets EARLIEST: the broker dropped the connection "
                                      "(SansIo(TryFromInt))\nsecond line", where="broker")
        return view


if __name__ == "__main__":
    raise SystemExit(serve(StateFailsSut, "state-fails", FEATURES))
