"""The Python side of Kafka's loader on crash images (conformance/crash/kafka_loader.py), with a
fake adapter: the `load_image` request it sends, the verdict against an allowed set, and the
counting and memoising of `observe`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from kafkalog.conformance.adapter.json_codec import encode
from kafkalog.conformance.crash.crash_image import CrashImage, FileImage
from kafkalog.conformance.crash.kafka_loader import KafkaLoader, image_request, judge
from kafkalog.conformance.crash.sweep import SweepPoint
from kafkalog.impl.load.log_dir import TopicPartition
from kafkalog.model import values as v
from kafkalog.model.log import empty_log, view

PARTITION = TopicPartition("conformance", 0)
CONFIG = v.LogConfig()


def _state(leo: int, index: tuple[Any, ...] = ()) -> v.LogStateView:
    base = view(empty_log(CONFIG))
    segment = dataclasses.replace(base.segments[0], next_offset=leo, size_in_bytes=70 * leo,
                                  offset_index=index)
    return dataclasses.replace(base, log_end_offset=leo, recovery_point=leo, high_watermark=0,
                               segments=(segment,))


def _allowed(*members: v.LogStateView, failures: frozenset[str] = frozenset()) -> Any:
    return list(members), frozenset(), failures


class FakeAdapter:
    """Answers `load_image` with a fixed state (or error) and records the requests."""

    features = frozenset({"core", "kafka_loader"})

    def __init__(self, answer: v.LogStateView) -> None:
        self.answer = answer
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.closed = False

    def request(self, action: str, args: dict[str, Any]) -> Any:
        self.requests.append((action, args))
        return json.loads(json.dumps(encode(self.answer)))

    def close(self) -> None:
        self.closed = True


def _image(recovery_point: int) -> CrashImage:
    checkpoint = f"0\n1\nconformance 0 {recovery_point}\n".encode()
    return CrashImage(("", "conformance-0"), (
        ("recovery-point-offset-checkpoint", FileImage(checkpoint, len(checkpoint), 0)),
        ("conformance-0/00000000000000000000.log", FileImage(b"", 0, 0)),
    ))


def test_judge__member_modulo_index_entries__is_a_member() -> None:
    """The sweep's comparison: index entries are not part of the verdict."""
    verdict = judge(_state(3, index=((1, 70),)), _allowed(_state(1), _state(3)))
    assert verdict.member
    assert "in the kafka-mode set" in verdict.describe()


def test_judge__state_outside__names_the_closest_difference() -> None:
    """Outside the set: the first field where the closest member (by LEO) differs."""
    verdict = judge(_state(4), _allowed(_state(0), _state(3)))
    assert not verdict.member
    assert verdict.where == "log_end_offset"
    assert (verdict.model, verdict.theirs) == (3, 4)


def test_judge__fields_kafka_does_not_report__are_not_compared() -> None:
    """A field the adapter leaves out (None) is left out of the members too."""
    kafka = dataclasses.replace(_state(2), producers=None)
    assert judge(kafka, _allowed(_state(2))).member


def test_judge__failed_load__is_a_member_only_with_the_same_error_type() -> None:
    """KL-CRASH-13: a failed load is allowed when the set has a failed load of its type."""
    assert judge("CorruptRecordError: bad", _allowed(failures=frozenset({"CorruptRecordError"}))
                 ).member
    assert not judge("KafkaStorageError: x", _allowed(_state(0))).member


def test_image_request__reads_the_checkpoints_and_the_marker(tmp_path: Path) -> None:
    """The recovery point comes from the image's checkpoint; a missing one reads as 0."""
    _image(5).write(tmp_path)
    request = image_request(tmp_path, CONFIG, 1000, PARTITION)
    assert request["dir"] == str(tmp_path / "conformance-0")
    assert (request["recovery_point"], request["log_start_offset"]) == (5, 0)
    assert request["high_watermark"] == 0 and request["clean_shutdown"] is False
    assert request["now_ms"] == 1000


