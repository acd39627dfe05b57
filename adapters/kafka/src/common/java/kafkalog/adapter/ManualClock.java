package kafkalog.adapter;

import java.util.function.Supplier;
import org.apache.kafka.common.utils.Time;

/**
 * Kafka's Time read from the model's clock: it moves only when the checker sends
 * advance_clock (or when Kafka itself sleeps), so every timestamp Kafka stamps is the one the
 * model expects and nothing depends on the wall clock.
 */
public final class ManualClock implements Time {
    private long nowMs;
    private ManualScheduler scheduler;

    public ManualClock(long nowMs) {
        this.nowMs = nowMs;
    }

    void attach(ManualScheduler scheduler) {
        this.scheduler = scheduler;
    }

    void set(long ms) {
        nowMs = ms;
    }

    @Override
    public long milliseconds() {
        return nowMs;
    }

    @Override
    public long nanoseconds() {
        return nowMs * 1_000_000L;
    }

    /** Kafka sleeping moves the clock, and runs what falls due, as advance_clock would. */
    @Override
    public void sleep(long ms) {
        if (scheduler != null) {
            scheduler.advance(ms);
        } else {
            nowMs += ms;
        }
    }

    /** Nothing else runs concurrently, so a condition that is false now stays false: time out. */
    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs)
            throws InterruptedException {
        if (!condition.get()) {
            throw new org.apache.kafka.common.errors.TimeoutException(
                "condition not met before the deadline " + deadlineMs + " on a manual clock");
        }
    }
}
