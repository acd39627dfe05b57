"""Broken log cleaners: historical Kafka cleaner bugs (BUG-C* of the compaction reference) put back.

Each entry makes `kafkalog.impl.cleaner` (or the log's side of compaction: truncation, retention
of a compacted log) behave like Kafka did before the fix named by its ticket, stated against the
current code as a `diff` (base.py), so none can drift into a stale copy. They share one
namespace with the other catalogues (registry.py `broken_class`), so
`kafkalog check --broken NAME --family compact` and tests/conformance/test_broken_cleaner.py
run them; `CLEANER_TICKETS` names the KAFKA ticket of each.
"""

from __future__ import annotations

from kafkalog.conformance.broken.base import Broken, Patch, diff
from kafkalog.impl.cleaner import filter as cleaner_filter
from kafkalog.impl.cleaner import log_cleaner
from kafkalog.impl.log.deletion import LogDeletion

LogCleaner = log_cleaner.LogCleaner
# `plan.dirty_range`, `plan.group_lengths` and `filter.filter_batch` are patched where the cleaner
# looks them up (its module imports them by name); their source is edited where they are defined.

# The grouping limit of CLN-29 (4): a group spans at most Int.MAX offsets, except that an empty
# segment merges whatever its range.
_RANGE_LIMIT = "                    or (s.size > 0 and estimate - head.base_offset > INT32_MAX)):\n"

# CLN-33/CLN-34: a kept tombstone is deletable once the pass's clock reaches its batch's stored
# delete horizon; a batch without one (never cleaned) keeps its tombstones.
_TOMBSTONE_HORIZON = "    keeps_deletes = horizon is None or facts.now_ms < horizon\n"

# CLN-38, CLN-41, CLN-42: an emptied batch stays (as an empty batch) when it is an active
# producer's last batch or the round's last batch.
_RETAIN_EMPTY = ("    retain_empty = (batch.producer_id >= 0 and "
                 "_is_last_of_producer(batch, facts)) or (\n"
                 "        facts.keep_round_last and "
                 "batch.next_offset == facts.first_uncleanable)\n")


def _grouping_bugs() -> tuple[Broken, ...]:
    return (
        # KAFKA-2024: groups were bounded by size only, so one group's offsets could span more
        # than Int.MAX and the cleaned segment's relative offsets overflowed.
        Broken("group_spans_int_max", "BUG-C1", "CLN-29",
               "a group may span more than Int.MAX offsets",
               log_cleaner, "group_lengths", diff((_RANGE_LIMIT, "                    ):\n"))),
        # KAFKA-12889: the Int.MAX range check also applied to empty segments, so an empty
        # segment before a far-away base was never merged and stayed behind.
        Broken("empty_segment_not_merged", "BUG-C3", "CLN-29",
               "an empty segment is not merged across an Int.MAX offset range",
               log_cleaner, "group_lengths",
               diff((_RANGE_LIMIT,
                     "                    or estimate - head.base_offset > INT32_MAX):\n"))),
    )


def _selection_bugs() -> tuple[Broken, ...]:
    return (
        # KAFKA-9826: the segments in [firstDirty, firstUncleanable) included the floor segment
        # when both offsets were equal, so the active segment's bytes counted as cleanable and a
        # log with nothing to clean was selected for a pass (over and over).
        Broken("active_segment_counted_dirty", "BUG-C8", "CLN-17",
               "the dirty ratio counts the active segment when nothing is cleanable",
               log_cleaner, "dirty_range",
               diff(("    if first_dirty < first_uncleanable:\n",
                     "    if first_dirty <= first_uncleanable:\n"),
                    ("        cleanable = sum(s.size for s in segments[start:] "
                     "if s.base_offset < first_uncleanable)\n",
                     "        cleanable = sum(s.size for s in segments[start:]\n"
                     "                        if s.base_offset < max(first_uncleanable, "
                     "bases[start] + 1))\n"))),
        # KAFKA-6266: a checkpoint outside [log start, LEO] was reset in memory for the pass but
        # not written back, so a log that was then not cleaned kept the invalid entry.
        Broken("checkpoint_reset_not_persisted", "BUG-C10", "CLN-14",
               "an invalid checkpoint is reset for the pass but not rewritten",
               LogCleaner, "select",
               diff(("        if plan.reset_checkpoint:\n"
                     "            self.checkpoint.write(plan.first_dirty)\n", ""))),
        # KAFKA-3330: truncation did not lower the checkpoint, so data re-appended below it was
        # taken as already clean and never compacted.
        Broken("truncation_keeps_checkpoint", "BUG-C11", "CLN-68",
               "a truncation below the active base leaves the cleaner checkpoint above it",
               LogDeletion, "truncate_to",
               diff(("            if below_active:\n"
                     "                self._lower_cleaner_checkpoint()\n", ""))),
        # KAFKA-7400: retention skipped compact-only logs altogether, so segments wholly below
        # the log start offset were never deleted.
        Broken("compact_keeps_segments_below_log_start", "BUG-C25", "CLN-20",
               "a compact-only log never deletes segments below its log start offset",
               LogDeletion, "delete_old_segments",
               diff(("                return self._delete_log_start_offset_breached_segments()\n",
                     "                return 0\n"))),
    )


