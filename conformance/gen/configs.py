"""Named configuration families: tiny limits so rolls, full indexes and retention happen often.

The conformance machine and the Spark campaigns draw from the same families (by name), so a
campaign's failure buckets name a family that `kafkalog check` and `replay` understand.
Sizes are chosen around the 72-byte one-record batch (FMT-49): a 400-byte segment holds about
five such batches, a 48-byte offset index six entries, a 24-byte time index two (FMT-21, FMT-26).
"""

from __future__ import annotations

from kafkalog.conformance.errors import UnknownConfigFamilyError
from kafkalog.conformance.gen.compaction import COMPACT_FAMILIES
from kafkalog.conformance.gen.producers import PRODUCER_FAMILIES
from kafkalog.conformance.gen.transactions import TXN_FAMILIES
from kafkalog.model.values import LogConfig, TimestampType

_TINY = LogConfig(
    segment_bytes=400,
    segment_ms=60_000,
    segment_jitter_ms=0,
    index_interval_bytes=100,
    segment_index_bytes=48,
    retention_ms=120_000,
    retention_bytes=-1,
    max_message_bytes=300,
    file_delete_delay_ms=1_000,
)

CONFIG_FAMILIES: dict[str, LogConfig] = {
    # Rolls by size every few appends; time retention after two minutes of clock.
    "tiny": _TINY,
    # An offset-index entry per batch and three slots: rolls because the index is full (SEG-6).
    "index_full": LogConfig(
        segment_bytes=4_096,
        segment_ms=600_000,
        index_interval_bytes=1,
        segment_index_bytes=24,
        retention_ms=-1,
        retention_bytes=-1,
        max_message_bytes=1_000,
        file_delete_delay_ms=1_000,
    ),
    # Size-based retention (LOG-37) over 300-byte segments; no time retention.
    "size_retention": LogConfig(
        segment_bytes=300,
        segment_ms=600_000,
        index_interval_bytes=128,
        segment_index_bytes=64,
        retention_ms=-1,
        retention_bytes=400,
        max_message_bytes=250,
        file_delete_delay_ms=2_000,
    ),
    # Two one-record batches per segment and a 72-byte size limit: three appends already put
    # a segment over retention, so retention meets data above a held-back HW within a few
    # steps (LOG-33, LOG-37; BUG-36).
    "hw_retention": LogConfig(
        segment_bytes=150,
        segment_ms=600_000,
        index_interval_bytes=64,
        segment_index_bytes=48,
        retention_ms=-1,
        retention_bytes=72,
        max_message_bytes=140,
        file_delete_delay_ms=1_000,
    ),
    # Time-based rolls with deterministic jitter (SEG-7, SEG-8) and short time retention.
    "time_roll": LogConfig(
        segment_bytes=2_048,
        segment_ms=1_000,
        segment_jitter_ms=300,
        index_interval_bytes=64,
        segment_index_bytes=120,
        retention_ms=5_000,
        retention_bytes=-1,
        max_message_bytes=1_000,
        file_delete_delay_ms=1_000,
    ),
    # The leader stamps its clock on every batch (FMT-45 bit 3, LOG-18, KL-APPEND-3).
    "log_append_time": LogConfig(
        segment_bytes=400,
        segment_ms=60_000,
        index_interval_bytes=100,
        segment_index_bytes=48,
        retention_ms=120_000,
        retention_bytes=-1,
        max_message_bytes=300,
        file_delete_delay_ms=1_000,
        message_timestamp_type=TimestampType.LOG_APPEND_TIME,
    ),
    # Time retention at zero (legal in Kafka): every segment below the HW is older than
    # retention at once, so the `< 0` "disabled" test of LOG-36 meets its boundary (a gap the
    # mutation run of impl/log/retention.py found). Size retention stays off: at 0 it
    # would run first and leave time retention nothing to do.
    "zero_retention": LogConfig(
        segment_bytes=300,
        segment_ms=600_000,
        index_interval_bytes=100,
        segment_index_bytes=48,
        retention_ms=0,
        retention_bytes=-1,
        max_message_bytes=250,
        file_delete_delay_ms=1_000,
    ),
    # Kafka-like proportions, scaled down: few rolls, many batches per segment.
    "roomy": LogConfig(
        segment_bytes=64 * 1024,
        segment_ms=3_600_000,
        index_interval_bytes=4_096,
        segment_index_bytes=10 * 1024,
        retention_ms=7 * 24 * 3_600_000,
        retention_bytes=-1,
        file_delete_delay_ms=60_000,
    ),
    # time_roll without jitter: a broker draws each segment's jitter at random, so a wire check
    # of time rolls needs none (`check --wire --family time_roll_no_jitter`; specs/wire.md
    # KL-WIRE-5).
    "time_roll_no_jitter": LogConfig(
        segment_bytes=2_048,
        segment_ms=1_000,
        segment_jitter_ms=0,
        index_interval_bytes=64,
        segment_index_bytes=120,
        retention_ms=5_000,
        retention_bytes=-1,
        max_message_bytes=1_000,
        file_delete_delay_ms=1_000,
    ),
    # Kafka's own topic defaults (1 GiB segments, max.message.bytes 1048588): what a broker
    # without CreateTopics gives the topics it auto-creates (specs/wire.md KL-WIRE-4).
    "kafka_defaults": LogConfig(),
}

def _producer_families() -> dict[str, LogConfig]:
    return {**PRODUCER_FAMILIES, **TXN_FAMILIES, **COMPACT_FAMILIES}


CONFIG_FAMILIES.update(_producer_families())

#: The mix `check` and `campaign` cycle through by seed (family = MIX[seed % len(MIX)]). Every
#: family either runs is in it, weighted by what a run can reach: the producer and transaction
#: machines are the plain machine plus producer actors (conformance/gen/producers.py,
#: transactions.py), so a run of theirs reaches the plain rules and the producer table, its
#: snapshots, the LSO and the `.txnindex` besides; they are drawn twice as often as a plain
#: family, the transaction family (whose state is richest) three times. The compacted family's
#: machine is the transaction machine on a compacted log (keyed records, cleaning passes,
#: crashes inside them, conformance/gen/compaction.py); its runs are the cheapest of the cycle
#: and each meets only a few of the cleaner's scenarios, so it is drawn twice. A trace records
#: its own family and seed, so replay does not depend on this cycle.
DEFAULT_MIX: tuple[str, ...] = (
    "tiny", "transactions", "producers", "index_full", "size_retention", "transactions",
    "producers_append_time", "compact", "time_roll", "hw_retention", "transactions",
    "producers", "log_append_time", "roomy", "producers_append_time", "zero_retention",
    "compact",
)

#: The default mix of `kafkalog campaign`: the same cycle as `check`'s.
CAMPAIGN_MIX: tuple[str, ...] = DEFAULT_MIX


def config_family(name: str) -> LogConfig:
    """The LogConfig of a family; raises UnknownConfigFamilyError naming the known ones."""
    try:
        return CONFIG_FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(CONFIG_FAMILIES))
        raise UnknownConfigFamilyError(f"unknown config family {name!r} (known: {known})") from None
