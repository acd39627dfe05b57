"""Which Kafka release the log behaves as: `LogConfig.kafka_version` (specs/log.md §19).

The implementation keeps one code path per behaviour and switches only where a released Kafka
line differs (KL-VERSION-2..7): the leader's offset of the max timestamp (3.6, 3.7), the
stored MAX_TIMESTAMP answer (before 3.8), and the read's metadata offset, per-batch index
decisions and the follower's epoch filter, which all arrived in 4.0 (4.0.2), and the special
target -6 from 4.2. The profile names and their order are the spec's;
`tests/conformance/test_versions.py` holds this table to the model's.
"""

from __future__ import annotations

from kafkalog.model.errors import IllegalArgumentError

PROFILES: tuple[str, ...] = ("3.6", "3.7", "3.8", "3.9", "3.9.2", "4.0", "4.1", "4.2", "4.3", "4.4")
#: Older traces name `trunk`: the reference's trunk reading, which behaves as 4.0 here.
ALIASES: dict[str, str] = {"trunk": "4.0"}


def at_least(version: str, oldest: str) -> bool:
    """True iff `version` (a profile or an alias; validated by `validate_config`) is `oldest`
    or newer."""
    return PROFILES.index(ALIASES.get(version, version)) >= PROFILES.index(oldest)


def max_timestamp_offset_of_3_6(version: str) -> bool:
    """KL-VERSION-2: 3.6's leader append reports the first record with the max (CreateTime)."""
    return not at_least(version, "3.7")


def leader_reports_last_offset(version: str) -> bool:
    """KL-VERSION-2: 3.7's leader append reports the batch's last offset, timestamps or not."""
    return at_least(version, "3.7") and not at_least(version, "3.8")


def max_timestamp_searches_records(version: str) -> bool:
    """KL-VERSION-6: from 3.8 MAX_TIMESTAMP finds the record; before, the stored pair answers
    with the latest epoch."""
    return at_least(version, "3.8")


def read_reports_batch_base(version: str) -> bool:
    """KL-VERSION-3: from 4.0 a read's metadata offset is its batch's base, before the offset
    asked for."""
    return at_least(version, "4.0")


def index_entry_per_batch(version: str) -> bool:
    """KL-VERSION-4: from 3.9.2 and 4.0 one index decision per batch, before one per append."""
    return at_least(version, "3.9.2")


def follower_skips_newer_epochs(version: str) -> bool:
    """KL-VERSION-5: from 3.9.2 and 4.0 a follower drops the batches from a newer leader
    epoch."""
    return at_least(version, "3.9.2")


def check_profile(version: str) -> None:
    """IllegalArgumentError for a `kafka_version` that names no profile (KL-VERSION-1)."""
    if ALIASES.get(version, version) not in PROFILES:
        raise IllegalArgumentError(
            f"unknown kafka_version {version!r} (known: {', '.join(PROFILES)})",
            where="LogConfig.kafka_version",
        )


def earliest_pending_upload_is_special(version: str) -> bool:
    """KL-VERSION-7: from 4.2 the target -6 answers (-1, -1, -1) without remote storage."""
    return at_least(version, "4.2")
