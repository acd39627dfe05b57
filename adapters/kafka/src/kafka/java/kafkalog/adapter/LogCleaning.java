package kafkalog.adapter;

/**
 * Kafka's log cleaner over the adapter's one log (specs/adapter-protocol.md, "Compaction"):
 * each generation's KafkaCleaner drives Kafka's own LogCleanerManager (the checkpoint file in
 * the log's parent directory, the selection) and Cleaner (the pass) on it.
 */
interface LogCleaning {
    /**
     * One pass as a cleaner thread runs it (LogCleaner.CleanerThread.cleanFilthiestLog and
     * cleanLog): {first dirty offset, end offset, first uncleanable offset} of the log
     * `grabFilthiestCompactedLog` selected, or null when it selects none.
     */
    long[] clean() throws Exception;

    /** The log's `cleaner-offset-checkpoint` entry, or null without one. */
    Long checkpoint();

    /** LogManager's truncation path: `maybeTruncateCheckpoint` to the new active base. */
    void truncated(long activeBaseOffset);

    /** Drops the manager's metrics; never throws. */
    void close();
}
