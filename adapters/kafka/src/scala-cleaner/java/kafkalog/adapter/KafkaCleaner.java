package kafkalog.adapter;

import java.io.File;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.function.Supplier;
import kafka.log.Cleaner;
import kafka.log.CleanerStats;
import kafka.log.LogCleanerManager;
import kafka.log.LogToClean;
import kafka.log.PreCleanStats;
import kafka.log.UnifiedLog;
import kafka.utils.Pool;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.utils.Throttler;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * The Scala cleaner of kafka_2.13 (kafka.log, 3.9 and 4.0) over the adapter's log: a
 * LogCleanerManager whose log pool holds this one log and whose log directory is the log's
 * parent (its `cleaner-offset-checkpoint` lives there, as a broker's does), and one Cleaner
 * built as LogCleaner.CleanerThread builds it with the broker's defaults and one thread.
 * Both classes are `private[log]` in Scala, which the JVM sees as public.
 */
final class KafkaCleaner implements LogCleaning {
    private final File dataDir;
    private final Time time;
    private final Supplier<UnifiedLog> current;
    private final Pool<TopicPartition, UnifiedLog> logs = new Pool<>(Option.empty());
    private final LogCleanerManager manager;
    private final Cleaner cleaner;

    KafkaCleaner(File dataDir, Time time, Supplier<UnifiedLog> current)
            throws NoSuchAlgorithmException {
        this.dataDir = dataDir;
        this.time = time;
        this.current = current;
        sync();
        this.manager = new LogCleanerManager(
            CollectionConverters.asScala(List.of(dataDir)).toSeq(), logs,
            new LogDirFailureChannel(10));
        this.cleaner = new Cleaner(0, CleanerSettings.offsetMap(), CleanerSettings.IO_BUFFER_SIZE,
            CleanerSettings.MAX_IO_BUFFER_SIZE, CleanerSettings.LOAD_FACTOR,
            new Throttler(Double.MAX_VALUE, 300L, "cleaner-io", "bytes", time), time,
            tp -> BoxedUnit.UNIT);
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
        Option<LogToClean> grabbed = manager.grabFilthiestCompactedLog(time, new PreCleanStats());
        if (grabbed.isEmpty()) {
            return null;
        }
        LogToClean cleanable = grabbed.get();
        long endOffset = cleanable.firstDirtyOffset();
        try {
            Tuple2<Object, CleanerStats> done = cleaner.doClean(cleanable, time.milliseconds());
            endOffset = (Long) done._1();
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
        Option<Object> entry = manager.allCleanerCheckpoints().get(tp);
        return entry.isDefined() ? (Long) entry.get() : null;
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