def test_observe__loads_each_new_image_once_and_counts_the_outside_ones(tmp_path: Path) -> None:
    """Two points of one image, judged against their sets; a second observe reuses the load."""
    fake = FakeAdapter(_state(4))
    loader = KafkaLoader(lambda: fake, save_dir=tmp_path / "saved")
    image = _image(2)
    digest = image.digest()
    points = [SweepPoint(0, "power_loss", 0, digest, _state(2)),
              SweepPoint(1, "power_loss", 0, digest, _state(2))]
    loader.pending[digest] = (image, 0)

    def allowed(point: SweepPoint, inside: bool) -> Any:
        return _allowed(_state(4)) if inside else _allowed(_state(2))

    loader.observe(points, allowed, CONFIG, PARTITION, tmp_path / "scratch")
    assert [a for a, _ in fake.requests] == ["load_image"]
    assert fake.requests[0][1]["recovery_point"] == 2
    assert (loader.images, loader.outside) == (1, 1)
    assert (tmp_path / "saved" / digest.hex()[:16] / "verdict.json").exists()
    loader.observe(points, allowed, CONFIG, PARTITION, tmp_path / "scratch")
    assert len(fake.requests) == 1
    loader.close()
    assert fake.closed



def test_observe__the_same_image_under_another_config__is_loaded_again(tmp_path: Path) -> None:
    """One loader serves every run of a check, and the same bytes load otherwise under another
    config (a compacted log reports its cleaner checkpoint): Kafka's load is kept per image and
    config, and every point is judged against its own set (an empty log of a delete-policy run
    was once judged with a compacted run's load)."""
    fake = FakeAdapter(_state(0))
    loader = KafkaLoader(lambda: fake)
    image = _image(0)
    digest = image.digest()
    point = SweepPoint(0, "power_loss", 0, digest, _state(0))
    other = dataclasses.replace(CONFIG, segment_bytes=CONFIG.segment_bytes + 1)
    for config in (CONFIG, other):
        loader.pending[digest] = (image, 0)
        loader.observe([point], lambda p, inside: _allowed(_state(0)), config, PARTITION,
                       tmp_path / "scratch")
    assert len(fake.requests) == 2 and loader.images == 2
    loader.pending[digest] = (image, 0)
    loader.observe([point], lambda p, inside: _allowed(_state(1)), CONFIG, PARTITION,
                   tmp_path / "scratch")
    assert len(fake.requests) == 2 and loader.outside == 1

def test_observe__past_the_limit__skips_the_image(tmp_path: Path) -> None:
    """At most `limit` images are loaded by Kafka; the rest are counted as skipped."""
    fake = FakeAdapter(_state(0))
    loader = KafkaLoader(lambda: fake, limit=1)
    first, second = _image(0), _image(1)
    for image in (first, second):
        loader.pending[image.digest()] = (image, 0)
    points = [SweepPoint(0, "process_crash", 0, i.digest(), _state(0)) for i in (first, second)]
    loader.observe(points, lambda p, inside: _allowed(_state(0)), CONFIG, PARTITION,
                   tmp_path / "scratch")
    assert (loader.images, loader.outside, loader.skipped) == (1, 0, 1)


def test_judge__closest_member__is_the_one_with_fewest_differing_fields() -> None:
    """Among members of Kafka's LEO, the reported difference is the smallest one."""
    kafka = dataclasses.replace(_state(1), epoch_entries=(v.EpochEntry(0, 0),))
    other_size = dataclasses.replace(_state(1), segments=(dataclasses.replace(
        _state(1).segments[0], size_in_bytes=129, base_offset=0),))
    verdict = judge(kafka, _allowed(other_size, _state(1)))
    assert verdict.where.startswith("epoch_entries")


def test_judge__only_the_epoch_cache_differs__is_the_known_epoch_recovery_class() -> None:
    """Kafka keeping a checkpointed entry the model re-derives away (RCV-10 vs KL-CRASH-6)."""
    kafka = dataclasses.replace(_state(1), epoch_entries=(v.EpochEntry(0, 0),))
    verdict = judge(kafka, _allowed(_state(1)))
    assert not verdict.member
    assert verdict.gap == "epoch_recovery"
    assert "RCV-10" in verdict.describe()



