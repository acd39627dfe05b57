package kafkalog.adapter;

import @records.pkg@.ControlRecordType;
import @records.pkg@.EndTransactionMarker;
import @records.pkg@.FileRecords;
import @records.pkg@.MemoryRecords;
import @records.pkg@.MemoryRecordsBuilder;
import @records.pkg@.Record;
import @records.pkg@.RecordBatch;
import @records.pkg@.Records;
import @records.pkg@.SimpleRecord;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.BatchMetadata;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.OffsetIndex;
import org.apache.kafka.storage.internals.log.OffsetPosition;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.RecordValidationException;
import org.apache.kafka.storage.internals.log.TimeIndex;
import org.apache.kafka.storage.internals.log.TimestampOffset;

/**
 * What every Kafka release shares: the protocol's actions decoded into Kafka's record batches,
 * Kafka's answers encoded as the protocol's values, and the state view read from Kafka's objects
 * and the files it wrote. Each release's subclass (class Generation's log) makes the calls whose
 * signatures differ between releases.
 */
public abstract class KafkaLogBase implements PartitionLog {
    /** Kafka's transaction.max.timeout.ms default, which the log uses to bound open txns. */
    protected static final int MAX_TRANSACTION_TIMEOUT_MS = 900_000;
    private static final int ONE_MIB = 1024 * 1024;

    protected final Path root;
    protected final File dir;
    protected final Map<String, Object> config;
    protected final LogConfig logConfig;
    protected final ManualClock clock;
    protected final ManualScheduler scheduler;
    protected final int producerIdExpirationMs;
    protected final int producerIdExpirationCheckIntervalMs;
    private final boolean logAppendTime;
    private final SegmentFileTimes fileTimes;
    private final CompactionSteps compaction;

    protected KafkaLogBase(Map<String, Object> config, long nowMs, boolean internalSegmentBytes)
            throws IOException {
        this.config = config;
        this.logConfig = new LogConfig(kafkaProps(config, internalSegmentBytes));
        this.logAppendTime = "LogAppendTime".equals(config.get("message_timestamp_type"));
        this.producerIdExpirationMs = intConfig(config, "producer_id_expiration_ms", 86_400_000L);
        this.producerIdExpirationCheckIntervalMs =
            intConfig(config, "producer_id_expiration_check_interval_ms", 600_000L);
        this.clock = new ManualClock(nowMs);
        this.scheduler = new ManualScheduler(clock);
        this.root = Files.createTempDirectory("kafkalog-kafka-");
        this.dir = root.resolve("conformance-0").toFile();
        this.fileTimes = new SegmentFileTimes(dir, clock);
        this.compaction = new CompactionSteps(this::newCleaning, this::segments, fileTimes);
    }

    private static int intConfig(Map<String, Object> config, String name, long fallback) {
        long value = Args.lng(config, name, fallback);
        if (value < 0 || value > Integer.MAX_VALUE) {
            throw new LogError("IllegalArgumentError", name + " " + value + " outside int32");
        }
        return (int) value;
    }

