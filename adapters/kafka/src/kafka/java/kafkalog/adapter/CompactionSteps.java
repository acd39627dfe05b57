package kafkalog.adapter;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import org.apache.kafka.storage.internals.log.LogSegment;

/**
 * The adapter's compaction steps over one log, the same for every release: the `clean`
 * action and its answer, and the cleaner checkpoint a truncation lowers as Kafka's
 * LogManager.truncateTo does. The release's KafkaCleaner (a LogCleaning) does the Kafka calls.
 */
final class CompactionSteps {
    /** Kafka's UnifiedLog.truncateTo as the release calls it. */
    interface Truncation {
        boolean truncateTo(long offset) throws IOException;
    }

    private final Callable<LogCleaning> newCleaning;
    private final Supplier<Iterable<LogSegment>> segments;
    private final SegmentFileTimes fileTimes;
    /** Made on first use, or at once over a loaded image whose root has a cleaner checkpoint:
     * a log never cleaned has no cleaner checkpoint file. */
    private LogCleaning cleaning;

    CompactionSteps(Callable<LogCleaning> newCleaning, Supplier<Iterable<LogSegment>> segments,
            SegmentFileTimes fileTimes) {
        this.newCleaning = newCleaning;
        this.segments = segments;
        this.fileTimes = fileTimes;
    }

    private LogCleaning cleaning() throws Exception {
        if (cleaning == null) {
            cleaning = newCleaning.call();
        }
        return cleaning;
    }

    /**
     * Kafka's cleaner over a loaded log whose root already holds a `cleaner-offset-checkpoint`
     * (a crash image's): its LogCleanerManager reads the entry there, for the `state` answer and
     * for a truncation's lowering, before any pass.
     */
    void start() {
        try {
            cleaning();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("Kafka's log cleaner could not be made", e);
        }
    }

    /**
     * One pass of Kafka's cleaner exactly as the `clean` action runs it (selection, doClean,
     * checkpoint), without the answer's bookkeeping: the section Bench times. {first dirty
     * offset, end offset, first uncleanable offset}, or null when the manager selects no log.
     */
    long[] cleanPass() throws Exception {
        return cleaning().clean();
    }

    /**
     * One pass of Kafka's cleaner (specs/adapter-protocol.md, `clean`): LogCleanerManager
     * selects the log or not, Cleaner.doClean cleans it, doneCleaning writes the checkpoint.
     * The cleaner gives each cleaned segment the last source segment's modification time
     * itself (Cleaner.cleanSegments, `setLastModified`), so the files' times stay as Kafka set
     * them, whether or not the pass completed.
     */
    Map<String, Object> clean() throws Exception {
        try {
            return answer();
        } finally {
            fileTimes.keepCurrentTimes();
        }
    }

    /**
     * `groups` are the bases of the segments the pass wrote: every group becomes one new
     * segment object at its first base (Cleaner.cleanSegments, replaceSegments), so they are
     * read off the log as the segments that were not there before the pass.
     */
    private Map<String, Object> answer() throws Exception {
        Set<LogSegment> before = Collections.newSetFromMap(new IdentityHashMap<>());
        for (LogSegment s : segments.get()) {
            before.add(s);
        }
        long[] pass = cleanPass();
        if (pass == null) {
            return null;
        }
        List<Object> groups = new ArrayList<>();
        for (LogSegment s : segments.get()) {
            if (!before.contains(s)) {
                groups.add(s.baseOffset());
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("first_dirty_offset", pass[0]);
        out.put("end_offset", pass[1]);
        out.put("first_uncleanable_offset", pass[2]);
        out.put("groups", groups);
        return out;
    }

    /**
     * LogManager.truncateTo: a truncation below the active segment's base (taken before it)
     * pauses the cleaner and, once the log truncated, lowers the checkpoint to the new active
     * base (maybeTruncateCleanerCheckpointToActiveSegmentBaseOffset).
     */
    boolean truncateTo(long offset, Truncation log) throws IOException {
        boolean belowActive = offset < activeBaseOffset();
        boolean truncated = log.truncateTo(offset);
        if (belowActive) {
            lowerCheckpoint();
        }
        return truncated;
    }

    /** LogManager's `maybeTruncateCheckpoint` after a truncation; a log no pass has touched
     * has no checkpoint to lower. */
    void lowerCheckpoint() {
        if (cleaning != null) {
            cleaning.truncated(activeBaseOffset());
        }
    }

    private long activeBaseOffset() {
        long base = -1L;
        for (LogSegment s : segments.get()) {
            base = s.baseOffset();
        }
        return base;
    }

    /** The log's `cleaner-offset-checkpoint` entry, or -1 without one. */
    long checkpoint() {
        Long entry = cleaning == null ? null : cleaning.checkpoint();
        return entry == null ? -1L : entry;
    }

    void close() {
        if (cleaning != null) {
            cleaning.close();
        }
    }
}
