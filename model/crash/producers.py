"""Producer and transaction state after a crash and an unclean load (specs/log.md KL-CRASH-11,
KL-CRASH-12, PSR-7).

A clean load rebuilds producer state from the newest snapshot and the batches after it
(`reload.py`, PSR-5). An unclean load first *recovers* it, segment by segment, from the one
holding the checkpointed recovery point, the way Kafka's `LogLoader.recoverSegment` does
(PSR-7): a temporary manager over the same directory is rebuilt up to the segment's base (which
deletes every snapshot file above that base, PSR-4), replays the segment's batches as
replication and writes a snapshot at the segment's end. A snapshot keeps only each producer's
newest batch (PSF-4), and loading one drops expired producers (PST-22), so what the log serves
after the load is what those intermediate snapshots kept, not a replay of every batch.

kafkalog's implementation runs that pass twice (once while the loader rebuilds each recovered
segment's transaction index, once when the log loads its producer state); both are modelled.

Which snapshot files a crash leaves is a set, not a value: a snapshot is written at a roll and
its directory entry is durable only at the next directory fsync, and an index rebuild at load
time (a segment whose index file a crash took away) deletes the snapshots above that segment.
`surviving_snapshots` over-approximates both with every prefix of the snapshot list.

Pure and stdlib-only like the rest of the model; `recovery.py` calls `reload_producers`.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from ..helpers import floor_index
from ..producer.producer_entry import AppendOrigin, ProducerBatch
from ..producer.producer_state import (
    Producers,
    ProducerState,
    apply_append,
    rebuild,
    remove_stray_snapshots,
    take_snapshot,
)
from ..state import Segment
from ..values import AbortedTxnEntry, LogConfig

__all__ = ["recover_producers", "reload_producers", "surviving_snapshots"]

Snapshots = tuple[tuple[int, Producers], ...]


def surviving_snapshots(snapshots: Snapshots) -> list[Snapshots]:
    """The snapshot files a crash may leave for the load: any prefix of the list (the newest
    ones un-fsynced, DUR-29, or deleted by a load-time index rebuild of a lower segment, PSR-7).

    Spec: KL-CRASH-11.
    """
    return [snapshots[:n] for n in range(len(snapshots), -1, -1)]


def _segment_batches(segments: tuple[Segment, ...]
                     ) -> tuple[tuple[int, tuple[ProducerBatch, ...]], ...]:
    from ..reload import segment_producer_batches

    return segment_producer_batches(segments)


def _replay_segment(producers: Producers, segment: Segment
                    ) -> tuple[Producers, tuple[AbortedTxnEntry, ...]]:
    """PSR-7 step 3 (`LogSegment.recover` feeding the temporary manager): every batch as its own
    replicated append; each aborted transaction a marker closes gets a `.txnindex` entry whose
    last stable offset is the first offset of another producer's ongoing transaction, else the
    marker + 1 (TXN-10, TXN-11). Spec: KL-CRASH-12."""
    entries: list[AbortedTxnEntry] = []
    for batch in segment.batches:
        producers, completed = apply_append(producers, (batch.producer_batch(),),
                                            AppendOrigin.REPLICATION)
        for txn in completed:
            others = sorted(e.current_txn_first_offset for e in producers
                            if e.current_txn_first_offset >= 0 and e.producer_id != txn.producer_id)
            lso = others[0] if others else txn.last_offset + 1
            if txn.is_aborted:
                entries.append(AbortedTxnEntry(txn.producer_id, txn.first_offset,
                                               txn.last_offset, lso))
    return producers, tuple(entries)


def recover_producers(files: Snapshots, segments: tuple[Segment, ...], log_start: int,
                      recovery_point: int, config: LogConfig, now_ms: int
                      ) -> tuple[Snapshots, dict[int, tuple[AbortedTxnEntry, ...]]]:
    """PSR-7: one recovery pass over `segments` (already cut): the snapshot files after it and
    each recovered segment's rebuilt `.txnindex` (by base offset).

    For each segment from the one holding `recovery_point`: a fresh manager over `files` is
    rebuilt up to the segment's base (PSR-5 from `log_start`, the loaded log start: see
    `reload_producers`), replays the segment batch by batch as replication (PSR-6) and
    snapshots at its end.

    Spec: KL-CRASH-11.
    """
    batches = _segment_batches(segments)
    indexes: dict[int, tuple[AbortedTxnEntry, ...]] = {}
    first = max(floor_index([s.base_offset for s in segments], recovery_point), 0)
    for segment in segments[first:]:
        temp = ProducerState(snapshots=files)
        temp = rebuild(temp, batches, log_start, segment.base_offset, now_ms,
                       config.producer_id_expiration_ms, clean_shutdown=False)
        producers, indexes[segment.base_offset] = _replay_segment(temp.producers, segment)
        temp = take_snapshot(replace(temp, producers=producers,
                                     last_map_offset=max(segment.next_offset,
                                                         temp.last_map_offset)))
        files = temp.snapshots
    return files, indexes


@functools.lru_cache(maxsize=4096)  # a crash set reloads the same image under many variants
def reload_producers(snapshots: Snapshots, segments: tuple[Segment, ...], log_start: int,
                     leo: int, recovery_point: int, config: LogConfig, now_ms: int,
                     dropped: bool, pass_start: int | None = None
                     ) -> tuple[ProducerState, tuple[Segment, ...]]:
    """The producer state an unclean load ends with (PSR-7, then PSR-3 and PSR-5), and the
    segments with the `.txnindex` of each recovered one rebuilt (TXN-11).

    `snapshots` are the files the crash left; the two recovery passes rewrite them (the first,
    the loader's, also rebuilds the transaction indexes); a LEO below the log-start checkpoint
    (`dropped`) deletes them all (PSR-11). Strays are removed and the state rebuilt up to the
    LEO from the newest snapshot left, which a recovery pass wrote at the LEO: the table holds
    each producer's newest batch only (PSF-4) and no unreplicated transaction (TXN-13).

    Both recovery passes start at the loaded `log_start` (kafkalog; Kafka passes the log-start
    checkpoint, KL-CRASH-11): the checkpoint may read below the first segment (FMT-40 writes
    none when the log start is the first base), and a pass started there reads the snapshot at
    the log start, which the rebuild below then deletes (PSR-4): a transaction begun below the
    log start would be indexed with its first offset (or a lower last stable offset) by this
    load and without it by the next. `pass_start` (kafka mode, KL-ALLOW-9) is Kafka's start of
    the passes instead: the log-start checkpoint as read.

    Spec: KL-CRASH-11, KL-CRASH-12, KL-CRASH-7, KL-PROD-12, KL-TXN-7, KL-ALLOW-9.
    """
    files = tuple(s for s in snapshots if s[0] <= leo)
    start = log_start if pass_start is None else pass_start
    if dropped:
        files = ()
    else:
        files, indexes = recover_producers(files, segments, start, recovery_point, config,
                                           now_ms)
        segments = tuple(replace(s, txn_index=indexes.get(s.base_offset, s.txn_index))
                         for s in segments)
        files, _ = recover_producers(files, segments, start, recovery_point, config, now_ms)
    fresh = ProducerState(
        snapshots=files,
        expiry_due_ms=now_ms + config.producer_id_expiration_check_interval_ms,
    )
    fresh = remove_stray_snapshots(fresh, (s.base_offset for s in segments))
    return rebuild(fresh, _segment_batches(segments), log_start, leo, now_ms,
                   config.producer_id_expiration_ms, clean_shutdown=False), segments
