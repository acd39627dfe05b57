"""PSR-7 for transactions: rebuilding a recovered segment's `.txnindex` (LDR.recoverSegment).

Kafka recovers a segment with a temporary producer-state manager over the same directory: it is
rebuilt up to the segment's base from the newest snapshot at or below it plus replay (which,
through `truncateAndReload`, deletes snapshot files above the base), every valid batch of the
segment is fed to it one at a time (`LogSegment.updateProducerState`), each completed
transaction gets its last stable offset (TXN-10) and, if aborted, an entry in the segment's
reset `.txnindex` (TXN-11), and a snapshot is taken at the recovered end. The log's own manager
is rebuilt afterwards by the normal load (PSR-5).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kafkalog.impl.fs.file_system import FileSystem
from kafkalog.impl.producer.producer_state_manager import (
    AppendOrigin,
    CompletedTxn,
    ProducerStateManager,
)
from kafkalog.impl.producer.rebuild import producer_batch_of, rebuild_producer_state
from kafkalog.impl.segment.log_segment import LogSegment
from kafkalog.impl.segment.recovery import batches_at, recovered_batches_of
from kafkalog.impl.time import Time
from kafkalog.model.values import AbortedTxnEntry, LogConfig


def recover_txn_index(fs: FileSystem, dir_path: Path, config: LogConfig, time: Time,
                      others: Sequence[LogSegment], segment: LogSegment, log_start: int) -> None:
    """Rebuild `segment`'s `.txnindex` (already reset by `segment.recover`) from its batches;
    `others` are the other segments loaded so far (Kafka passes the whole segment map)."""
    psm = ProducerStateManager(fs, dir_path, time, config.producer_id_expiration_ms,
                               config.file_delete_delay_ms)
    segments = sorted([*others, segment], key=lambda s: s.base_offset)
    rebuild_producer_state(psm, segments, log_start, segment.base_offset,
                           time.milliseconds(), clean_shutdown=False)

    def index(txn: CompletedTxn, lso: int) -> None:
        if txn.is_aborted:
            segment.txn_index.append(AbortedTxnEntry(txn.producer_id, txn.first_offset,
                                                     txn.last_offset, lso))

    seen = recovered_batches_of(segment)
    # A batch without a producer id only moves the map end (analyze skips it), so after the
    # recovery walk only the batches it found with one are read, and the map end is set once.
    source = (segment.log.batches(0) if seen is None
              else batches_at(segment.log, seen.producer_positions))
    for batch in source:
        if batch.magic < 2:
            continue
        producer = producer_batch_of(batch)
        infos, _ = psm.analyze([producer], AppendOrigin.REPLICATION)
        psm.apply(infos, batch.last_offset + 1, index)
    if seen is not None and seen.v2_end >= 0:
        psm.update_map_end_offset(seen.v2_end)
    psm.take_snapshot()
