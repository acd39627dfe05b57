package kafkalog.adapter;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The performance peer of `kafkalog bench` (benchmarks/kafka_peer.py): Kafka's own log timed on
 * the workloads kafkalog's rows use, one repetition per command so that the Python side can
 * interleave Kafka's repetitions with kafkalog's (benchmarks/core.py `paired`).
 *
 * <p>Not the adapter protocol: each stdin line is one JSON command naming a whole workload
 * repetition, e.g. {"op": "leader", "chunk": "/tmp/.../leader.bin", "calls": 256, "config": {}},
 * and each answer is one stdout line {"ok": {"wall_ns": ..., "cpu_ns": ..., ...}} or
 * {"error": "..."}. Set-up (building buffers, copying an image) happens on a workload's first
 * command and is never timed; CPU time is the whole JVM's (GC and JIT threads included), the
 * same view as the Python side's process time.
 */
public final class Bench {
    private static final Path TASKS = Path.of("/proc/self/task");
    private static final Path THREAD_SELF = Path.of("/proc/thread-self");
    private final BenchWorkloads workloads = new BenchWorkloads();

    private Bench() {
    }

    /** What one measured section took: wall clock and the JVM process's CPU time. */
    interface Section {
        Map<String, Object> run() throws Exception;
    }

    public static void main(String[] argv) throws Exception {
        PrintStream answers = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err); // stdout carries answers only, whatever a library prints
        Bench bench = new Bench();
        BufferedReader in = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.isBlank()) {
                    answers.println(Json.write(bench.answer(line)));
                }
            }
        } finally {
            bench.workloads.close();
        }
        System.exit(0);
    }

    private Map<String, Object> answer(String line) {
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            Map<String, Object> command = Args.asMap(Json.parse(line), "command");
            out.put("ok", workloads.run(Args.str(command, "op", null), command));
        } catch (Exception | AssertionError e) {
            e.printStackTrace(System.err);
            out.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        return out;
    }

    /** Times `section` (its own result map gains wall_ns and cpu_ns). */
    static Map<String, Object> timed(Section section) throws Exception {
        long cpu = processCpuNanos();
        long wall = System.nanoTime();
        Map<String, Object> result = section.run();
        long wallNs = System.nanoTime() - wall;
        long cpuNs = processCpuNanos() - cpu;
        Map<String, Object> out = new LinkedHashMap<>(result);
        out.put("wall_ns", wallNs);
        out.put("cpu_ns", cpuNs);
        return out;
    }

    /**
     * CPU nanoseconds of every thread of this JVM (GC and JIT threads too): the other threads
     * from Linux's schedstat (nanoseconds, brought up to date whenever they are switched out),
     * this thread from its CPU clock, which is exact even mid-slice. The MXBean's process CPU
     * time moves in 10 ms clock ticks, too coarse for a short repetition: only a fallback.
     */
    private static long processCpuNanos() {
        long self = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
        try (Stream<Path> tasks = Files.list(TASKS)) {
            Path current = Files.readSymbolicLink(THREAD_SELF).getFileName();
            long sum = self;
            for (Path task : (Iterable<Path>) tasks::iterator) {
                if (!task.getFileName().equals(current)) {
                    sum += runNanos(task.resolve("schedstat"));
                }
            }
            return sum;
        } catch (IOException | UncheckedIOException e) {
            return ((com.sun.management.OperatingSystemMXBean)
                ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        }
    }

    private static long runNanos(Path schedstat) throws IOException {
        try {
            String text = Files.readString(schedstat);
            return Long.parseLong(text.substring(0, text.indexOf(' ')));
        } catch (NoSuchFileException e) {
            return 0; // the thread ended between the listing and the read
        }
    }
}
