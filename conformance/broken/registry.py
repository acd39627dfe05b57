"""Every broken implementation by name, and how `--broken NAME` runs one.

The log's bugs (`BROKEN`: kafka_bugs.py, off_by_ones.py), the crash-recovery ones (crash.py),
the producer-state ones (producer.py), the transaction ones (txn.py) and the log cleaner's
(cleaner.py) share one namespace:
`kafkalog check --broken NAME`, `serve-adapter --broken NAME` and trace headers name them.

A bug is installed while at least one `BrokenImplSut` of that name is open and removed when the
last one closes, so a process that also runs the real implementation afterwards (pytest) gets
the real code back. Patches are process-wide: never run a broken and a real log at the same time
in one process (the runner and `serve-adapter --broken` never do).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalog.conformance.broken.base import Broken, apply, restore
from kafkalog.conformance.broken.cleaner import CLEANER_BROKEN
from kafkalog.conformance.broken.crash import BROKEN_CRASH
from kafkalog.conformance.broken.kafka_bugs import KAFKA_BUGS
from kafkalog.conformance.broken.off_by_ones import OFF_BY_ONES
from kafkalog.conformance.broken.producer import PRODUCER_BROKEN
from kafkalog.conformance.broken.txn import TXN_BROKEN
from kafkalog.conformance.check.impl_sut import ImplSut
from kafkalog.conformance.errors import UnknownBrokenImplError
from kafkalog.model import values as v

#: The log's bugs: historical Kafka bugs and slips of a rule, each caught by default `check`.
BROKEN: dict[str, Broken] = {b.name: b for b in (*KAFKA_BUGS, *OFF_BY_ONES)}

_installed: dict[str, tuple[int, list[tuple[Any, str, Any]]]] = {}  # name -> (users, originals)


def all_broken() -> dict[str, Broken]:
    """Every broken implementation `--broken NAME` reaches."""
    return {**BROKEN, **BROKEN_CRASH, **PRODUCER_BROKEN, **TXN_BROKEN, **CLEANER_BROKEN}


def broken_class(name: str) -> Broken:
    """The Broken entry of `name`; raises UnknownBrokenImplError naming the known ones."""
    catalogue = all_broken()
    try:
        return catalogue[name]
    except KeyError:
        known = ", ".join(sorted(catalogue))
        raise UnknownBrokenImplError(
            f"unknown broken implementation {name!r} (known: {known})"
        ) from None


def install(name: str) -> None:
    """Put the bug in (reference-counted), where the patched attributes are defined."""
    broken = broken_class(name)
    count, originals = _installed.get(name, (0, []))
    if count == 0:
        originals = apply(broken)
    _installed[name] = (count + 1, originals)


def uninstall(name: str) -> None:
    """Take the bug out again once the last user is gone."""
    count, originals = _installed[name]
    if count == 1:
        restore(originals)
        del _installed[name]
    else:
        _installed[name] = (count - 1, originals)


def broken_factory(name: str) -> Callable[[v.LogConfig, int, int], ImplSut]:
    """A factory of ImplSuts running with bug `name` installed."""
    broken_class(name)

    def open_log(config: v.LogConfig, now_ms: int, log_start_offset: int) -> ImplSut:
        return BrokenImplSut(name, config, now_ms, log_start_offset)

    return open_log


class BrokenImplSut(ImplSut):
    """The in-process implementation with one bug installed for as long as it is open."""

    def __init__(self, broken: str, config: v.LogConfig, now_ms: int = 0,
                 log_start_offset: int = 0) -> None:
        install(broken)
        self.broken = broken
        self.name = f"kafkalog-impl broken={broken}"
        try:
            super().__init__(config, now_ms, log_start_offset)
        except BaseException:
            uninstall(broken)
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            uninstall(self.broken)
