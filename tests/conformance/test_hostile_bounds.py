"""Out-of-range integers and unencodable header keys: the model and the implementation both
answer IllegalArgumentError at the action boundary, never struct.error."""

from __future__ import annotations

from typing import Any

import pytest
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.check.sut import ModelSut, execute
from kafkalog.model import values as v

LONG_OVER = 2**63
INT_OVER = 2**31


def record(timestamp: int = 0, header_key: str = "h") -> v.Record:
    return v.Record(None, b"x", timestamp, (v.Header(header_key, None),))


CASES: list[tuple[str, dict[str, Any]]] = [
    ("append_as_leader", {"records": (record(),), "leader_epoch": INT_OVER}),
    ("append_as_leader", {"records": (record(),), "leader_epoch": -INT_OVER - 1}),
    ("append_as_leader", {"records": (record(timestamp=LONG_OVER),), "leader_epoch": 0}),
    ("append_as_leader", {"records": (record(header_key="\ud800"),), "leader_epoch": 0}),
    ("append_as_follower", {"batches": (v.BatchSpec(0, INT_OVER, (record(),)),)}),
    ("append_as_follower", {"batches": (v.BatchSpec(LONG_OVER, 0, (record(),)),)}),
    ("assign_epoch", {"epoch": INT_OVER, "start_offset": 0}),
    ("assign_epoch", {"epoch": 0, "start_offset": LONG_OVER}),
    ("end_offset_for_epoch", {"epoch": 2**40}),
    ("truncate_fully_and_start_at", {"offset": LONG_OVER}),
    ("truncate_to", {"offset": LONG_OVER}),
    ("update_high_watermark", {"offset": LONG_OVER}),
    ("maybe_increment_log_start_offset", {"offset": LONG_OVER}),
    ("flush", {"offset": LONG_OVER}),
    ("roll", {"expected_next_offset": LONG_OVER}),
    ("fetch_offset_by_timestamp", {"timestamp": LONG_OVER}),
    ("read", {"start_offset": LONG_OVER, "max_bytes": 100, "isolation": v.Isolation.LOG_END,
              "min_one_message": True}),
    ("advance_clock", {"ms": -1}),
    ("advance_clock", {"ms": LONG_OVER}),
]


@pytest.mark.parametrize(("action", "args"), CASES, ids=[f"{a}-{i}" for i, (a, _) in
                                                       enumerate(CASES)])
def test_out_of_range_argument__model_and_impl__both_illegal_argument(
        action: str, args: dict[str, Any]) -> None:
    """Spec: KL-BOUND-1: the same typed error on both sides, and the log stays usable."""
    model, impl = ModelSut(v.LogConfig()), ImplSut(v.LogConfig())
    try:
        results = [execute(sut, action, args) for sut in (model, impl)]
        assert [r.code for r in results] == ["IllegalArgumentError"] * 2, results
        after = [execute(s, "append_as_leader", {"records": (record(),), "leader_epoch": 0})
                 for s in (model, impl)]
        assert after[0] == after[1] and after[0].ok
    finally:
        impl.close()


def test_append_past_long_max__both_sides__illegal_argument_and_reopen_works() -> None:
    """Spec: KL-BOUND-1: a LEO beyond Long.MAX is refused, so every checkpoint stays readable."""
    model, impl = ModelSut(v.LogConfig()), ImplSut(v.LogConfig())
    try:
        for sut in (model, impl):
            assert execute(sut, "truncate_fully_and_start_at", {"offset": LONG_OVER - 2}).ok
            one = execute(sut, "append_as_leader", {"records": (record(),), "leader_epoch": 0})
            two = execute(sut, "append_as_leader", {"records": (record(),), "leader_epoch": 0})
            assert one.ok and two.code == "IllegalArgumentError"
            assert execute(sut, "close_and_reopen", {}).ok
        assert model.state() == impl.state()
        assert impl.state().log_end_offset == LONG_OVER - 1
    finally:
        impl.close()


def test_open_with_clock_beyond_long__both_sides__illegal_argument() -> None:
    """Spec: KL-BOUND-1: a clock outside int64 is refused at open, before any file is stamped."""
    for factory in (ModelSut, ImplSut):
        with pytest.raises(Exception) as raised:
            factory(v.LogConfig(), 2**80)
        assert type(raised.value).__name__ == "IllegalArgumentError"


def test_advance_clock_by_2_pow_62__impl_finishes_and_agrees_with_the_model() -> None:
    """Found by the fuzz suite: the periodic producer expiry check ran once per interval across a
    2**62 ms jump (a hang); it now skips to its last due run, as the model does (KL-PROD-9)."""
    from kafkalog.conformance.fuzz.harness import time_limit

    model, impl = ModelSut(v.LogConfig()), ImplSut(v.LogConfig())
    try:
        with time_limit(20):
            results = [execute(sut, "advance_clock", {"ms": 2**62}) for sut in (model, impl)]
        assert results[0] == results[1] and results[0].ok
        assert model.state() == impl.state()
    finally:
        impl.close()
