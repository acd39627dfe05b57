package kafkalog.adapter;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.BatchMetadata;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.OffsetIndex;
import org.apache.kafka.storage.internals.log.OffsetPosition;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.TimeIndex;
import org.apache.kafka.storage.internals.log.TimestampOffset;

/**
 * The `state` answer (specs/adapter-protocol.md): offsets, segments with their index entries,
 * the epoch cache, the producer table, the last stable offset and the `.txnindex` entries read
 * from Kafka's objects; pending deletions and producer snapshots read from the files Kafka
 * wrote in the log's directory. The fields of a feature the generation does not offer are
 * left out, and the cleaner checkpoint also for a log that is not compacted.
 */
final class StateView {
    private final KafkaLogBase log;
    private final CompactionSteps compaction;

    StateView(KafkaLogBase log, CompactionSteps compaction) {
        this.log = log;
        this.compaction = compaction;
    }

    Map<String, Object> read() throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("log_start_offset", log.logStartOffset());
        out.put("high_watermark", log.highWatermark());
        out.put("log_end_offset", log.logEndOffset());
        out.put("recovery_point", log.recoveryPoint());
        out.put("segments", segments());
        out.put("epoch_entries", epochEntries());
        out.put("pending_deletions", pendingDeletions());
        if (Generation.FEATURES.contains("producer_state")) {
            out.put("producers", producers());
            out.put("producer_snapshots", snapshotOffsets());
        }
        if (Generation.FEATURES.contains("transactions")) {
            out.put("last_stable_offset", log.lastStableOffset());
            out.put("aborted_txns", abortedTxns());
        }
        if (Generation.FEATURES.contains("clean") && log.compacted()) {
            out.put("cleaner_checkpoint", compaction.checkpoint());
        }
        return out;
    }

    private List<Object> segments() throws IOException {
        List<Object> segs = new ArrayList<>();
        for (LogSegment s : log.segments()) {
            segs.add(segmentView(s));
        }
        return segs;
    }

    private static Map<String, Object> segmentView(LogSegment s) throws IOException {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("base_offset", s.baseOffset());
        view.put("size_in_bytes", (long) s.size());
        view.put("next_offset", s.readNextOffset());
        view.put("offset_index", offsetIndexEntries(s.offsetIndex()));
        view.put("time_index", timeIndexEntries(s.timeIndex()));
        return view;
    }

    private static List<Object> offsetIndexEntries(OffsetIndex oi) {
        List<Object> offsets = new ArrayList<>();
        for (int i = 0; i < oi.entries(); i++) {
            OffsetPosition p = oi.entry(i);
            offsets.add(List.of(p.indexKey(), p.indexValue()));
        }
        return offsets;
    }

    private static List<Object> timeIndexEntries(TimeIndex ti) {
        List<Object> times = new ArrayList<>();
        for (int i = 0; i < ti.entries(); i++) {
            TimestampOffset t = ti.entry(i);
            times.add(List.of(t.indexKey(), t.indexValue()));
        }
        return times;
    }

    /** The leader epoch cache's entries; none where the release's log has no cache. */
    private List<Object> epochEntries() {
        List<Object> epochs = new ArrayList<>();
        LeaderEpochFileCache cache = log.epochCache();
        if (cache != null) {
            for (EpochEntry e : cache.epochEntries()) {
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("epoch", (long) e.epoch@acc@);
                entry.put("start_offset", e.startOffset@acc@);
                epochs.add(entry);
            }
        }
        return epochs;
    }

    /** Every live segment's `.txnindex` entries, in segment order (the class of an entry
     * moved between releases; its accessors did not). */
    private List<Object> abortedTxns() {
        List<Object> out = new ArrayList<>();
        for (LogSegment s : log.segments()) {
            for (var t : s.txnIndex().allAbortedTxns()) {
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("producer_id", t.producerId());
                e.put("first_offset", t.firstOffset());
                e.put("last_offset", t.lastOffset());
                e.put("last_stable_offset", t.lastStableOffset());
                out.add(e);
            }
        }
        return out;
    }

    /** Bases whose segment files are renamed `.deleted` and still on disk (LOC-11). */
    private List<Object> pendingDeletions() throws IOException {
        TreeSet<Long> bases = new TreeSet<>();
        File[] files = log.dir.listFiles();
        if (files != null) {
            for (File f : files) {
                String name = f.getName();
                if (name.endsWith(".deleted") && !name.contains(".snapshot")
                        && name.length() > 20 && name.substring(0, 20).chars()
                            .allMatch(Character::isDigit)) {
                    bases.add(Long.parseLong(name.substring(0, 20)));
                }
            }
        }
        return new ArrayList<>(bases);
    }

    /** Offsets of the producer snapshot files (`<20 digits>.snapshot`) in the directory. */
    private List<Object> snapshotOffsets() {
        TreeSet<Long> offsets = new TreeSet<>();
        File[] files = log.dir.listFiles();
        if (files != null) {
            for (File f : files) {
                String name = f.getName();
                if (name.endsWith(".snapshot") && name.length() == 29) {
                    offsets.add(Long.parseLong(name.substring(0, 20)));
                }
            }
        }
        return new ArrayList<>(offsets);
    }

    /** The producer state manager's active producers, by producer id. */
    private List<Object> producers() {
        List<Object> out = new ArrayList<>();
        List<Map.Entry<Long, ProducerStateEntry>> entries =
            new ArrayList<>(log.producerStateManager().activeProducers().entrySet());
        entries.sort(Map.Entry.comparingByKey());
        for (Map.Entry<Long, ProducerStateEntry> e : entries) {
            out.add(producerView(e.getKey(), e.getValue()));
        }
        return out;
    }

    private static Map<String, Object> producerView(long producerId, ProducerStateEntry p) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("producer_id", producerId);
        view.put("producer_epoch", (long) p.producerEpoch());
        view.put("coordinator_epoch", (long) p.coordinatorEpoch());
        view.put("last_timestamp", p.lastTimestamp());
        view.put("current_txn_first_offset", p.currentTxnFirstOffset().orElse(-1L));
        List<Object> batches = new ArrayList<>();
        for (BatchMetadata b : p.batchMetadata()) {
            Map<String, Object> bv = new LinkedHashMap<>();
            bv.put("first_seq", (long) b.firstSeq());
            bv.put("last_seq", (long) b.lastSeq@acc@);
            bv.put("first_offset", b.firstOffset());
            bv.put("last_offset", b.lastOffset@acc@);
            bv.put("timestamp", b.timestamp@acc@);
            batches.add(bv);
        }
        view.put("batches", batches);
        return view;
    }
}
