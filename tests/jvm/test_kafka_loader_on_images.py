"""Apache Kafka's own LogLoader on crash images (conformance/crash/kafka_loader.py, the adapter's
`load_image`): kafkalog's implementation under Kafka's fsync choices is crash-swept, and every
distinct image is also loaded by Kafka 4.4 and held against the model's kafka-mode set. Bounded:
a few short runs and at most 40 images (~60 s with a warm adapter cache)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from kafkalog.conformance.broken.kafka_durability import KAFKA_DURABILITY
from kafkalog.conformance.check.runner import run_seed
from kafkalog.conformance.crash import kafka_loader
from kafkalog.conformance.crash.crash_image import CrashImage, FileImage
from kafkalog.conformance.gen.compaction import COMPACT_FAMILIES
from kafkalog.impl.load.log_dir import CLEAN_SHUTDOWN_FILE_NAME, TopicPartition
from kafkalog.model import values as v

HAVE_JVM_TOOLS = shutil.which("java") is not None and shutil.which("mvn") is not None
pytestmark = pytest.mark.skipif(not HAVE_JVM_TOOLS, reason="java or mvn is not installed: the "
                                                           "Kafka adapter cannot be built")
PARTITION = TopicPartition("conformance", 0)
NOW = 1_700_000_000_000


def test_load_image__torn_tail__kafka_truncates_it_to_the_valid_prefix(tmp_path: Path) -> None:
    """A `.log` of garbage past a valid prefix (here: nothing valid at all) loads as an empty
    log at its base, with the checkpointed recovery point read from the image."""
    garbage = bytes(range(256)) * 2
    image = CrashImage(("", "conformance-0"), (
        ("conformance-0/00000000000000000000.log", FileImage(garbage, len(garbage), 0)),
    ))
    image.write(tmp_path)
    loader = kafka_loader.for_kafka("4.4")
    try:
        state = loader.load(tmp_path, v.LogConfig(), 1_700_000_000_000, PARTITION)
    finally:
        loader.close()
    assert not isinstance(state, str), state
    assert (state.log_start_offset, state.log_end_offset, state.recovery_point) == (0, 0, 0)
    assert [s.size_in_bytes for s in state.segments] == [0]
    # The image itself is untouched: Kafka loaded a copy.
    assert (tmp_path / "conformance-0" / "00000000000000000000.log").read_bytes() == garbage


def test_check__kafka_durability_sweeps__kafka_loads_the_images_and_verdicts_are_counted(
        tmp_path: Path) -> None:
    """Kafka's loader runs on the sweep's images; each is judged against the kafka-mode set. An
    image outside it is saved with its verdict (a hole of the set or a Kafka bug to triage)."""
    loader = kafka_loader.for_kafka("4.4", limit=40, save_dir=tmp_path)
    with kafka_loader.activated(loader):
        for seed in range(8):  # until a few crash steps were swept
            outcome = run_seed(seed, steps=25, config_family="size_retention",
                               broken=KAFKA_DURABILITY, crash_weight=4, crash_sweep=True,
                               time_limit_s=20, shrink_s=1)
            assert outcome.outcome != "adapter_error", outcome.signature
            if loader.images >= 5:
                break
    assert loader.images > 0
    assert loader.judged
    saved = {p.name for p in tmp_path.iterdir()}
    assert len(saved) == loader.outside
    for _, _, verdict in loader.outside_images.values():
        assert verdict.where != "-"


def test_load_image__log_start_advance_lost__kafka_keeps_the_checkpointed_epoch_entry(
        tmp_path: Path) -> None:
    """The class `epoch_recovery` found by the sweeps, pinned: a log-start advance moved the
    epoch checkpoint's entry (0, 0) to (0, 2) and a crash lost the log-start checkpoint (GAP-12).
    Kafka's RCV-10 keeps the entry (no truncation at the recovery point, and a batch of epoch 0
    adds nothing under a latest epoch 0), then trims it at the LEO 2: an empty cache over two
    batches of epoch 0. kafkalog (KL-CRASH-6) re-derives (0, 0) from the batches: against that
    member alone Kafka's state is the class `epoch_recovery`; KL-ALLOW-8 now puts Kafka's walk
    in the kafka-mode set as well (tests/model/test_model_crash_kafka_epochs.py)."""
    from kafkalog.conformance.check.impl_sut import ImplSut

    sut = ImplSut(v.LogConfig(), 1_700_000_000_000, 0)
    try:
        for _ in range(2):
            sut.append_as_leader(records=(v.Record(None, b"x", 1_700_000_000_000),),
                                 leader_epoch=0)
        sut.log_dir.close()
        sut.abandoned = True  # closed here; close() only removes the directory
        partition = tmp_path / "conformance-0"
        shutil.copytree(sut.root / "conformance-0", partition)
    finally:
        sut.close()
    (partition / "leader-epoch-checkpoint").write_text("0\n1\n0 2\n")
    loader = kafka_loader.for_kafka("4.4")
    try:
        state = loader.load(tmp_path, v.LogConfig(), 1_700_000_000_000, PARTITION)
    finally:
        loader.close()
    assert not isinstance(state, str) and state is not None, state
    assert (state.log_start_offset, state.log_end_offset) == (0, 2)
    assert state.epoch_entries == ()
    members = [dataclasses.replace(state, epoch_entries=(v.EpochEntry(0, 0),))]
    verdict = kafka_loader.judge(state, (members, frozenset(), frozenset()))
    assert (verdict.member, verdict.gap) == (False, "epoch_recovery")


def _indexed_log_with_offsets_back(tmp_path: Path) -> Path:
    """Two batches written by kafkalog, then the `offsets_back` leftover planted after them
    (two batches continuing the offsets, one back at the base, each above the index interval):
    an image without a checkpoint or clean-shutdown marker, so Kafka recovers the segment."""
    from kafkalog.conformance.check.impl_sut import ImplSut, _offsets_back

    config = v.LogConfig()
    sut = ImplSut(config, 1_700_000_000_000, 0)
    try:
        for _ in range(2):
            sut.append_as_leader(records=(v.Record(None, b"x", 1_700_000_000_000),),
                                 leader_epoch=0)
        sut.log_dir.close()
        sut.abandoned = True  # closed here; close() only removes the directory
        partition = tmp_path / "conformance-0"
        shutil.copytree(sut.root / "conformance-0", partition)
    finally:
        sut.close()
    log = partition / "00000000000000000000.log"
    log.write_bytes(log.read_bytes()
                    + _offsets_back(log.read_bytes(), 0, config.index_interval_bytes))
    return partition


def test_load_image__offsets_back_without_the_index__kafka_fails_finding_8(
        tmp_path: Path) -> None:
    """Finding 8 (class `index_rebuild_fails_load`), pinned on Kafka 4.4 with its control: the
    same `.log` loads as an emptied segment when its `.index` is there (recoverLog catches the
    index rebuild's InvalidOffsetException and truncates to the base, RCV-6) and fails the whole
    load when the `.index` is missing (loadSegmentFiles rebuilds it outside that catch)."""
    partition = _indexed_log_with_offsets_back(tmp_path / "with")
    without = tmp_path / "without" / "conformance-0"
    shutil.copytree(partition, without)
    (without / "00000000000000000000.index").unlink()
    loader = kafka_loader.for_kafka("4.4")
    try:
        indexed = loader.load(partition.parent, v.LogConfig(), 1_700_000_000_000, PARTITION)
        failed = loader.load(without.parent, v.LogConfig(), 1_700_000_000_000, PARTITION)
    finally:
        loader.close()
    assert not isinstance(indexed, str) and indexed is not None, indexed
    assert (indexed.log_end_offset, [s.size_in_bytes for s in indexed.segments]) == (0, [0])
    assert isinstance(failed, str) and failed.startswith("InvalidOffsetError"), failed
    verdict = kafka_loader.judge(failed, ([indexed], frozenset(), frozenset()),
                                 indexless=kafka_loader.indexless(without))
    assert (verdict.member, verdict.gap) == (False, "index_rebuild_fails_load")


def _compacted_image(root: Path, config: v.LogConfig) -> int:
    """A compacted log written by kafkalog at `root`: six keyed batches in their own segments, a
    cleaning pass over them (the root's `cleaner-offset-checkpoint` then holds 6), two more
    batches; then the log directory closed and its clean-shutdown marker removed, so the image
    is a crash's (an unclean load) with every root checkpoint. Returns the cleaner entry."""
    from kafkalog.conformance.check.impl_sut import ImplSut

    sut = ImplSut(config, NOW, 0)
    try:
        for i in range(8):
            sut.append_as_leader(records=(v.Record(b"k%d" % (i % 2), b"v%d" % i, NOW),),
                                 leader_epoch=0)
            sut.roll()
            if i == 5:
                sut.update_high_watermark(6)
                assert sut.clean() is not None
        sut.update_high_watermark(8)
        entry = sut.state().cleaner_checkpoint
        sut.log_dir.close()
        sut.abandoned = True  # closed here; close() only removes the directory
        shutil.copytree(sut.root, root, dirs_exist_ok=True)
    finally:
        sut.close()
    (root / CLEAN_SHUTDOWN_FILE_NAME).unlink()
    assert entry == 6
    return entry


@pytest.mark.parametrize("line", ["3.9", "4.4"])
def test_load_image__compacted_with_a_cleaner_checkpoint__kafkas_cleaner_starts_from_the_entry(
        tmp_path: Path, line: str) -> None:
    """The image root's `cleaner-offset-checkpoint` entry goes with `load_image`, and Kafka's
    LogCleanerManager reads it as a broker's startup would: the loaded state answers it (not
    -1, the answer of a log no cleaner has seen), and the next pass starts there (an entry Kafka
    had not read would make it start at the log start, 0).
    Spec: KL-CRASH-15, KL-CLEAN-11"""
    config = dataclasses.replace(COMPACT_FAMILIES["compact"], kafka_version=line)
    entry = _compacted_image(tmp_path, config)
    request = kafka_loader.image_request(tmp_path, config, NOW, PARTITION)
    assert request["cleaner_checkpoint"] == entry
    loader = kafka_loader.for_kafka(line)
    try:
        state = loader.load(tmp_path, config, NOW, PARTITION)
        assert not isinstance(state, str) and state is not None, state
        assert (state.log_end_offset, state.high_watermark) == (8, 8)
        assert state.cleaner_checkpoint == entry
        passed = loader.process().request("clean", {})
    finally:
        loader.close()
    assert passed is not None and passed["first_dirty_offset"] == entry, passed


def test_image_request__no_or_corrupt_cleaner_checkpoint__carries_no_entry(
        tmp_path: Path) -> None:
    """Without an entry for the partition (no file, another partition's entry, a file Kafka's
    LogCleanerManager cannot parse and reads as empty) the request has no `cleaner_checkpoint`,
    and an old adapter's request is unchanged."""
    (tmp_path / str(PARTITION)).mkdir()
    checkpoint = tmp_path / "cleaner-offset-checkpoint"
    for content in (None, "0\n1\nother 0 5\n", "0\n2\nconformance 0 5\n"):
        if content is not None:
            checkpoint.write_text(content)
        request = kafka_loader.image_request(tmp_path, v.LogConfig(), NOW, PARTITION)
        assert "cleaner_checkpoint" not in request, content


@pytest.mark.parametrize("line", ["3.9", "4.4"])
def test_load_image__cleaner_entry_above_the_log_end__kafka_keeps_it_until_a_pass(
        tmp_path: Path, line: str) -> None:
    """The class the `compact` family's sweeps find once the entry goes with the image: a crash
    inside a truncation after its cut and before LogManager lowered the checkpoint leaves an
    entry above the loaded LEO. Kafka's startup keeps it as read (nothing reads the cleaner
    checkpoint while logs load); only the next selection, `cleanableOffsets`, resets it to the
    log start. kafkalog's load lowers it to the active base (model/recovery.py
    `loaded_cleaner_checkpoint`), so Kafka's state lies outside the kafka-mode set there.
    Spec: KL-CRASH-15, KL-INV-18"""
    config = dataclasses.replace(COMPACT_FAMILIES["compact"], kafka_version=line)
    _compacted_image(tmp_path, config)
    (tmp_path / "cleaner-offset-checkpoint").write_text("0\n1\nconformance 0 13\n")
    loader = kafka_loader.for_kafka(line)
    try:
        state = loader.load(tmp_path, config, NOW, PARTITION)
        assert not isinstance(state, str) and state is not None, state
        assert (state.log_end_offset, state.cleaner_checkpoint) == (8, 13)
        passed = loader.process().request("clean", {})
        after = loader.process().request("state", {})
    finally:
        loader.close()
    assert passed is not None and passed["first_dirty_offset"] == state.log_start_offset == 0
    assert after["cleaner_checkpoint"] == passed["end_offset"]
    lowered = dataclasses.replace(state, cleaner_checkpoint=state.segments[-1].base_offset)
    verdict = kafka_loader.judge(state, ([lowered], frozenset(), frozenset()))
    assert (verdict.member, verdict.where) == (False, "cleaner_checkpoint")



@pytest.mark.parametrize("line", ["3.9", "4.4"])
def test_load_image__epoch_entry_below_the_log_start__kafka_keeps_it_finding_9(
        tmp_path: Path, line: str) -> None:
    """Finding 9 (REC-15 against LOG-2): the only segment starts at 12, the epoch checkpoint
    holds (0, 11) and the log-start checkpoint has no entry (it reads 0, as after a crash that
    lost it, GAP-12). Kafka loads the log start 12 but trims the epoch cache at the checkpoint,
    so the entry below the log start stays; kafkalog trims at the loaded log start (and then
    at the LEO 12: no entry). The loader's class for it is `epoch_below_log_start`."""
    epochs = b"0\n1\n0 11\n"
    image = CrashImage(("", "conformance-0"), (
        ("conformance-0/00000000000000000012.log", FileImage(b"", 0, 0)),
        ("conformance-0/leader-epoch-checkpoint", FileImage(epochs, len(epochs), 0)),
    ))
    image.write(tmp_path)
    loader = kafka_loader.for_kafka(line)
    try:
        state = loader.load(tmp_path, v.LogConfig(), NOW, PARTITION)
    finally:
        loader.close()
    assert not isinstance(state, str), state
    assert (state.log_start_offset, state.log_end_offset) == (12, 12)
    assert state.epoch_entries == (v.EpochEntry(0, 11),)
    member = dataclasses.replace(state, epoch_entries=())
    verdict = kafka_loader.judge(state, ([member], frozenset(), frozenset()))
    assert verdict.gap == "epoch_below_log_start"
