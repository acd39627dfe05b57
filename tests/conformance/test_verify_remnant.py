"""The checker's on-disk verify knows which writers can leave time-index entries past a
truncation (KL-TRUNC-3): a note for per-append profiles, a divergence for per-batch ones."""

from __future__ import annotations

from kafkalog.conformance.check.impl_sut import verify_problems
from kafkalog.impl.load.log_dir import TopicPartition
from kafkalog.impl.verify.findings import note
from kafkalog.impl.verify.index import TRUNCATION_REMNANT
from kafkalog.impl.verify.verifier import PartitionReport, VerifyReport


def report_with_remnant() -> VerifyReport:
    partition = PartitionReport(TopicPartition("t", 0), "/d/t-0")
    partition.findings.append(note(TRUNCATION_REMNANT, "/d/t-0/00000000000000000000.timeindex",
                                   0, "1 entries from offset 0 on lie past the end", "KL-TRUNC-3"))
    return VerifyReport("/d", False, [partition])


def test_verify_problems__remnant_under_per_append_profiles__not_a_divergence() -> None:
    """Spec: KL-TRUNC-3, KL-VERSION-4"""
    for profile in ("3.6", "3.8", "3.9"):
        assert verify_problems(report_with_remnant(), 0, True, profile) == []


def test_verify_problems__remnant_under_per_batch_profiles__a_divergence() -> None:
    """Spec: KL-TRUNC-3, KL-VERSION-4: one index entry per batch keys the time index at the
    batch's last offset, so a truncation leaves no entry past the segment's end."""
    for profile in ("3.9.2", "4.0", "4.4"):
        [problem] = verify_problems(report_with_remnant(), 0, True, profile)
        assert TRUNCATION_REMNANT in problem