def _record_bugs() -> tuple[Broken, ...]:
    return (
        # KAFKA-4529: the delete horizon came from the records' own timestamps, so a tombstone
        # older than delete.retention.ms was dropped by the first pass that saw it.
        Broken("tombstone_horizon_from_timestamp", "BUG-C12", "CLN-33",
               "tombstones with old timestamps are removed at once",
               cleaner_filter, "_retain_record",
               diff((_TOMBSTONE_HORIZON,
                     "    keeps_deletes = facts.now_ms < (horizon if horizon is not None\n"
                     "                                     else record.timestamp + "
                     "facts.delete_retention_ms)\n")),
               also=(Patch(cleaner_filter, "_retained_walked",
                           diff((_TOMBSTONE_HORIZON,
                                 "    stamps = _walked_timestamps(batch, walk, "
                                 "list(range(len(walk.offsets))))\n"),
                                ("(keeps_deletes or not nulls[i])",
                                 "(facts.now_ms < (horizon if horizon is not None else "
                                 "stamps[i] + facts.delete_retention_ms) or not nulls[i])"))),)),
        # KAFKA-8522: before stored horizons, a tombstone or marker whose segment was rewritten
        # could live forever; the stored horizon is never honoured here.
        Broken("horizon_never_honoured", "BUG-C13", "CLN-33",
               "tombstones and markers are never removed once their horizon passed",
               cleaner_filter, "_retain_record",
               diff((_TOMBSTONE_HORIZON, "    keeps_deletes = True\n")),
               also=(Patch(cleaner_filter, "_retained_walked",
                           diff((_TOMBSTONE_HORIZON, "    keeps_deletes = True\n"))),
                     Patch(log_cleaner, "filter_batch",
                           diff(("        discard = can_discard and horizon is not None and "
                                 "horizon <= facts.now_ms\n",
                                 "        discard = False\n"))),)),
        # KAFKA-5490: an active producer's last batch was removed like any other, so its
        # sequence and epoch were lost when producer state was rebuilt from the log.
        Broken("producer_last_batch_dropped", "BUG-C18", "CLN-41",
               "an active producer's emptied last batch is removed",
               log_cleaner, "filter_batch",
               diff((_RETAIN_EMPTY,
                     "    retain_empty = facts.keep_round_last and "
                     "batch.next_offset == facts.first_uncleanable\n"))),
        # KAFKA-17076: the round's emptied last batch was removed, so the cleaned log lost the
        # offset where the pass ended.
        Broken("round_last_batch_dropped", "BUG-C24", "CLN-42",
               "the round's emptied last batch is removed",
               log_cleaner, "filter_batch",
               diff((_RETAIN_EMPTY,
                     "    retain_empty = batch.producer_id >= 0 and "
                     "_is_last_of_producer(batch, facts)\n"))),
        # KAFKA-8351: transaction state started afresh for every group, so a transaction whose
        # data and marker fell into different groups was judged without its data.
        Broken("txn_state_per_group", "BUG-C21", "CLN-40",
               "transaction state does not carry across groups",
               LogCleaner, "clean",
               diff(("                self.clean_group(group, facts, tracker)\n",
                     "                self.clean_group(group, facts, TxnTracker())\n"))),
    )


def _checkpoint_bugs() -> tuple[Broken, ...]:
    return (
        # KAFKA-8764: the build's end offset was the last batch read, not the next segment's
        # base, so a dirty section ending in a gap was never marked clean and recleaned forever.
        Broken("build_stops_before_gap", "BUG-C7", "CLN-27",
               "a full build ends at the last batch, short of a gap before firstUncleanable",
               LogCleaner, "build_offset_map",
               diff(("            offset_map.latest_offset = next_base - 1\n", ""))),
        # CLN-22: the checkpoint is where the pass ended (the map's end offset); one written at
        # the uncleanable bound marks data of the active segment clean that no pass read.
        Broken("checkpoint_ahead_of_cleaned", "CLN-22", "CLN-22",
               "the checkpoint is written at the last stable offset, ahead of the cleaned range",
               LogCleaner, "clean",
               diff(("            self.checkpoint.write(end_offset)\n",
                     "            self.checkpoint.write(max(end_offset, "
                     "log.last_stable_offset))\n"))),
    )