    /**
     * The model's LogConfig under Kafka's topic-config names. Kafka's own bounds then decide
     * (ConfigException, answered as IllegalArgumentError). Releases with a 1 MiB floor on
     * segment.bytes take small segments through internal.segment.bytes, their testing knob.
     */
    static Map<String, Object> kafkaProps(Map<String, Object> c, boolean internalSegmentBytes) {
        Map<String, Object> p = new HashMap<>();
        long segmentBytes = Args.lng(c, "segment_bytes", 1L << 30);
        if (internalSegmentBytes && segmentBytes < ONE_MIB) {
            p.put("segment.bytes", String.valueOf(ONE_MIB));
            p.put("internal.segment.bytes", String.valueOf(segmentBytes));
        } else {
            p.put("segment.bytes", String.valueOf(segmentBytes));
        }
        p.put("segment.ms", String.valueOf(Args.lng(c, "segment_ms", 604_800_000L)));
        p.put("segment.jitter.ms", String.valueOf(Args.lng(c, "segment_jitter_ms", 0L)));
        p.put("index.interval.bytes", String.valueOf(Args.lng(c, "index_interval_bytes", 4096L)));
        p.put("segment.index.bytes",
            String.valueOf(Args.lng(c, "segment_index_bytes", 10L * ONE_MIB)));
        p.put("retention.ms", String.valueOf(Args.lng(c, "retention_ms", 604_800_000L)));
        p.put("retention.bytes", String.valueOf(Args.lng(c, "retention_bytes", -1L)));
        p.put("max.message.bytes",
            String.valueOf(Args.lng(c, "max_message_bytes", ONE_MIB + 12L)));
        p.put("file.delete.delay.ms", String.valueOf(Args.lng(c, "file_delete_delay_ms", 60_000L)));
        p.put("message.timestamp.type", Args.str(c, "message_timestamp_type", "CreateTime"));
        // A compacted log's leader refuses keyless records (KL-CLEAN-12); the cleaner settings
        // are passed too, so Kafka holds the same LogConfig as the model.
        p.put("cleanup.policy", Args.str(c, "cleanup_policy", "delete"));
        p.put("min.cleanable.dirty.ratio",
            String.valueOf(Args.dbl(c, "min_cleanable_dirty_ratio", 0.5)));
        p.put("min.compaction.lag.ms", String.valueOf(Args.lng(c, "min_compaction_lag_ms", 0L)));
        p.put("max.compaction.lag.ms",
            String.valueOf(Args.lng(c, "max_compaction_lag_ms", Long.MAX_VALUE)));
        p.put("delete.retention.ms",
            String.valueOf(Args.lng(c, "delete_retention_ms", 86_400_000L)));
        // The checker's record timestamps are arbitrary: Kafka must not judge them by its clock.
        p.put("message.timestamp.before.max.ms", String.valueOf(Long.MAX_VALUE));
        p.put("message.timestamp.after.max.ms", String.valueOf(Long.MAX_VALUE));
        return p;
    }

    // --- calls whose signatures differ between Kafka releases ---------------------------------

    protected abstract LogAppendInfo appendLeader(MemoryRecords records, int leaderEpoch,
        boolean coordinator) throws IOException;

    protected abstract LogAppendInfo appendFollower(MemoryRecords records, int leaderEpoch)
        throws IOException;

    protected abstract FetchDataInfo read(long start, int maxBytes, String isolation,
        boolean minOneMessage) throws IOException;

    protected abstract long updateHighWatermark(long offset) throws IOException;

    protected abstract Optional<LogOffsetMetadata> maybeIncrementHighWatermark(
        LogOffsetMetadata hw) throws IOException;

    protected abstract boolean maybeIncrementLogStartOffset(long offset);

    protected abstract int deleteOldSegments() throws IOException;

    protected abstract LogSegment roll(Long expectedNextOffset) throws IOException;

    protected abstract boolean truncateTo(long offset) throws IOException;

    protected abstract void truncateFullyAndStartAt(long offset) throws IOException;

    protected abstract void flush(boolean forceActive);

    protected abstract void flushUptoOffsetExclusive(long offset);

    protected abstract void assignEpoch(int epoch, long startOffset);

    /** {epoch, end offset}, or null when the epoch has no end offset. */
    protected abstract long[] endOffsetForEpoch(int epoch);

    protected abstract Optional<FileRecords.TimestampAndOffset> fetchOffsetByTimestamp(long ts);

    /** A clean close as LogManager's shutdown does it: flush, close, drop the metrics. */
    protected abstract void closeClean();

    /** Drops the log's handles without flushing, as a crash leaves it. */
    protected abstract void closeHandlers();

    /** Loads the directory again (lastShutdownClean as given). */
    protected abstract void load(long logStartOffset, long recoveryPoint, boolean clean)
        throws IOException;

    protected abstract long logStartOffset();

    protected abstract long highWatermark();

    protected abstract long logEndOffset();

    protected abstract long recoveryPoint();

    protected abstract long lastStableOffset();

    protected abstract Iterable<LogSegment> segments();

    protected abstract LeaderEpochFileCache epochCache();

    protected abstract ProducerStateManager producerStateManager();

    /** The append result's offset of the max timestamp, or -1 where the release's
     * LogAppendInfo has no such field. */
    protected abstract long offsetOfMaxTimestamp(LogAppendInfo info);

    /** Kafka's cleaner over this log (a new one per open; it reads the current log each call). */
    protected abstract LogCleaning newCleaning() throws Exception;

    /** Whether the log's policy contains `compact` (Kafka's own LogConfig.compact). */
    protected final boolean compacted() {
        return logConfig.compact;
    }

