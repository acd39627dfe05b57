"""Which version-profile rules (KL-VERSION-*) one step exercised; joined into `coverage/rules.py`.

A step exercises a KL-VERSION rule when the profile decides part of its answer or of the state it
leaves, on either side of the rule's version range: a campaign that runs several profiles then
shows which behaviours it compared under each.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..values import FetchDataInfo, LogAppendInfo

#: ListOffsets targets whose answer a profile decides: MAX_TIMESTAMP (KL-VERSION-6) and
#: EARLIEST_PENDING_UPLOAD (KL-VERSION-7).
_MAX_TIMESTAMP, _EARLIEST_PENDING_UPLOAD = -3, -6


def _append_version_rules(action: str, info: LogAppendInfo) -> set[str]:
    """KL-VERSION-2 (the reported offset of the max timestamp), KL-VERSION-4 (index entries per
    batch or per append) and, for a follower, KL-VERSION-5 (the newer-epoch filter)."""
    if info.record_count == 0:
        return set()
    rules = {"KL-VERSION-2", "KL-VERSION-4"}
    if action == "append_as_follower":
        rules.add("KL-VERSION-5")
    return rules


def version_rules(action: str, outcome: object, args: Mapping[str, object] | None) -> set[str]:
    """Spec: KL-VERSION-1 (a profile decided this step: recorded with every other rule here),
    KL-VERSION-2, 4, 5 (appends), KL-VERSION-3 (a read that returned records), KL-VERSION-6,
    7 (ListOffsets with the target whose answer depends on the release)."""
    rules: set[str] = set()
    if action in ("append_as_leader", "append_as_follower") and isinstance(outcome,
                                                                            LogAppendInfo):
        rules = _append_version_rules(action, outcome)
    elif action == "read" and isinstance(outcome, FetchDataInfo) and outcome.size_in_bytes:
        rules = {"KL-VERSION-3"}
    elif action == "fetch_offset_by_timestamp":
        target = (args or {}).get("timestamp")
        if target == _MAX_TIMESTAMP:
            rules = {"KL-VERSION-6"}
        elif target == _EARLIEST_PENDING_UPLOAD:
            rules = {"KL-VERSION-7"}
    return rules | {"KL-VERSION-1"} if rules else rules
