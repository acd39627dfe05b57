"""Fuzz slice: damaged copies of a log directory holding every file type the log reads
(v0/v1/v2 `.log` in every codec, `.index`, `.timeindex`, checkpoints, the clean-shutdown
marker), each verified, dumped and opened; the invariants are `harness`'s (README, Reliability).
The long form is `kafkalog fuzz --cases 100000`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafkalog.conformance.fuzz.harness import Sandbox, Verdict, run_file_case
from kafkalog.conformance.fuzz.mutators import FileMutation, file_mutations


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox()
    yield box
    box.close()


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(file_mutations(), min_size=1, max_size=3), deep=st.booleans())
def test_damaged_log_dir__verify_dump_open__only_typed_errors_no_writes_no_escape(
        sandbox: Sandbox, mutations: list[FileMutation], deep: bool) -> None:
    """Any damage: typed errors only, verify/dump never write, nothing outside is touched."""
    result = run_file_case(sandbox, 0, mutations, deep)
    assert result.verdict is not Verdict.UNGRACEFUL, result.details


@pytest.mark.parametrize("kind", ["symlink", "symlink_dir"])
@pytest.mark.parametrize("target", range(0, 40, 3))
def test_symlinks_to_outside__every_file_and_partition__refused_not_followed(
        sandbox: Sandbox, kind: str, target: int) -> None:
    """A link planted anywhere (file or partition dir) is refused: nothing outside is read or
    written, and the canary beside the directory is untouched."""
    result = run_file_case(sandbox, 1, [FileMutation(kind, target)], deep=True)
    assert result.verdict is Verdict.TYPED, result.details


@pytest.mark.parametrize("value", range(7))
def test_hostile_payloads__bombs_and_empty_wrappers__typed_and_bounded(
        sandbox: Sandbox, value: int) -> None:
    """Each payload (legacy and v2 bombs in gzip/zstd/lz4, empty and null wrappers) replaces a
    `.log`'s tail; every target answers typed, within the memory bound."""
    result = run_file_case(sandbox, 2, [FileMutation("payload", 0, position=0, value=value,
                                                     data=b"junk")], deep=True)
    assert result.verdict is not Verdict.UNGRACEFUL, result.details
