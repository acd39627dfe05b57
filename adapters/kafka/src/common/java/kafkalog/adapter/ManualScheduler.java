package kafkalog.adapter;

import java.util.Comparator;
import java.util.PriorityQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.server.util.Scheduler;

/**
 * Kafka's Scheduler on the manual clock, run on the calling thread. A task with no delay runs
 * at once, inside the call that scheduled it (the roll's "flush-log" therefore completes within
 * the roll, one of the two outcomes the model allows, KL-ALLOW-3); a delayed task runs when
 * advance_clock reaches its due time, with the clock set to that due time, in (due, order of
 * scheduling) order. Cancelled tasks never run.
 */
public final class ManualScheduler implements Scheduler {
    private final ManualClock clock;
    private final PriorityQueue<Task> queue = new PriorityQueue<>(
        Comparator.comparingLong((Task t) -> t.dueMs).thenComparingLong(t -> t.order));
    private long sequence;
    private boolean running;

    public ManualScheduler(ManualClock clock) {
        this.clock = clock;
        clock.attach(this);
    }

    @Override
    public void startup() {
    }

    @Override
    public void shutdown() {
        queue.clear();
    }

    @Override
    public void resizeThreadPool(int size) {
    }

    @Override
    public ScheduledFuture<?> schedule(String name, Runnable runnable, long delayMs, long periodMs) {
        Task task = new Task(name, runnable, clock.milliseconds() + Math.max(0, delayMs), periodMs,
            sequence++);
        queue.add(task);
        runDue(clock.milliseconds());
        return task;
    }

    /** Moves the clock by `ms`, running every task that falls due on the way. */
    public long advance(long ms) {
        long target = clock.milliseconds() + ms;
        runDue(target);
        clock.set(target);
        return target;
    }

    private void runDue(long until) {
        if (running) {
            return; // the outer loop picks up what a running task schedules
        }
        running = true;
        try {
            while (!queue.isEmpty() && queue.peek().dueMs <= until) {
                Task task = queue.poll();
                if (task.dueMs > clock.milliseconds()) {
                    clock.set(task.dueMs);
                }
                task.runnable.run();
                if (task.periodMs > 0 && !task.cancelled) {
                    task.dueMs += task.periodMs;
                    task.order = sequence++;
                    queue.add(task);
                } else {
                    task.done = true;
                }
            }
        } finally {
            running = false;
        }
    }

    private final class Task implements ScheduledFuture<Object> {
        final String name;
        final Runnable runnable;
        final long periodMs;
        long dueMs;
        long order;
        boolean cancelled;
        boolean done;

        Task(String name, Runnable runnable, long dueMs, long periodMs, long order) {
            this.name = name;
            this.runnable = runnable;
            this.dueMs = dueMs;
            this.periodMs = periodMs;
            this.order = order;
        }

        @Override
        public boolean cancel(boolean mayInterrupt) {
            boolean removed = queue.remove(this);
            cancelled = true;
            return removed;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return done || cancelled;
        }

        @Override
        public Object get() {
            return null;
        }

        @Override
        public Object get(long timeout, TimeUnit unit) {
            return null;
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(dueMs - clock.milliseconds(), TimeUnit.MILLISECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(getDelay(TimeUnit.MILLISECONDS),
                other.getDelay(TimeUnit.MILLISECONDS));
        }

        @Override
        public String toString() {
            return name + "@" + dueMs;
        }
    }
}
