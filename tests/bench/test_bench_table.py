"""docs/benchmarks.md's table of numbers is the one generated from benchmarks/results.json."""

from __future__ import annotations

import json

import pytest
from kafkalog.benchmarks import table


def test_benchmarks_doc__table__equals_the_one_generated_from_results_json() -> None:
    """Regenerate with `python -m kafkalog.benchmarks.table` after a new `bench --json`."""
    document = json.loads(table.RESULTS.read_text())
    text = table.DOC.read_text()
    assert table.current(text) == table.generated(document)


def test_table__rewritten__replaces_only_the_text_between_the_markers() -> None:
    """Prose on either side survives; a second rewrite changes nothing."""
    document = json.loads(table.RESULTS.read_text())
    text = f"intro\n{table.START}\nstale\n{table.END}\noutro\n"
    once = table.rewritten(text, document)
    assert once.startswith(f"intro\n{table.START}\n\nMachine: ")
    assert once.endswith(f"|\n\n{table.END}\noutro\n")
    assert table.rewritten(once, document) == once


def test_table__document_without_markers__raises_a_typed_error() -> None:
    with pytest.raises(table.TableMarkersError):
        table.current("no markers here\n")