_TO_SWAP = "        cleaned.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)\n"


def _swap_bugs() -> tuple[Broken, ...]:
    return (
        # CLN-57 (LOC-14): the swap renames the cleaned files `.swap` -> plain last; a segment
        # left under its `.swap` names is live data a load takes for an unfinished swap.
        Broken("swap_suffix_kept", "CLN-57", "CLN-57",
               "the swapped-in segment keeps its `.swap` file names",
               LogCleaner, "_replace_segments",
               diff(("        _drop_swap_suffix(cleaned, local.fs, local.dir)\n", ""))),
        # CLN-57 (LOC-14): the replaced segments are renamed `.deleted` and removed after
        # file.delete.delay.ms, so readers of the old files finish first.
        Broken("swap_deletes_at_once", "CLN-57", "CLN-57",
               "the replaced segments' files are deleted at once, not after the delay",
               LogCleaner, "_replace_segments",
               diff(("local.delete_segment_files(group, async_delete=True)",
                     "local.delete_segment_files(group, async_delete=False)"))),
        # CLN-57: the swap deletes the snapshots of the replaced bases but the group's first,
        # which the cleaned segment reuses.
        Broken("swap_deletes_reused_snapshot", "CLN-57", "CLN-57",
               "the swap deletes the producer snapshot at the cleaned segment's own base",
               LogCleaner, "_replace_segments",
               diff(("delete_snapshots_async(s.base_offset for s in group[1:])",
                     "delete_snapshots_async(s.base_offset for s in group)"))),
        # CLN-57 as Kafka's own `replaceSegments` does it (GAP-3): the `.cleaned` files'
        # entries, the `.swap` renames and the old segments' `.deleted` renames are never made
        # durable before the next phase; one directory fsync ends the swap. A power loss that keeps
        # each file's directory operations on its own (FLT-5) leaves overlapping segments or
        # loses the group's range, which kafkalog's strict promise (KL-CRASH-15) forbids.
        Broken("swap_renames_not_durable", "CLN-57", "CLN-58",
               "the swap's renames are not durable phase by phase (Kafka's way)",
               LogCleaner, "_replace_segments",
               diff((_TO_SWAP + "        local.fs.fsync_dir(local.dir)\n", _TO_SWAP),
                    ("        local.delete_segment_files(group, async_delete=True)\n"
                     "        _drop_swap_suffix(cleaned, local.fs, local.dir)\n",
                     "        for old in group:\n"
                     "            old.change_file_suffixes(\"\", \".deleted\")\n"
                     "        local.schedule_deletion(group)\n"
                     "        cleaned.change_file_suffixes(SWAP_FILE_SUFFIX, \"\")\n"
                     "        local.fs.fsync_dir(local.dir)\n")),
               also=(Patch(LogCleaner, "clean_group",
                           diff(("        cleaned.flush()\n        local.fs.fsync_dir(local.dir)\n",
                                 "        cleaned.flush()\n"))),)),
    )


CLEANER_BROKEN: dict[str, Broken] = {
    b.name: b for b in (*_grouping_bugs(), *_selection_bugs(), *_record_bugs(),
                        *_checkpoint_bugs(), *_swap_bugs())
}

#: The KAFKA ticket whose fix each bug undoes (None: a slip of a rule, no ticket).
CLEANER_TICKETS: dict[str, str | None] = {
    "group_spans_int_max": "KAFKA-2024",
    "empty_segment_not_merged": "KAFKA-12889",
    "active_segment_counted_dirty": "KAFKA-9826",
    "checkpoint_reset_not_persisted": "KAFKA-6266",
    "truncation_keeps_checkpoint": "KAFKA-3330",
    "compact_keeps_segments_below_log_start": "KAFKA-7400",
    "tombstone_horizon_from_timestamp": "KAFKA-4529",
    "horizon_never_honoured": "KAFKA-8522",
    "producer_last_batch_dropped": "KAFKA-5490",
    "round_last_batch_dropped": "KAFKA-17076",
    "txn_state_per_group": "KAFKA-8351",
    "build_stops_before_gap": "KAFKA-8764",
    "checkpoint_ahead_of_cleaned": None,
    "swap_suffix_kept": None,
    "swap_deletes_at_once": None,
    "swap_deletes_reused_snapshot": None,
    "swap_renames_not_durable": None,
}

#: The cleaner bugs only a crash shows: their searches draw crash steps.
CLEANER_CRASH_ONLY = frozenset({"swap_renames_not_durable"})

#: The config family each cleaner bug is checked with.
CLEANER_BROKEN_FAMILY: dict[str, str] = {name: "compact" for name in CLEANER_BROKEN}
