"""`TableViews` remembers `producer_views` per table object: the model's view after every step
turns only new producer tables into views, and a new table is never answered from an old one."""

from __future__ import annotations

from kafkalog.conformance.check.sut import ModelSut, TableViews
from kafkalog.model import log
from kafkalog.model.producer.producer_entry import BatchMetadata, ProducerEntry
from kafkalog.model.producer.producer_state import producer_views
from kafkalog.model.values import LogConfig


def table(epoch: int) -> tuple[ProducerEntry, ...]:
    return (ProducerEntry(7, epoch, batches=(BatchMetadata(0, 1, 0, 0),)),)


def test_table_views__same_table__is_turned_into_views_once() -> None:
    views, old = TableViews(), table(1)
    first = views(old)
    assert first == producer_views(old)
    assert views(old) is first


def test_table_views__a_new_table__gets_its_own_views() -> None:
    """A changed table is a new object, and an equal-looking id is not enough: the table itself
    is kept with its views, so its id cannot be reused while they are remembered."""
    views, old, new = TableViews(), table(1), table(2)
    assert views(old) == producer_views(old)
    assert views(new) == producer_views(new) != producer_views(old)


def test_model_sut_state__equals_the_model_view() -> None:
    model = ModelSut(LogConfig(), 0)
    model.advance_clock(5)
    assert model.state() == log.view(model.partition_state)
