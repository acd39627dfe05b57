package kafkalog.adapter;

import java.security.NoSuchAlgorithmException;
import org.apache.kafka.storage.internals.log.CleanerConfig;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;

/**
 * The sizes LogCleaner.CleanerThread gives its Cleaner under the broker's defaults with one
 * cleaner thread (CleanerConfig; reference CLN-7), except the offset map: 8 MiB (349,525
 * slots, 314,572 entries at the 0.9 load factor) instead of 128 MiB, still far more keys than
 * any checker run appends, so a pass's map never fills (specs/log.md KL-CLEAN-4, KL-ALLOW-7).
 */
final class CleanerSettings {
    /** log.cleaner.io.buffer.size (512 KiB) / threads (1) / 2. */
    static final int IO_BUFFER_SIZE = CleanerConfig.LOG_CLEANER_IO_BUFFER_SIZE / 1 / 2;
    /** CleanerConfig.maxMessageSize: the broker's message.max.bytes default (1048588). */
    static final int MAX_IO_BUFFER_SIZE = 1024 * 1024 + 12;
    /** log.cleaner.io.buffer.load.factor default (0.9). */
    static final double LOAD_FACTOR = CleanerConfig.LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR;
    static final int OFFSET_MAP_BYTES = 8 * 1024 * 1024;

    /** One map for the process: every pass clears it first (buildOffsetMap), passes never
     * overlap (the adapter is single-threaded). */
    private static SkimpyOffsetMap offsetMap;

    private CleanerSettings() {
    }

    static synchronized SkimpyOffsetMap offsetMap() throws NoSuchAlgorithmException {
        if (offsetMap == null) {
            offsetMap = new SkimpyOffsetMap(OFFSET_MAP_BYTES);
        }
        return offsetMap;
    }
}
