"""Implementation variants for allowed sets: Kafka's own choice, and one Kafka never makes.

The other modules of conformance/broken/ hold bugs the checker must catch. This module holds
variants of kafkalog's implementation that behave as Kafka does where kafkalog decides
differently on purpose (specs/log.md §17, §18): the checker must accept them
(`conforms=True`). Next to each, a look-alike that does something no Kafka version does, which
the checker must reject (`conforms=False`), so the allowed set is shown to be no wider than
Kafka.

Patches are process-wide, like broken implementations: never run a variant and the real
implementation at the same time in one process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kafkalog.conformance.broken.base import Broken, Diff, diff, installed
from kafkalog.conformance.errors import UnknownBrokenImplError
from kafkalog.impl.load.log_loader import LogLoader
from kafkalog.impl.log.local_log import LocalLog


@dataclass(frozen=True)
class Variant:
    """One implementation variant: what it patches, the rule it exercises, whether it conforms."""

    name: str
    rule: str
    summary: str
    owner: type
    attribute: str
    replacement: Diff | Any  # stated against the current code, like a broken one's (base.py)
    conforms: bool

    def as_broken(self) -> Broken:
        """The variant as a `Broken` record, so it is installed (and checked) the same way."""
        return Broken(self.name, self.rule, self.rule, self.summary, self.owner, self.attribute,
                      self.replacement)


_REMOVE_LATER_SEGMENTS = """\
                for later in unflushed[i + 1 :]:
                    if not self.segments.contains(later.base_offset):
                        continue  # removed before the cut (`_cut_first`)
                    self.segments.remove(later.base_offset)
                    self._truncated_bytes += later.size()
                    if self.defer_cut_deletion:  # Kafka's way (KL-ALLOW-5)
                        later.change_file_suffixes("", DELETED_FILE_SUFFIX)
                        self._deferred.append(later)
                    else:
                        later.delete_if_exists()
                    self._dir_changed = True
"""

#: kafkalog's shortcut for a roll onto the empty active segment's base (KL-ROLL-6, §17).
_REPLACE_IN_PLACE = ("        if new_offset == old.base_offset and not "
                     "old.has_suffix(DELETED_FILE_SUFFIX):\n"
                     "            return self._replace_in_place(old, async_delete)\n")

VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("recovery_cut_deletes_async", "KL-ALLOW-5",
                "recovery's cut renames the later segments `.deleted` and deletes them after "
                "file_delete_delay_ms (Kafka's removeAndDeleteSegmentsAsync)",
                LogLoader, "defer_cut_deletion", True, conforms=True),
        Variant("recovery_cut_keeps_later_segments", "KL-ALLOW-5",
                "recovery's cut keeps the later segments readable (no Kafka version does)",
                LogLoader, "_recover_segments_in_order",
                # RCV-6 undone the way no Kafka does: the torn segment is cut, and neither the
                # strict loader's removals before the cut (KL-CRASH-14) nor those after it run.
                diff(("cut = self._cut_first(segment.base_offset) if self._strict_order() "
                      "else None", "cut = None"),
                     (_REMOVE_LATER_SEGMENTS, "")),
                conforms=False),
        Variant("roll_replace_renames_deleted", "KL-ALLOW-6",
                "a roll onto the empty active segment's base renames its files `.deleted`, then "
                "creates the new ones and deletes the old after file_delete_delay_ms (Kafka's "
                "LocalLog.createAndDeleteSegment)",
                LocalLog, "create_and_delete_segment",
                # kafkalog's atomic replace skipped: the general path is Kafka's order.
                diff((_REPLACE_IN_PLACE, "")),
                conforms=True),
        Variant("roll_replace_loses_base", "KL-ALLOW-6",
                "a roll onto the empty active segment's base renames its files `.deleted` and "
                "keeps the new ones under `.cleaned` names, which no load takes for a segment "
                "(no Kafka version loses the base of a roll that returned)",
                LocalLog, "create_and_delete_segment",
                diff((_REPLACE_IN_PLACE, "        suffix = CLEANED_FILE_SUFFIX if new_offset == "
                      "old.base_offset and not old.has_suffix(DELETED_FILE_SUFFIX) else ''\n"),
                     ("LogSegment.open(self.fs, self.dir, new_offset, self.config, self.time)",
                      "LogSegment.open(self.fs, self.dir, new_offset, self.config, self.time, "
                      "file_suffix=suffix)")),
                conforms=False),
    )
}


@contextmanager
def patched_variant(name: str) -> Iterator[Variant]:
    """Install variant `name` for the duration of the block."""
    try:
        variant = VARIANTS[name]
    except KeyError:
        known = ", ".join(sorted(VARIANTS))
        raise UnknownBrokenImplError(
            f"unknown implementation variant {name!r} (known: {known})") from None
    with installed(variant.as_broken()):
        yield variant


def variant_names(conforming: bool) -> list[str]:
    """The variants the checker must accept (True) or reject (False)."""
    return sorted(n for n, v in VARIANTS.items() if v.conforms is conforming)
