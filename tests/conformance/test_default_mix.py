"""Default `check` runs every family the campaign runs, producers and transactions weighted up."""

from __future__ import annotations

from collections import Counter

from kafkalog.conformance.gen.compaction import COMPACT_FAMILIES
from kafkalog.conformance.gen.configs import CAMPAIGN_MIX, CONFIG_FAMILIES, DEFAULT_MIX
from kafkalog.conformance.gen.producers import PRODUCER_FAMILIES
from kafkalog.conformance.gen.transactions import TXN_FAMILIES


def test_default_mix__is_the_campaign_mix() -> None:
    """`check` and `campaign` cycle through the same families by seed."""
    assert DEFAULT_MIX == CAMPAIGN_MIX
    assert set(DEFAULT_MIX) <= set(CONFIG_FAMILIES)


def test_default_mix__draws_producer_and_txn_families_more_often_than_any_plain_one() -> None:
    """Every producer, transaction and compaction family is in the mix, each more often than
    any plain family (their machines reach the plain rules too), and the transaction family
    most."""
    counts = Counter(DEFAULT_MIX)
    # `transactions_wire` is `transactions` as a broker can run it (KL-WIRE-12): wire runs only.
    producerish = (set(PRODUCER_FAMILIES) | set(TXN_FAMILIES) | set(COMPACT_FAMILIES)) - {
        "transactions_wire"}
    assert producerish <= set(counts)
    plain = max(n for family, n in counts.items() if family not in producerish)
    assert all(counts[family] > plain for family in producerish)
    assert counts["transactions"] == max(counts.values())


def test_default_mix__spreads_each_family_over_the_cycle() -> None:
    """No family takes two seeds in a row, so a short `--examples` still mixes them."""
    cycle = (*DEFAULT_MIX, DEFAULT_MIX[0])
    assert all(a != b for a, b in zip(cycle, cycle[1:], strict=False))
