"""What a `--kafka` campaign adds to a run: a warm adapter, and Kafka's loader on crash images.

A `--kafka` campaign checks Kafka's own `UnifiedLog` through the JVM adapter in lockstep with the
model. That adapter cannot crash (it has no fault-injecting file system), so the campaign's
kafka-mode runs (variety.py) run the built-in implementation with Kafka's fsync choices instead,
and every distinct crash image their sweeps load is also loaded by Kafka's own `LogLoader`
through the same adapter (conformance/crash/kafka_loader.py): the row counts the images Kafka
loaded and those whose state fell outside the model's kafka-mode set, by class of difference.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kafkalog.conformance.campaign.variety import KAFKA, RunVariant

UNCLASSIFIED = "unclassified"  # an outside state no known class explains (to be triaged)
#: Images Kafka's loader loads per kafka-mode run of a campaign, at most. A load costs 0.1-0.3 s
#: of JVM time on a shared 2-core machine, so `check`'s 300 made some runs last 90 s and one
#: pass the hard time limit; 40 keeps a run within seconds and still loads the first images of
#: every crash step of most runs (the rest are counted as skipped by the loader).
CAMPAIGN_LOADER_LIMIT = 40


def run_adapter(spec: Any, variant: RunVariant) -> str | None:
    """The adapter command a run drives: none for a kafka-mode run (the built-in implementation
    with Kafka's fsync choices, the only one that can crash), else the campaign's."""
    return None if variant.crash_mode == KAFKA else spec.adapter


@contextmanager
def loader_scope(spec: Any, variant: RunVariant) -> Iterator[Any]:
    """Kafka's loader, active for one kafka-mode run of a campaign with `kafka_loader`, else None.

    A fresh loader per run (its counts and limit are the run's), on the worker's kept adapter
    process, which the loader leaves running when the run ends.
    """
    if spec.kafka_loader is None or spec.adapter is None or variant.crash_mode != KAFKA:
        yield None
        return
    from kafkalog.conformance.adapter.subprocess_sut import kept_process
    from kafkalog.conformance.crash import kafka_loader

    command = spec.adapter
    loader = kafka_loader.KafkaLoader(lambda: kept_process(command), CAMPAIGN_LOADER_LIMIT,
                                      label=spec.kafka_loader, keep_process=True)
    with kafka_loader.activated(loader):
        yield loader


def loader_columns(loader: Any) -> dict[str, Any]:
    """The row's kafka_loader_* columns (specs/campaign-schema.md); nulls when none ran."""
    if loader is None:
        return {"kafka_loader_images": None, "kafka_loader_outside": None,
                "kafka_loader_gaps": None}
    gaps = Counter(verdict.gap or UNCLASSIFIED
                   for _, _, verdict in loader.outside_images.values())
    if loader.errors:  # adapter failures gave no verdict: visible, never a silent zero
        gaps["adapter_failure"] += len(loader.errors)
    return {"kafka_loader_images": loader.images, "kafka_loader_outside": loader.outside,
            "kafka_loader_gaps": dict(sorted(gaps.items()))}
