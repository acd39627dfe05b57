package kafkalog.adapter;

import java.io.File;
import java.util.HashMap;
import java.util.Map;

/**
 * Kafka takes a segment's last-modified time from its `.log` file (LogSegment.lastModified,
 * used by time retention when no batch has a timestamp), which the OS sets from the wall clock
 * on every write. The adapter keeps that file time on the model's clock instead, remembering
 * the time it last gave each file so that a write shows as a changed time.
 */
final class SegmentFileTimes {
    private final File dir;
    private final ManualClock clock;
    /** Modification times this adapter gave the segment files, by file name. */
    private final Map<String, Long> given = new HashMap<>();

    SegmentFileTimes(File dir, ManualClock clock) {
        this.dir = dir;
        this.clock = clock;
    }

    /**
     * A `.log` file whose time is not the one last given here was written by this action, and
     * gets the clock's reading, as an OS on that clock would have given it.
     */
    void stampWrites() {
        File[] files = dir.listFiles();
        if (files == null) {
            return;
        }
        long now = clock.milliseconds();
        for (File f : files) {
            if (!f.getName().endsWith(".log")) {
                continue;
            }
            Long time = given.get(f.getName());
            if (time == null || f.lastModified() != time) {
                if (f.setLastModified(now)) {
                    given.put(f.getName(), f.lastModified());
                }
            }
        }
    }

    /** Every `.log` file's current time is taken as given, because Kafka itself set it. */
    void keepCurrentTimes() {
        File[] files = dir.listFiles();
        if (files == null) {
            return;
        }
        for (File f : files) {
            if (f.getName().endsWith(".log")) {
                given.put(f.getName(), f.lastModified());
            }
        }
    }

    /** A file copied in with its own time keeps that time. */
    void keepTimeOf(File copied) {
        given.put(copied.getName(), copied.lastModified());
    }
}