def test_judge__an_epoch_entry_below_the_log_start__is_finding_9() -> None:
    """Kafka trims the loaded cache at the log-start checkpoint (REC-15), which may read below
    the loaded log start, so an entry starting below it stays (LOG-2); trimmed at the log start
    it is a member. An entry at the log start is not this class."""
    member = dataclasses.replace(_state(12), log_start_offset=12, high_watermark=12)
    kafka = dataclasses.replace(member, epoch_entries=(v.EpochEntry(0, 11),))
    verdict = judge(kafka, _allowed(member))
    assert not verdict.member and verdict.gap == "epoch_below_log_start"
    assert "finding 9" in verdict.describe()
    at_start = dataclasses.replace(member, epoch_entries=(v.EpochEntry(0, 12),))
    assert judge(at_start, _allowed(member)).gap != "epoch_below_log_start"

def test_load__adapter_failures__give_no_verdict_and_stop_after_a_few(tmp_path: Path) -> None:
    """An adapter that dies is not Kafka's load failing: no verdict, and after a few failures
    the loader stops starting it."""
    from kafkalog.conformance.errors import AdapterCrashedError

    starts = []

    class Dying(FakeAdapter):
        def request(self, action: str, args: dict[str, Any]) -> Any:
            raise AdapterCrashedError("exited")

    def start() -> FakeAdapter:
        starts.append(1)
        return Dying(_state(0))

    loader = KafkaLoader(start)
    _image(0).write(tmp_path)
    for _ in range(5):
        assert loader.load(tmp_path, CONFIG, 0, PARTITION) is None
    assert len(loader.errors) == 3 and len(starts) == 3
    assert loader.images == 0


_INDEX_BACK = ("InvalidOffsetError: InvalidOffsetException: Attempt to append an offset 0 to "
               "position 3 no larger than the last offset appended (6) to /x/0.index")


def test_judge__index_rebuild_fails_on_an_indexless_image__is_kafka_finding_8() -> None:
    """Kafka's loadSegmentFiles rebuilds a missing `.index` outside recoverLog's catch of
    InvalidOffsetException: its load fails where the model's empties the segment (labelled,
    still outside the set). Spec: KL-CRASH-9"""
    verdict = judge(_INDEX_BACK, _allowed(_state(0)), indexless=True)
    assert not verdict.member
    assert verdict.gap == "index_rebuild_fails_load"
    assert "finding 8" in verdict.describe()


def test_judge__index_rebuild_failure_with_every_index_present__stays_unclassified() -> None:
    """Without a missing `.index` the failure is not finding 8's path: to be triaged."""
    assert judge(_INDEX_BACK, _allowed(_state(0))).gap == ""
    other = "InvalidOffsetError: something else"
    assert judge(other, _allowed(_state(0)), indexless=True).gap == ""


def test_indexless__a_log_without_its_index__is_found(tmp_path: Path) -> None:
    from kafkalog.conformance.crash.kafka_loader import indexless

    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    assert indexless(tmp_path)
    (tmp_path / "00000000000000000000.index").write_bytes(b"")
    assert not indexless(tmp_path)


def test_judge__outside_state_equal_to_kafkalogs_own_load__is_kafkalog_too() -> None:
    """Kafka's load of the image is kafkalog's (the sweep's recovered state): the difference
    with the set is the run's own divergence, which the sweep reports. Spec: KL-CRASH-1"""
    kafka = dataclasses.replace(_state(1), producer_snapshots=(0, 1))
    verdict = judge(kafka, _allowed(_state(1)), kafkalogs=kafka)
    assert (verdict.member, verdict.gap) == (False, "kafkalog_too")
    other = judge(kafka, _allowed(_state(1)), kafkalogs=_state(1))
    assert (other.member, other.gap) == (False, "")
