package kafkalog.adapter;

import java.io.IOException;
import java.util.Map;
import java.util.Set;

/** Kafka 4.1 and later: the Java UnifiedLog of the kafka-storage module. */
public final class Generation {
    public static final String IMPLEMENTATION = "kafka-unifiedlog @kafka.version@";
    public static final Set<String> FEATURES = Set.of("core", "follower_append", "hw_metadata",
        "leader_epochs", "timestamps", "reopen", "producer_state", "transactions", "clean");

    private Generation() {
    }

    public static PartitionLog open(Map<String, Object> config, long nowMs, long logStartOffset)
            throws IOException {
        return new JavaUnifiedLog(config, nowMs, logStartOffset);
    }

    /** The log Kafka's LogLoader recovers from a copy of the partition directory `dir`, with
     * the log cleaner started from `cleanerCheckpoint`, the image root's
     * `cleaner-offset-checkpoint` entry (null: none) (specs/adapter-protocol.md, `load_image`). */
    public static PartitionLog loadImage(Map<String, Object> config, long nowMs, String dir,
            long recoveryPoint, long logStartOffset, long highWatermark, boolean clean,
            Long cleanerCheckpoint) throws IOException {
        return new JavaUnifiedLog(config, nowMs, dir, recoveryPoint, logStartOffset, highWatermark,
            clean, cleanerCheckpoint);
    }
}