    /** One pass of Kafka's cleaner without the `clean` answer's bookkeeping (what Bench times);
     * see CompactionSteps.cleanPass. */
    long[] cleanPass() throws Exception {
        return compaction.cleanPass();
    }

    // --- dispatch --------------------------------------------------------------------------------

    @Override
    public Object handle(String action, Map<String, Object> a) throws Exception {
        // A cleaning pass keeps the file times Kafka's cleaner gave (CompactionSteps.clean).
        if (action.equals("state") || action.equals("read") || action.equals("clean")) {
            return act(action, a);
        }
        try {
            return act(action, a);
        } finally {
            fileTimes.stampWrites();
        }
    }

    private Object act(String action, Map<String, Object> a) throws Exception {
        switch (action) {
            case "append_as_leader": return appendAsLeader(a);
            case "append_marker": return appendMarker(a);
            case "append_as_follower": return appendAsFollower(a);
            case "read": return readAction(a);
            case "update_high_watermark": return updateHighWatermark(Args.lng(a, "offset"));
            case "maybe_increment_high_watermark": {
                Map<String, Object> hw = Args.map(a, "hw");
                LogOffsetMetadata meta = new LogOffsetMetadata(Args.lng(hw, "message_offset"),
                    Args.lng(hw, "segment_base_offset", -1L),
                    Args.int32(hw, "relative_position_in_segment", -1L));
                return maybeIncrementHighWatermark(meta).map(KafkaLogBase::metadata).orElse(null);
            }
            case "maybe_increment_log_start_offset":
                return maybeIncrementLogStartOffset(Args.lng(a, "offset"));
            case "delete_old_segments": return (long) deleteOldSegments();
            case "roll": return roll(Args.optLong(a, "expected_next_offset")).baseOffset();
            case "truncate_to":
                return compaction.truncateTo(Args.lng(a, "offset"), this::truncateTo);
            case "truncate_fully_and_start_at":
                truncateFullyAndStartAt(Args.lng(a, "offset"));
                compaction.lowerCheckpoint();
                return null;
            case "flush": return flushAction(Args.optLong(a, "offset"));
            case "assign_epoch":
                assignEpoch(Args.int32(a, "epoch"), Args.lng(a, "start_offset"));
                return null;
            case "end_offset_for_epoch": {
                long[] found = endOffsetForEpoch(Args.int32(a, "epoch"));
                if (found == null) {
                    return null;
                }
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("epoch", found[0]);
                out.put("end_offset", found[1]);
                return out;
            }
            case "fetch_offset_by_timestamp":
                return fetchOffsetByTimestamp(Args.lng(a, "timestamp"))
                    .map(KafkaLogBase::timestampAndOffset).orElse(null);
            case "advance_clock": return advanceClock(Args.lng(a, "ms"));
            case "close_and_reopen":
                closeAndReopen();
                return null;
            case "clean": return compaction.clean();
            case "state": return state();
            default:
                throw new ProtocolException("UnknownActionError", "unknown action " + action);
        }
    }

    private Object advanceClock(long ms) {
        if (ms < 0) {
            throw new LogError("IllegalArgumentError", "cannot move the clock back by " + ms
                + " ms");
        }
        if (clock.milliseconds() > Long.MAX_VALUE - ms) {
            throw new LogError("IllegalArgumentError", "advancing the clock by " + ms
                + " ms passes Long.MAX");
        }
        return scheduler.advance(ms);
    }

    /**
     * flush(offset) is flushUptoOffsetExclusive; flush() flushes to the LEO including the
     * active segment. Kafka has no guard on the offset (its callers pass offsets of the log);
     * the model's precondition, an offset within [0, LEO], is checked here.
     */
    private Object flushAction(Long offset) {
        if (offset == null) {
            flush(true);
        } else {
            if (offset < 0 || offset > logEndOffset()) {
                throw new LogError("IllegalArgumentError", "flush offset " + offset
                    + " outside [0, LEO = " + logEndOffset() + "]");
            }
            flushUptoOffsetExclusive(offset);
        }
        return recoveryPoint();
    }

