package kafkalog.adapter;

import java.io.File;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Supplier;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.CleanerStats;
import org.apache.kafka.storage.internals.log.LogCleanerManager;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.PreCleanStats;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;

/**
 * Kafka 4.1+'s Java cleaner (org.apache.kafka.storage.internals.log) over the adapter's log:
 * a LogCleanerManager whose log pool holds this one log and whose log directory is the log's
 * parent (its `cleaner-offset-checkpoint` lives there, as a broker's does), and one Cleaner
 * built as LogCleaner.CleanerThread builds it with the broker's defaults and one thread.
 */
final class KafkaCleaner implements LogCleaning {
    private final File dataDir;
    private final Time time;
    private final Supplier<UnifiedLog> current;
    private final ConcurrentMap<TopicPartition, UnifiedLog> logs = new ConcurrentHashMap<>();
    private final LogCleanerManager manager;
    private final Cleaner cleaner;

    KafkaCleaner(File dataDir, Time time, Supplier<UnifiedLog> current)
            throws NoSuchAlgorithmException {
        this.dataDir = dataDir;
        this.time = time;
        this.current = current;
        sync();
        this.manager = new LogCleanerManager(List.of(dataDir), logs, new LogDirFailureChannel(10));
        this.cleaner = new Cleaner(0, CleanerSettings.offsetMap(), CleanerSettings.IO_BUFFER_SIZE,
            CleanerSettings.MAX_IO_BUFFER_SIZE, CleanerSettings.LOAD_FACTOR,
            new Throttler(Double.MAX_VALUE, 300L, "cleaner-io", "bytes", time), time, tp -> { });
    }

    /** The pool holds the log object open now (a reopen replaces it). */
    private TopicPartition sync() {
        UnifiedLog log = current.get();
        TopicPartition tp = log.topicPartition();
        logs.put(tp, log);
        return tp;
    }

    @Override
    public long[] clean() throws Exception {
        sync();
        Optional<LogToClean> grabbed = manager.grabFilthiestCompactedLog(time, new PreCleanStats());
        if (grabbed.isEmpty()) {
            return null;
        }
        LogToClean cleanable = grabbed.get();
        long endOffset = cleanable.firstDirtyOffset();
        try {
            Map.Entry<Long, CleanerStats> done = cleaner.doClean(cleanable, time.milliseconds());
            endOffset = done.getKey();
        } finally {
            manager.doneCleaning(cleanable.topicPartition(), cleanable.log().parentDirFile(),
                endOffset);
        }
        return new long[] {cleanable.firstDirtyOffset(), endOffset,
            cleanable.firstUncleanableOffset()};
    }

    @Override
    public Long checkpoint() {
        TopicPartition tp = sync();
        return manager.allCleanerCheckpoints().get(tp);
    }

    @Override
    public void truncated(long activeBaseOffset) {
        TopicPartition tp = sync();
        manager.maybeTruncateCheckpoint(dataDir, tp, activeBaseOffset);
    }

    @Override
    public void close() {
        try {
            manager.removeMetrics();
        } catch (Throwable e) {
            e.printStackTrace(System.err);
        }
    }
}
