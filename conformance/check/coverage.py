"""The catalogue of spec rule IDs, to report which ones a check never exercised.

Rules are defined in specs/log.md as bold list items (`- **KL-APPEND-1 Leader offsets** ...`);
the model's coverage classifier (model/coverage/rules.py) says which of them each step exercised.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from kafkalog.model.invariants import INVARIANTS

from kafkalog.resources import specs_dir

SPEC = specs_dir() / "log.md"  # the checkout's specs/, or the wheel's kafkalog/specs/
_DEFINITION = re.compile(r"^\s*-\s+\*\*(KL-[A-Z]+-\d+[a-z]?)\b", re.MULTILINE)


@functools.cache
def all_rule_ids(spec: Path = SPEC) -> frozenset[str]:
    """Every rule ID defined in `spec`; empty when the spec is not beside the package."""
    try:
        text = spec.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    return frozenset(_DEFINITION.findall(text))


_RULE_ID = re.compile(r"\bKL-[A-Z]+-\d+[a-z]?\b")

#: Rules every run exercises by construction: it starts from `empty_log` with a validated config
#: (KL-STATE-1, KL-STATE-2) and compares `view()` of both sides after every step (KL-STATE-3).
RUN_RULES = frozenset({"KL-STATE-1", "KL-STATE-2", "KL-STATE-3"})


@functools.cache
def invariant_rule_ids() -> frozenset[str]:
    """The KL-INV-* rules of model/invariants.py, all evaluated by `check_all` after each step."""
    found: set[str] = set()
    for predicate in INVARIANTS.values():
        found.update(_RULE_ID.findall((predicate.__doc__ or "").split(":")[0]))
    return frozenset(found)


_OTHER_CHOICE = ("reached only when the implementation under test makes another Kafka-legal "
                 "choice than the model's own; the built-in implementation makes the model's "
                 "(tests/conformance/test_allowed.py and the variants in broken/variants.py "
                 "check it)")

#: Rules no generated input to the built-in implementation can exercise, with the reason; a
#: campaign report names these beside the rules it never met, so only real gaps stay unexplained.
UNREACHABLE_BY_GENERATION: dict[str, str] = {
    "KL-ALLOW-1": _OTHER_CHOICE,
    "KL-ALLOW-2": _OTHER_CHOICE,
    "KL-ALLOW-3": _OTHER_CHOICE,
    "KL-ALLOW-4": _OTHER_CHOICE,
    "KL-ALLOW-5": _OTHER_CHOICE,
    "KL-ALLOW-6": _OTHER_CHOICE,
    "KL-ALLOW-7": _OTHER_CHOICE,
    "KL-ALLOW-8": ("a choice only Kafka's own loader makes (it keeps the checkpointed epoch "
                   "cache); the built-in implementation re-derives the cache. `campaign --kafka` "
                   "loads crash images with Kafka's LogLoader against the kafka-mode set that "
                   "holds it; tests/model/test_model_crash*.py pin the set"),
    "KL-ALLOW-9": ("a choice only Kafka's own loader makes (its producer recovery starts at the "
                   "log-start checkpoint); the built-in implementation starts at the loaded log "
                   "start. `campaign --kafka` loads crash images with Kafka's LogLoader against "
                   "the kafka-mode set that holds it; "
                   "tests/model/test_model_crash_kafka_producers.py pins the set"),
    "KL-ALLOW-11": ("a choice only Kafka's own loader makes (it keeps a cleaner entry above the "
                    "log end until its next selection); the built-in implementation lowers it "
                    "at load. `check --kafka-loader` loads compacted crash images with Kafka's "
                    "LogLoader against the kafka-mode set that holds it; "
                    "tests/model/test_model_crash_kafka_cleaner.py pins the set"),
    "KL-EPOCH-5": ("no action of the vocabulary asks the epoch of an offset (Kafka's only "
                   "log-layer caller is remote storage, LOG-46); the vector and the unit tests of "
                   "model/epochs.py and impl/checkpoint/epoch_cache.py pin it"),
    "KL-HW-6": ("high-watermark metadata with only one of its segment base and position at -1 "
                "comes from no Kafka caller (replication passes message-only or full metadata), "
                "so the generator does not send it; the KL-HW-6 vector pins both sides"),
    **dict.fromkeys(("KL-INV-20", "KL-INV-21", "KL-INV-22"),
                    "relations between the states before and after a cleaning pass, checked by "
                    "the model's compaction tests (tests/model/test_compaction*.py), not by the "
                    "lockstep, which compares states"),
}