    /**
     * LogManager's clean shutdown and startup: flush, close, write the checkpoints (recovery
     * point; log start offset only above the first segment's base; the high watermark as the
     * replica manager keeps it), then load with lastShutdownClean and restore the high watermark.
     */
    private void closeAndReopen() throws IOException {
        long firstBase = segments().iterator().next().baseOffset();
        long lso = logStartOffset();
        long checkpointedLso = lso > firstBase ? lso : 0L;
        long hw = highWatermark();
        closeClean();
        long recovery = recoveryPointAfterClose;
        load(checkpointedLso, recovery, true);
        updateHighWatermark(hw);
    }

    /**
     * Copies the partition directory `image` (files only, with their modification times) into
     * this log's directory, which must not exist yet; the image itself is never touched.
     */
    protected void copyImage(String image) throws IOException {
        if (image == null || !new File(image).isDirectory()) {
            throw new ProtocolException("load_image: dir " + image + " is not a directory");
        }
        Files.createDirectories(dir.toPath());
        File[] files = new File(image).listFiles();
        if (files == null) {
            return;
        }
        for (File f : files) {
            if (f.isFile()) {
                Path target = dir.toPath().resolve(f.getName());
                Files.copy(f.toPath(), target,
                    java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
                target.toFile().setLastModified(f.lastModified());
                fileTimes.keepTimeOf(target.toFile());
            }
        }
    }

    /** The recovery point the last clean close reached (what LogManager checkpoints). */
    protected long recoveryPointAfterClose;

    // --- appends ---------------------------------------------------------------------------------

    private Object appendAsLeader(Map<String, Object> a) throws IOException {
        int epoch = Args.int32(a, "leader_epoch");
        long pid = Args.lng(a, "producer_id", -1L);
        short producerEpoch = int16(Args.lng(a, "producer_epoch", -1L), "producer_epoch");
        int sequence = Args.int32(a, "base_sequence", -1L);
        boolean transactional = Args.bool(a, "is_transactional", false);
        List<Object> records = Args.list(a, "records");
        ByteBuffer buffer = ByteBuffer.allocate(1024 + 2 * estimate(records));
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, RecordBatch.MAGIC_VALUE_V2,
            Compression.NONE, TimestampType.CREATE_TIME, 0L, RecordBatch.NO_TIMESTAMP, pid,
            producerEpoch, sequence, transactional, false, RecordBatch.NO_PARTITION_LEADER_EPOCH);
        for (int i = 0; i < records.size(); i++) {
            addRecord(builder, Args.asMap(records.get(i), "records[" + i + "]"), -1L);
        }
        return appendInfo(validatedAppend(builder.build(), epoch, false));
    }

    /**
     * A leader append whose record-level refusals (a keyless record in a compacted log, a
     * timestamp outside the window) are answered as the exception Kafka wraps in its
     * RecordValidationException, with the records' own messages.
     */
    private LogAppendInfo validatedAppend(MemoryRecords records, int epoch, boolean coordinator)
            throws IOException {
        try {
            return appendLeader(records, epoch, coordinator);
        } catch (RecordValidationException e) {
            StringBuilder message = new StringBuilder(e.invalidException().getMessage());
            for (ProduceResponse.RecordError r : e.recordErrors()) {
                message.append("; record ").append(r.batchIndex).append(": ").append(r.message);
            }
            throw new LogError(Errors.code(e.invalidException()), message.toString());
        }
    }

    private Object appendMarker(Map<String, Object> a) throws IOException {
        long pid = Args.lng(a, "producer_id");
        short producerEpoch = int16(Args.lng(a, "producer_epoch"), "producer_epoch");
        boolean commit = Args.bool(a, "commit", null);
        int coordinatorEpoch = Args.int32(a, "coordinator_epoch");
        int epoch = Args.int32(a, "leader_epoch");
        EndTransactionMarker marker = new EndTransactionMarker(
            commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT, coordinatorEpoch);
        MemoryRecords records = MemoryRecords.withEndTransactionMarker(0L, clock.milliseconds(),
            RecordBatch.NO_PARTITION_LEADER_EPOCH, pid, producerEpoch, marker);
        return appendInfo(validatedAppend(records, epoch, true));
    }

