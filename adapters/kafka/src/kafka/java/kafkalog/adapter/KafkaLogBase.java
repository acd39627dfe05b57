package kafkalog.adapter;

import @records.pkg@.FileRecords;
import @records.pkg@.MemoryRecords;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.RecordValidationException;

/**
 * What every Kafka release shares: the protocol's actions dispatched to Kafka's methods, with
 * the model's preconditions Kafka does not check, over a log in a fresh temporary directory.
 * The requests' records become Kafka's batches in RecordBatches, Kafka's answers the protocol's
 * values in Answers, and the `state` answer is read in StateView. Each release's subclass
 * (class Generation's log) makes the calls whose signatures differ between releases.
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
    private final StateView stateView;

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
        this.stateView = new StateView(this, compaction);
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
            case "maybe_increment_high_watermark": return maybeIncrementHighWatermarkAction(a);
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
            case "end_offset_for_epoch": return endOffsetForEpochAction(Args.int32(a, "epoch"));
            case "fetch_offset_by_timestamp":
                return fetchOffsetByTimestamp(Args.lng(a, "timestamp"))
                    .map(Answers::timestampAndOffset).orElse(null);
            case "advance_clock": return advanceClock(Args.lng(a, "ms"));
            case "close_and_reopen":
                closeAndReopen();
                return null;
            case "clean": return compaction.clean();
            case "state": return stateView.read();
            default:
                throw new ProtocolException("UnknownActionError", "unknown action " + action);
        }
    }

    private Object maybeIncrementHighWatermarkAction(Map<String, Object> a) throws IOException {
        Map<String, Object> hw = Args.map(a, "hw");
        LogOffsetMetadata meta = new LogOffsetMetadata(Args.lng(hw, "message_offset"),
            Args.lng(hw, "segment_base_offset", -1L),
            Args.int32(hw, "relative_position_in_segment", -1L));
        return maybeIncrementHighWatermark(meta).map(Answers::offsetMetadata).orElse(null);
    }

    private Object endOffsetForEpochAction(int epoch) {
        long[] found = endOffsetForEpoch(epoch);
        if (found == null) {
            return null;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("epoch", found[0]);
        out.put("end_offset", found[1]);
        return out;
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
     * A crash image loaded as a broker's startup does: the partition directory copied, the image
     * root's `cleaner-offset-checkpoint` entry (null: none) written at this log's root, where
     * Kafka's LogCleanerManager reads it, LogManager.loadLog with the checkpointed recovery point
     * and log start offset, Partition's high watermark from its checkpoint, then the log cleaner
     * over the loaded log (LogManager.startup starts it once the logs are loaded), so `state`
     * answers the entry Kafka's cleaner holds.
     */
    protected final void loadImage(String image, long recoveryPoint, long logStartOffset,
            long highWatermark, boolean clean, Long cleanerCheckpoint) throws IOException {
        copyImage(image);
        if (cleanerCheckpoint != null) {
            writeCleanerCheckpoint(cleanerCheckpoint);
        }
        load(logStartOffset, recoveryPoint, clean);
        updateHighWatermark(highWatermark);
        if (cleanerCheckpoint != null) {
            compaction.start();
        }
    }

    /**
     * The root's `cleaner-offset-checkpoint` holding this log's one entry, in the format of
     * Kafka's OffsetCheckpointFile (version 0, the entry count, `topic partition offset`). The
     * entry is written as the image has it, whatever its value: LogCleanerManager takes the
     * file as read and judges an entry only when it selects a log (cleanableOffsets).
     */
    private void writeCleanerCheckpoint(long offset) throws IOException {
        String name = dir.getName();
        int dash = name.lastIndexOf('-');
        String entry = name.substring(0, dash) + " " + name.substring(dash + 1) + " " + offset;
        Files.writeString(root.resolve("cleaner-offset-checkpoint"), "0\n1\n" + entry + "\n");
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

    // --- appends and reads -----------------------------------------------------------------------

    private Object appendAsLeader(Map<String, Object> a) throws IOException {
        int epoch = Args.int32(a, "leader_epoch");
        MemoryRecords batch = RecordBatches.leaderBatch(a);
        return appendInfo(validatedAppend(batch, epoch, false));
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
        short producerEpoch = RecordBatches.int16(Args.lng(a, "producer_epoch"),
            "producer_epoch");
        boolean commit = Args.bool(a, "commit", null);
        int coordinatorEpoch = Args.int32(a, "coordinator_epoch");
        int epoch = Args.int32(a, "leader_epoch");
        MemoryRecords records = RecordBatches.endTransactionMarker(pid, producerEpoch, commit,
            coordinatorEpoch, clock.milliseconds());
        return appendInfo(validatedAppend(records, epoch, true));
    }

    private Object appendAsFollower(Map<String, Object> a) throws IOException {
        Long leaderEpoch = Args.optLong(a, "leader_epoch");
        if (leaderEpoch != null && (leaderEpoch < Integer.MIN_VALUE
                || leaderEpoch > Integer.MAX_VALUE)) {
            throw new LogError("IllegalArgumentError", "leader_epoch outside int32");
        }
        MemoryRecords records = RecordBatches.followerRecords(a);
        // Without a leader epoch the follower keeps every batch, as before the epoch filter.
        int epoch = leaderEpoch == null ? Integer.MAX_VALUE : (int) (long) leaderEpoch;
        return appendInfo(appendFollower(records, epoch));
    }

    private Map<String, Object> appendInfo(LogAppendInfo info) {
        return Answers.appendInfo(info, offsetOfMaxTimestamp(info));
    }

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
        return Answers.fetched(info, isolation);
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
