"""The part of a campaign's summary only a `--kafka` campaign has.

Divergences of Kafka's own log are labelled (conformance/jvm/findings.py): a recorded finding, a
known adapter limit, or NEW. Labels never filter: every diverged row stays in the Parquet rows
and in the failure buckets, with its label beside it; only a NEW divergence (or an adapter
error) fails the campaign's verdict. The kafka-mode runs' crash images loaded by Kafka's own
`LogLoader` are totalled: how many, how many fell outside the model's kafka-mode set, by class.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from kafkalog.conformance.jvm.findings import NEW, label
from kafkalog.conformance.jvm.kafka_adapter import MAIN_CLASS


def divergence_labels(frame: Any) -> list[tuple[str, str]]:
    """(bucket key, label) of every diverged row that ran Kafka's log through the adapter."""
    from pyspark.sql import functions as F

    kafka_rows = (F.col("outcome") == "diverged") & F.col("adapter").contains(MAIN_CLASS)
    rows = frame.where(kafka_rows).select("signature", "trace_jsonl").collect()
    return [(bucket_key(row.signature), label(row.trace_jsonl)) for row in rows]


def bucket_key(signature: str | None) -> str:
    """The failure bucket of a divergence signature (aggregate.failure_buckets' key)."""
    parts = (signature or "(none)").split("|")
    return "|".join(parts[:4]) if len(parts) >= 5 else signature or "(none)"


def labelled_buckets(buckets: tuple[Any, ...], labels: list[tuple[str, str]]) -> tuple[Any, ...]:
    """The buckets with the labels of their rows (a bucket may mix a finding and NEW)."""
    by_key: dict[str, Counter[str]] = {}
    for key, name in labels:
        by_key.setdefault(key, Counter())[name] += 1
    return tuple(
        dataclasses.replace(b, labels=tuple(f"{name} ({n})" for name, n in
                                            sorted(by_key[b.signature].items())))
        if b.outcome == "diverged" and b.signature in by_key else b
        for b in buckets)


def loader_totals(frame: Any) -> dict[str, Any]:
    """Kafka's loader over the kafka-mode runs: runs, images, outside, outside per class."""
    from pyspark.sql import functions as F

    loaded = frame.where(F.col("kafka_loader_images").isNotNull())
    row = loaded.agg(F.count("*").alias("runs"),
                     F.sum("kafka_loader_images").alias("images"),
                     F.sum("kafka_loader_outside").alias("outside")).first()
    gaps = (loaded.select(F.explode("kafka_loader_gaps").alias("gap", "n"))
            .groupBy("gap").agg(F.sum("n").alias("n")).collect())
    return {"runs": int(row.runs or 0), "images": int(row.images or 0),
            "outside": int(row.outside or 0),
            "by_class": {g.gap: int(g.n) for g in sorted(gaps, key=lambda g: g.gap)}}


def unexplained_images(loader: dict[str, Any]) -> int:
    """Crash images Kafka's loader put outside the kafka-mode set in no triaged gap class
    (conformance/crash/kafka_gaps.py, or kafka_loader.TRIAGED: a recorded Kafka finding, or
    kafkalog's own load alike), or that the adapter failed to load: each fails the verdict, as
    a NEW divergence does."""
    from kafkalog.conformance.crash.kafka_gaps import KAFKA_GAPS
    from kafkalog.conformance.crash.kafka_loader import TRIAGED

    return sum(n for name, n in (loader.get("by_class") or {}).items()
               if name not in KAFKA_GAPS and name not in TRIAGED)


def summary_fields(frame: Any, buckets: tuple[Any, ...]) -> dict[str, Any]:
    """CampaignSummary's kafka fields and its buckets with their labels."""
    labels = divergence_labels(frame)
    counts = Counter(name for _, name in labels)
    return {"buckets": labelled_buckets(buckets, labels),
            "kafka_labels": dict(sorted(counts.items())),
            "recorded": sum(n for name, n in counts.items() if name != NEW),
            "kafka_loader": loader_totals(frame)}


def summary_lines(summary: Any) -> list[str]:
    """The terminal lines of a campaign's Kafka labels and Kafka-loader totals (none if neither)."""
    lines = []
    if summary.kafka_labels:
        lines.append("Kafka divergences by label (a NEW one fails the verdict): " + "; ".join(
            f"{name}: {n}" for name, n in sorted(summary.kafka_labels.items())))
    loader = summary.kafka_loader or {}
    if loader.get("runs"):
        classes = ", ".join(f"{k} {n}" for k, n in loader["by_class"].items()) or "none"
        lines.append(f"Kafka's LogLoader on crash images: {loader['images']} images loaded by "
                     f"Kafka in {loader['runs']} kafka-mode runs; outside the kafka-mode set: "
                     f"{loader['outside']} (by class: {classes})")
    return lines