    private Object appendAsFollower(Map<String, Object> a) throws IOException {
        Long leaderEpoch = Args.optLong(a, "leader_epoch");
        if (leaderEpoch != null && (leaderEpoch < Integer.MIN_VALUE
                || leaderEpoch > Integer.MAX_VALUE)) {
            throw new LogError("IllegalArgumentError", "leader_epoch outside int32");
        }
        List<Object> batches = Args.list(a, "batches");
        int size = 1024;
        for (Object b : batches) {
            size += 256 + 2 * estimate(Args.list(Args.asMap(b, "batches[]"), "records"));
        }
        ByteBuffer buffer = ByteBuffer.allocate(size);
        for (int i = 0; i < batches.size(); i++) {
            Map<String, Object> b = Args.asMap(batches.get(i), "batches[" + i + "]");
            buffer = writeFollowerBatch(buffer, b);
        }
        buffer.flip();
        MemoryRecords records = MemoryRecords.readableRecords(buffer.slice());
        // Without a leader epoch the follower keeps every batch, as before the epoch filter.
        int epoch = leaderEpoch == null ? Integer.MAX_VALUE : (int) (long) leaderEpoch;
        return appendInfo(appendFollower(records, epoch));
    }

    private ByteBuffer writeFollowerBatch(ByteBuffer buffer, Map<String, Object> b) {
        long base = Args.lng(b, "base_offset");
        int leaderEpoch = Args.int32(b, "partition_leader_epoch");
        TimestampType type = "LogAppendTime".equals(Args.str(b, "timestamp_type", "CreateTime"))
            ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
        long appendTime = Args.lng(b, "log_append_time", -1L);
        long pid = Args.lng(b, "producer_id", -1L);
        short producerEpoch = int16(Args.lng(b, "producer_epoch", -1L), "producer_epoch");
        int sequence = Args.int32(b, "base_sequence", -1L);
        boolean transactional = Args.bool(b, "is_transactional", false);
        boolean control = Args.bool(b, "is_control", false);
        List<Object> records = Args.list(b, "records");
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, RecordBatch.MAGIC_VALUE_V2,
            Compression.NONE, type, base, appendTime, pid, producerEpoch, sequence,
            transactional || control, control, leaderEpoch);
        for (int i = 0; i < records.size(); i++) {
            Map<String, Object> r = Args.asMap(records.get(i), "records[" + i + "]");
            if (control) {
                builder.appendControlRecordWithOffset(base + i, new SimpleRecord(
                    Args.lng(r, "timestamp"), Args.bytes(r, "key"), Args.bytes(r, "value")));
            } else {
                addRecord(builder, r, base + i);
            }
        }
        builder.close();
        return builder.buffer();
    }

    private static void addRecord(MemoryRecordsBuilder builder, Map<String, Object> r,
            long offset) {
        byte[] key = Args.bytes(r, "key");
        byte[] value = Args.bytes(r, "value");
        long ts = Args.lng(r, "timestamp");
        List<Object> rawHeaders = Args.list(r, "headers");
        Header[] headers = new Header[rawHeaders.size()];
        for (int i = 0; i < headers.length; i++) {
            Map<String, Object> h = Args.asMap(rawHeaders.get(i), "headers[" + i + "]");
            String name = Args.str(h, "key", null);
            headers[i] = new RecordHeader(utf8Strict(name), Args.bytes(h, "value"));
        }
        if (offset < 0) {
            builder.append(ts, key, value, headers);
        } else {
            builder.appendWithOffset(offset, ts, key, value, headers);
        }
    }

    /** A header key as Kafka's encoder would write it; a lone surrogate cannot be encoded. */
    private static String utf8Strict(String key) {
        try {
            StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).encode(
                    java.nio.CharBuffer.wrap(key));
        } catch (CharacterCodingException e) {
            throw new LogError("IllegalArgumentError", "header key is not encodable as UTF-8");
        }
        return key;
    }

    private static int estimate(List<Object> records) {
        int total = 0;
        for (Object o : records) {
            Map<String, Object> r = Args.asMap(o, "record");
            total += 64 + textLength(r.get("key")) + textLength(r.get("value"));
            Object headers = r.get("headers");
            if (headers instanceof List) {
                for (Object h : (List<?>) headers) {
                    if (h instanceof Map) {
                        total += 16 + textLength(((Map<?, ?>) h).get("key")) * 3
                            + textLength(((Map<?, ?>) h).get("value"));
                    }
                }
            }
        }
        return total;
    }

    private static int textLength(Object value) {
        return value instanceof String ? ((String) value).length() : 0;
    }

    private static short int16(long value, String name) {
        if (value < Short.MIN_VALUE || value > Short.MAX_VALUE) {
            throw new LogError("IllegalArgumentError", name + " " + value + " outside int16");
        }
        return (short) value;
    }

    private Map<String, Object> appendInfo(LogAppendInfo info) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("first_offset", info.firstOffset());
        out.put("last_offset", info.lastOffset());
        out.put("max_timestamp", info.maxTimestamp());
        out.put("offset_of_max_timestamp", offsetOfMaxTimestamp(info));
        out.put("log_append_time", info.logAppendTime());
        out.put("valid_bytes", (long) info.validBytes());
        out.put("record_count", info.numMessages());
        return out;
    }

    // --- reads ------------------------------------------------------------------------------------

    private Object readAction(Map<String, Object> a) throws IOException {
        long start = Args.lng(a, "start_offset");
        long maxBytes = Args.lng(a, "max_bytes");
        if (maxBytes < Integer.MIN_VALUE || maxBytes > Integer.MAX_VALUE) {
            throw new LogError("IllegalArgumentError", "max_bytes " + maxBytes + " outside int32");
        }
        String isolation = Args.str(a, "isolation", null);
        if (!List.of("log_end", "high_watermark", "txn_committed").contains(isolation)) {
            throw new ProtocolException("WireFormatError", "isolation: unknown " + isolation);
        }
        FetchDataInfo info = read(start, (int) maxBytes, isolation,
            Args.bool(a, "min_one_message", null));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("fetch_offset_metadata", metadata(info.fetchOffsetMetadata));
        out.put("size_in_bytes", (long) info.records.sizeInBytes());
        out.put("batches", batchViews(info.records));
        out.put("first_entry_incomplete", info.firstEntryIncomplete);
        if ("txn_committed".equals(isolation) && info.abortedTransactions.isPresent()) {
            List<Object> aborted = new ArrayList<>();
            for (FetchResponseData.AbortedTransaction t : info.abortedTransactions.get()) {
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("producer_id", t.producerId());
                e.put("first_offset", t.firstOffset());
                aborted.add(e);
            }
            out.put("aborted_transactions", aborted);
        }
        return out;
    }

    private static List<Object> batchViews(Records records) {
        List<Object> out = new ArrayList<>();
        for (RecordBatch batch : records.batches()) {
            Map<String, Object> view = new LinkedHashMap<>();
            view.put("base_offset", batch.baseOffset());
            view.put("last_offset", batch.lastOffset());
            view.put("partition_leader_epoch", (long) batch.partitionLeaderEpoch());
            view.put("max_timestamp", batch.maxTimestamp());
            view.put("size_in_bytes", (long) batch.sizeInBytes());
            view.put("position", (long) position(batch));
            List<Object> recs = new ArrayList<>();
            List<Object> offsets = new ArrayList<>();
            boolean gapless = true;
            for (Record r : batch) {
                recs.add(record(r));
                gapless &= r.offset() == batch.baseOffset() + offsets.size();
                offsets.add(r.offset());
            }
            view.put("records", recs);
            // A cleaned batch keeps its base and last offset but only some records (CLN-47).
            if (!gapless || batch.baseOffset() + offsets.size() != batch.lastOffset() + 1) {
                view.put("record_offsets", offsets);
            }
            view.put("timestamp_type", batch.timestampType() == TimestampType.LOG_APPEND_TIME
                ? "LogAppendTime" : "CreateTime");
            if (batch.producerId() != -1L) {
                view.put("producer_id", batch.producerId());
                view.put("producer_epoch", (long) batch.producerEpoch());
                view.put("base_sequence", (long) batch.baseSequence());
            }
            if (batch.isTransactional()) {
                view.put("is_transactional", true);
            }
            if (batch.isControlBatch()) {
                view.put("is_control", true);
            }
            out.add(view);
        }
        return out;
    }

    private static int position(RecordBatch batch) {
        if (batch instanceof @records.pkg@.FileLogInputStream.FileChannelRecordBatch) {
            return ((@records.pkg@.FileLogInputStream.FileChannelRecordBatch) batch).position();
        }
        return -1;
    }

    private static Map<String, Object> record(Record r) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("key", r.hasKey() ? bytesOf(r.key()) : null);
        out.put("value", r.hasValue() ? bytesOf(r.value()) : null);
        out.put("timestamp", r.timestamp());
        List<Object> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            Map<String, Object> hv = new LinkedHashMap<>();
            hv.put("key", h.key());
            hv.put("value", h.value());
            headers.add(hv);
        }
        out.put("headers", headers);
        return out;
    }

    private static byte[] bytesOf(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] out = new byte[copy.remaining()];
        copy.get(out);
        return out;
    }

    static Map<String, Object> metadata(LogOffsetMetadata m) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("message_offset", m.messageOffset);
        out.put("segment_base_offset", m.segmentBaseOffset);
        out.put("relative_position_in_segment", (long) m.relativePositionInSegment);
        return out;
    }

    static Map<String, Object> timestampAndOffset(FileRecords.TimestampAndOffset t) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("timestamp", t.timestamp);
        out.put("offset", t.offset);
        out.put("leader_epoch", t.leaderEpoch.map(Integer::longValue).orElse(null));
        return out;
    }

    // --- state ------------------------------------------------------------------------------------

    protected Map<String, Object> state() throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("log_start_offset", logStartOffset());
        out.put("high_watermark", highWatermark());
        out.put("log_end_offset", logEndOffset());
        out.put("recovery_point", recoveryPoint());
        List<Object> segs = new ArrayList<>();
        for (LogSegment s : segments()) {
            segs.add(segmentView(s));
        }
        out.put("segments", segs);
        List<Object> epochs = new ArrayList<>();
        LeaderEpochFileCache cache = epochCache();
        if (cache != null) {
            for (EpochEntry e : cache.epochEntries()) {
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("epoch", (long) e.epoch@acc@);
                entry.put("start_offset", e.startOffset@acc@);
                epochs.add(entry);
            }
        }
        out.put("epoch_entries", epochs);
        out.put("pending_deletions", pendingDeletions());
        if (Generation.FEATURES.contains("producer_state")) {
            out.put("producers", producers());
            out.put("producer_snapshots", snapshotOffsets());
        }
        if (Generation.FEATURES.contains("transactions")) {
            out.put("last_stable_offset", lastStableOffset());
            out.put("aborted_txns", abortedTxns());
        }
        if (Generation.FEATURES.contains("clean") && compacted()) {
            out.put("cleaner_checkpoint", compaction.checkpoint());
        }
        return out;
    }

    private static Map<String, Object> segmentView(LogSegment s) throws IOException {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("base_offset", s.baseOffset());
        view.put("size_in_bytes", (long) s.size());
        view.put("next_offset", s.readNextOffset());
        List<Object> offsets = new ArrayList<>();
        OffsetIndex oi = s.offsetIndex();
        for (int i = 0; i < oi.entries(); i++) {
            OffsetPosition p = oi.entry(i);
            offsets.add(List.of(p.indexKey(), p.indexValue()));
        }
        view.put("offset_index", offsets);
        List<Object> times = new ArrayList<>();
        TimeIndex ti = s.timeIndex();
        for (int i = 0; i < ti.entries(); i++) {
            TimestampOffset t = ti.entry(i);
            times.add(List.of(t.indexKey(), t.indexValue()));
        }
        view.put("time_index", times);
        return view;
    }

    /** Every live segment's `.txnindex` entries, in segment order (the class of an entry
     * moved between releases; its accessors did not). */
    private List<Object> abortedTxns() {
        List<Object> out = new ArrayList<>();
        for (LogSegment s : segments()) {
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
        File[] files = dir.listFiles();
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

    private List<Object> snapshotOffsets() {
        TreeSet<Long> offsets = new TreeSet<>();
        File[] files = dir.listFiles();
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

    private List<Object> producers() {
        List<Object> out = new ArrayList<>();
        List<Map.Entry<Long, ProducerStateEntry>> entries =
            new ArrayList<>(producerStateManager().activeProducers().entrySet());
        entries.sort(Map.Entry.comparingByKey());
        for (Map.Entry<Long, ProducerStateEntry> e : entries) {
            ProducerStateEntry p = e.getValue();
            Map<String, Object> view = new LinkedHashMap<>();
            view.put("producer_id", e.getKey());
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
            out.add(view);
        }
        return out;
    }

    // --- lifecycle --------------------------------------------------------------------------------

    @Override
    public void close() {
        try {
            closeClean();
        } catch (Throwable e) {
            e.printStackTrace(System.err);
        }
        compaction.close();
        scheduler.shutdown();
        deleteTree(root);
    }

    private static void deleteTree(Path path) {
        try (Stream<Path> walk = Files.walk(path)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            e.printStackTrace(System.err);
        }
    }
}
