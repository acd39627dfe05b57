package kafkalog.adapter;

import @records.pkg@.FileRecords;
import @records.pkg@.MemoryRecords;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.server.common.OffsetAndEpoch;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.storage.log.UnexpectedAppendOffsetException;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;
import org.apache.kafka.storage.internals.log.LogOffsetsListener;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogStartOffsetIncrementReason;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/** UnifiedLog.create and the Java method names of Kafka 4.1+. */
final class JavaUnifiedLog extends KafkaLogBase {
    private final BrokerTopicStats stats = new BrokerTopicStats();
    private UnifiedLog log;

    JavaUnifiedLog(Map<String, Object> config, long nowMs, long logStartOffset)
            throws IOException {
        super(config, nowMs, true);
        if (logStartOffset < 0) {
            throw new LogError("IllegalArgumentError", "negative log start offset "
                + logStartOffset);
        }
        load(logStartOffset, logStartOffset, true);
    }

    /** A copy of the image `image` loaded as a broker's startup does (KafkaLogBase.loadImage). */
    JavaUnifiedLog(Map<String, Object> config, long nowMs, String image, long recoveryPoint,
            long logStartOffset, long highWatermark, boolean clean, Long cleanerCheckpoint)
            throws IOException {
        super(config, nowMs, true);
        try {
            loadImage(image, recoveryPoint, logStartOffset, highWatermark, clean,
                cleanerCheckpoint);
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    @Override
    protected void load(long logStartOffset, long recoveryPoint, boolean clean)
            throws IOException {
        log = UnifiedLog.create(dir, logConfig, logStartOffset, recoveryPoint, scheduler, stats,
            clock, MAX_TRANSACTION_TIMEOUT_MS,
            new ProducerStateManagerConfig(producerIdExpirationMs, false),
            producerIdExpirationCheckIntervalMs, new LogDirFailureChannel(10), clean,
            Optional.empty(), new ConcurrentHashMap<>(), false,
            LogOffsetsListener.NO_OP_OFFSETS_LISTENER);
    }

    @Override
    protected LogAppendInfo appendLeader(MemoryRecords records, int leaderEpoch,
            boolean coordinator) throws IOException {
        if (!coordinator) {
            return log.appendAsLeader(records, leaderEpoch, AppendOrigin.CLIENT);
        }
        return log.appendAsLeader(records, leaderEpoch, AppendOrigin.COORDINATOR,
            RequestLocal.noCaching(), VerificationGuard.SENTINEL@marker.tv@);
    }

    @Override
    protected LogAppendInfo appendFollower(MemoryRecords records, int leaderEpoch) {
        try {
            return log.appendAsFollower(records, leaderEpoch);
        } catch (UnexpectedAppendOffsetException e) {
            throw new LogError("UnexpectedAppendOffsetError", e.getMessage(),
                Map.of("first_offset", e.firstOffset, "last_offset", e.lastOffset));
        }
    }

    @Override
    protected FetchDataInfo read(long start, int maxBytes, String isolation,
            boolean minOneMessage) throws IOException {
        FetchIsolation fi = "log_end".equals(isolation) ? FetchIsolation.LOG_END
            : "high_watermark".equals(isolation) ? FetchIsolation.HIGH_WATERMARK
            : FetchIsolation.TXN_COMMITTED;
        return log.read(start, maxBytes, fi, minOneMessage);
    }

    @Override
    protected long updateHighWatermark(long offset) throws IOException {
        return log.updateHighWatermark(offset);
    }

    @Override
    protected Optional<LogOffsetMetadata> maybeIncrementHighWatermark(LogOffsetMetadata hw)
            throws IOException {
        return log.maybeIncrementHighWatermark(hw);
    }

    @Override
    protected boolean maybeIncrementLogStartOffset(long offset) {
        return log.maybeIncrementLogStartOffset(offset,
            LogStartOffsetIncrementReason.ClientRecordDeletion);
    }

    @Override
    protected int deleteOldSegments() throws IOException {
        return log.deleteOldSegments();
    }

    @Override
    protected LogSegment roll(Long expectedNextOffset) throws IOException {
        return log.roll(Optional.ofNullable(expectedNextOffset));
    }

    @Override
    protected boolean truncateTo(long offset) {
        return log.truncateTo(offset);
    }

    @Override
    protected void truncateFullyAndStartAt(long offset) {
        log.truncateFullyAndStartAt(offset, Optional.empty());
    }

    @Override
    protected void flush(boolean forceActive) {
        log.flush(forceActive);
    }

    @Override
    protected void flushUptoOffsetExclusive(long offset) {
        log.flushUptoOffsetExclusive(offset);
    }

    @Override
    protected void assignEpoch(int epoch, long startOffset) {
        log.assignEpochStartOffset(epoch, startOffset);
    }

    @Override
    protected long[] endOffsetForEpoch(int epoch) {
        Optional<OffsetAndEpoch> found = log.endOffsetForEpoch(epoch);
        return found.map(f -> new long[] {f.epoch(), f.offset()}).orElse(null);
    }

    @Override
    protected Optional<FileRecords.TimestampAndOffset> fetchOffsetByTimestamp(long ts) {
        return log.fetchOffsetByTimestamp(ts, Optional.empty()).timestampAndOffsetOpt();
    }

    @Override
    protected void closeClean() {
        if (log == null) {
            return;
        }
        UnifiedLog closing = log;
        log = null;
        // LogManager's shutdown order; from 4.4 segments no longer trim their indexes on
        // close, LogManager prepares the active segment first.
        @prepare.close@
        closing.flush(true);
        recoveryPointAfterClose = closing.recoveryPoint();
        closing.close();
        closing.removeLogMetrics();
    }

    @Override
    protected void closeHandlers() {
        if (log != null) {
            log.@close.handlers@();
            log.removeLogMetrics();
            log = null;
        }
    }

    @Override
    protected long logStartOffset() {
        return log.logStartOffset();
    }

    @Override
    protected long highWatermark() {
        return log.highWatermark();
    }

    @Override
    protected long logEndOffset() {
        return log.logEndOffset();
    }

    @Override
    protected long recoveryPoint() {
        return log.recoveryPoint();
    }

    @Override
    protected long lastStableOffset() {
        return log.lastStableOffset();
    }

    @Override
    protected Iterable<LogSegment> segments() {
        return new ArrayList<>(log.logSegments());
    }

    @Override
    protected LogCleaning newCleaning() throws Exception {
        return new KafkaCleaner(dir.getParentFile(), clock, () -> log);
    }

    @Override
    protected LeaderEpochFileCache epochCache() {
        return log.leaderEpochCache();
    }

    @Override
    protected ProducerStateManager producerStateManager() {
        return log.producerStateManager();
    }

    /** This release's LogAppendInfo has no offset of the max timestamp (KAFKA-806). */
    @Override
    protected long offsetOfMaxTimestamp(LogAppendInfo info) {
        return -1L;
    }
}
