"""A run's time limit as a control-flow signal (`TimeUp`), checked between steps and between
the crash points of a sweep, which may take minutes on its own."""

from __future__ import annotations

import time


class TimeUp(BaseException):  # noqa: N818 - a control-flow signal, not an error type
    """The run's time limit passed; raised between steps and between a sweep's crash points,
    never inside an action or a load, so nothing is left half-written."""


def check_deadline(deadline: float | None) -> None:
    """Raise TimeUp once `time.monotonic()` is past `deadline` (None: no limit)."""
    if deadline is not None and time.monotonic() > deadline:
        raise TimeUp()
