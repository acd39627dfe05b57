"""The vector catalogue: which calls make the minimal vector of each spec rule.

`catalogue.json` (next to this module) holds, per rule, a config family and the calls of a
minimal trace in the adapter protocol's JSON. Most entries come from `search.search` (the
machine's runs, shrunk); the rules a step classifier cannot see (invariants checked after every
step, allowed sets, version profiles, ...) get the hand-written scenarios below. Regenerate
with `kafkalog vectors catalogue` after a change of the model or the machine, and review the
diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafkalog.conformance.adapter.json_codec import decode_args, encode_args
from kafkalog.conformance.check.session import START_MS
from kafkalog.conformance.vectors.search import search
from kafkalog.model import values as v

CATALOGUE_PATH = Path(__file__).with_name("catalogue.json")
CATALOGUE_VERSION = 1

Call = tuple[str, dict[str, Any]]
T = START_MS


def _rec(ts: int = T, value: bytes = b"test") -> v.Record:
    return v.Record(None, value, ts)


def _leader(*timestamps: int, epoch: int = 0) -> Call:
    return ("append_as_leader", {"records": tuple(_rec(t) for t in timestamps),
                                 "leader_epoch": epoch})


def _read(offset: int, isolation: v.Isolation = v.Isolation.LOG_END) -> Call:
    return ("read", {"start_offset": offset, "max_bytes": 1000, "isolation": isolation,
                     "min_one_message": False})


def _invariants() -> list[Call]:
    """Invariants and state rules hold after every step; one append, one roll, one cut."""
    return [_leader(T, T), ("roll", {"expected_next_offset": None}), _leader(T),
            ("truncate_to", {"offset": 1})]


#: Hand scenarios: rule -> (config family, calls). Each names the rule it pins in a comment.
HAND: dict[str, tuple[str, list[Call]]] = {
    # KL-ALLOW-2: waited 800 on a 1000 ms segment: kafkalog's jitter keeps it, a draw > 200 rolls.
    "KL-ALLOW-2": ("time_roll", [_leader(T), _leader(T + 800), _leader(T + 1600)]),
    # KL-ALLOW-3: a roll whose flush Kafka may run later, then a flush that settles it.
    "KL-ALLOW-3": ("tiny", [_leader(T, T), ("roll", {"expected_next_offset": None}),
                            _leader(T), ("flush", {"offset": None})]),
    # KL-ALLOW-4: an HW inside a batch, materialised by a high-watermark read.
    "KL-ALLOW-4": ("tiny", [_leader(T, T, T), ("update_high_watermark", {"offset": 1}),
                            _read(0, v.Isolation.HIGH_WATERMARK)]),
    "KL-ALLOW-1": ("time_roll", [_leader(T), _leader(T + 800)]),
    # KL-BOUND-1: an epoch past int32, a clock moved back, then a LEO that would pass Long.MAX
    # (assign_epoch needs `leader_epochs`: adapters with `core` only, e.g. JavaScript's
    # float64 numbers, skip a vector whose offsets they cannot even represent).
    "KL-BOUND-1": ("tiny", [("assign_epoch", {"epoch": 2**31, "start_offset": 0}),
                            ("advance_clock", {"ms": -1}),
                            ("truncate_fully_and_start_at", {"offset": 2**63 - 2}),
                            _leader(T), _leader(T)]),
    # KL-EPOCH-5 (epoch for an offset) is internal; its vector walks the cache around it.
    "KL-EPOCH-5": ("tiny", [_leader(T, epoch=1), ("assign_epoch", {"epoch": 3, "start_offset": 1}),
                            _leader(T, epoch=3), ("end_offset_for_epoch", {"epoch": 2})]),
    # KL-HW-6: one metadata field at -1 is full metadata, compared by segment base.
    "KL-HW-6": ("tiny", [_leader(T, T), ("maybe_increment_high_watermark",
                                         {"hw": v.LogOffsetMetadata(1, -1, 72)}),
                         ("maybe_increment_high_watermark",
                          {"hw": v.LogOffsetMetadata(1, 0, 72)})]),
    # KL-VERSION-*: calls whose answers differ between profiles (the export adds one vector per
    # profile where they do).
    "KL-VERSION-1": ("tiny", [_leader(T)]),
    "KL-VERSION-2": ("tiny", [_leader(T + 5, T + 9, T + 7), _leader(-1, -1)]),
    "KL-VERSION-3": ("tiny", [_leader(T, T, T), _read(1)]),
    "KL-VERSION-4": ("index_full", [("append_as_follower", {
        "batches": tuple(v.BatchSpec(i, 0, (_rec(),)) for i in range(2)), "leader_epoch": None})]),
    "KL-VERSION-5": ("tiny", [("append_as_follower", {
        "batches": (v.BatchSpec(0, 1, (_rec(),)), v.BatchSpec(1, 5, (_rec(),))),
        "leader_epoch": 1})]),
    "KL-VERSION-6": ("tiny", [_leader(T, T + 9, T + 2), _leader(T + 1, epoch=2),
                              ("fetch_offset_by_timestamp", {"timestamp": -3})]),
}
_INVARIANT_RULES = ["KL-STATE-1", "KL-STATE-2", "KL-STATE-3"] + [f"KL-INV-{n}" for n in
                                                                   range(1, 18)]


def _put(key: int, value: bytes | None, ts: int = T) -> Call:
    return ("append_as_leader", {"records": (v.Record(b"k%d" % key, value, ts),),
                                 "leader_epoch": 0})


def _compaction() -> list[Call]:
    """A compacted log (the `compact` family): duplicates, a tombstone, two passes around the
    horizon, a refused keyless record, a read of the cleaned batches and retention."""
    seal = [("roll", {"expected_next_offset": None})]
    return [_put(0, b"a"), _put(1, b"b"), _put(0, b"c"), _put(1, None), *seal,
            ("update_high_watermark", {"offset": 4}), ("clean", {}),
            ("advance_clock", {"ms": 3_000}), _put(2, b"d"), *seal,
            ("update_high_watermark", {"offset": 5}), ("clean", {}), _leader(T),
            _read(0), ("delete_old_segments", {})]


#: KL-CLEAN-*, the compaction invariants and the map-capacity choice share one vector; the
#: checkpoint's lowering (KL-CLEAN-13) adds a full truncation, which keeps it apart from the
#: truncation below the HW that a broken-implementation vector pins.
_COMPACTION_RULES = ([f"KL-CLEAN-{n}" for n in range(1, 15) if n != 13] + ["KL-ALLOW-7"]
                     + [f"KL-INV-{n}" for n in range(18, 23)])


def hand_entries() -> dict[str, tuple[str, list[Call]]]:
    entries = dict(HAND)
    for rule in _INVARIANT_RULES:
        entries[rule] = ("tiny", _invariants())
    for rule in _COMPACTION_RULES:
        entries[rule] = ("compact", _compaction())
    entries["KL-CLEAN-13"] = ("compact", [*_compaction(),
                                          ("truncate_fully_and_start_at", {"offset": 2})])
    return entries


def build(seeds: int = 30, steps: int = 40) -> dict[str, Any]:
    """Search the machine's runs (`search`), then add the hand scenarios."""
    entries: dict[str, tuple[str, list[Call]]] = dict(search(range(seeds), steps))
    entries.update(hand_entries())
    return {
        "catalogue": CATALOGUE_VERSION,
        "search": {"seeds": seeds, "steps": steps},
        "rules": {rule: {"family": family, "calls": [_call_json(call) for call in calls]}
                  for rule, (family, calls) in sorted(entries.items(), key=_rule_order)},
    }


def _call_json(call: Call) -> dict[str, Any]:
    return {"action": call[0], "args": encode_args(call[0], call[1])}


def _rule_order(item: tuple[str, Any]) -> tuple[str, int]:
    area, _, number = item[0].rpartition("-")
    return area, int(number)


def save(catalogue: dict[str, Any], path: Path = CATALOGUE_PATH) -> Path:
    path.write_text(json.dumps(catalogue, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return path


def load(path: Path = CATALOGUE_PATH) -> dict[str, tuple[str, list[Call]]]:
    """rule -> (family, calls with decoded arguments)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {rule: (entry["family"], [(c["action"], decode_args(c["action"], c["args"]))
                                     for c in entry["calls"]])
            for rule, entry in data["rules"].items()}
