package kafkalog.adapter;

import @records.pkg@.FileRecords;
import @records.pkg@.MemoryRecords;
import @records.pkg@.RecordBatch;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogSegment;

/**
 * The repetitions Bench times, each the Kafka side of one kafkalog bench row, through the same
 * factory code as the adapter (Generation, KafkaLogBase: manual clock and scheduler, the
 * model's config under Kafka's names):
 *
 * <ul>
 * <li>leader: appendAsLeader (origin CLIENT, epoch 0) of `calls` copies of one chunk into a
 *     fresh log. Kafka validates and stamps offsets in place, so every call gets its own buffer,
 *     refilled from the chunk's bytes before each repetition (untimed).
 * <li>follower: appendAsFollower (epoch 0) of the chunks of a file, each `chunk_bytes` long.
 * <li>read: a copy of kafkalog's log `image`, recovered once, consumed from offset 0 to the
 *     high watermark in `max_bytes` reads at HIGH_WATERMARK isolation; every whole batch of
 *     each read is CRC-checked (readInto + ensureValid, as a consumer checks a fetch).
 * <li>lookup: LogSegment.translateOffset of every target on kafkalog's full-index segment.
 * <li>recover: a copy of kafkalog's crashed log loaded with lastShutdownClean false and
 *     recovery point 0 (LogLoader recovers every segment), then its handles dropped again.
 * <li>clean: a fresh copy of kafkalog's closed, never-cleaned compacted log loaded after a
 *     clean shutdown (copy and load untimed), then one pass of Kafka's own cleaner as the
 *     adapter's `clean` action runs it (KafkaCleaner: LogCleanerManager's selection,
 *     Cleaner.doClean with CleanerSettings' 8 MiB offset map, the checkpoint written), timed;
 *     the answer's records and bytes are the whole log's afterwards, counted untimed.
 * </ul>
 */
final class BenchWorkloads implements AutoCloseable {
    /** benchmarks/core.py START_MS: the clock and the records' timestamps. */
    private static final long START_MS = 1_700_000_000_000L;

    private String chunksKey;
    private ByteBuffer[] chunks;
    private ByteBuffer chunk;
    private ByteBuffer readBuffer;
    private String readImage;
    private KafkaLogBase readLog;
    private String crashedImage;
    private KafkaLogBase crashed;
    private String lookupDir;
    private LogSegment lookupSegment;
    private long[] targets;

    Map<String, Object> run(String op, Map<String, Object> c) throws Exception {
        switch (op) {
            case "leader": return leader(c);
            case "follower": return follower(c);
            case "read": return read(c);
            case "lookup": return lookup(c);
            case "recover": return recover(c);
            case "clean": return clean(c);
            default: throw new ProtocolException("WireFormatError", "unknown op " + op);
        }
    }

    private Map<String, Object> leader(Map<String, Object> c) throws Exception {
        ByteBuffer[] buffers = leaderBuffers(Args.str(c, "chunk", null), Args.int32(c, "calls"));
        List<MemoryRecords> calls = new ArrayList<>(buffers.length);
        for (ByteBuffer b : buffers) {
            b.clear();
            b.put(chunk.duplicate()).flip();
            calls.add(MemoryRecords.readableRecords(b));
        }
        KafkaLogBase log = freshLog(Args.map(c, "config"));
        try {
            return Bench.timed(() -> {
                for (MemoryRecords r : calls) {
                    log.appendLeader(r, 0, false);
                }
                return Map.of("log_end_offset", log.logEndOffset());
            });
        } finally {
            log.closeHandlers(); // no final flush, as kafkalog's row: the files are deleted
            log.close();
        }
    }

    private Map<String, Object> follower(Map<String, Object> c) throws Exception {
        String path = Args.str(c, "chunks", null);
        int size = Args.int32(c, "chunk_bytes");
        if (!path.equals(chunksKey)) {
            release();
            chunks = split(Files.readAllBytes(Path.of(path)), size);
            chunksKey = path;
        }
        List<MemoryRecords> calls = new ArrayList<>(chunks.length);
        for (ByteBuffer b : chunks) {
            calls.add(MemoryRecords.readableRecords(b.duplicate()));
        }
        KafkaLogBase log = freshLog(Args.map(c, "config"));
        try {
            return Bench.timed(() -> {
                for (MemoryRecords r : calls) {
                    log.appendFollower(r, 0);
                }
                return Map.of("log_end_offset", log.logEndOffset());
            });
        } finally {
            log.closeHandlers();
            log.close();
        }
    }

    private ByteBuffer[] leaderBuffers(String path, int calls) throws IOException {
        String key = path + "*" + calls;
        if (!key.equals(chunksKey)) {
            release();
            chunk = ByteBuffer.wrap(Files.readAllBytes(Path.of(path)));
            chunks = new ByteBuffer[calls];
            for (int i = 0; i < calls; i++) {
                chunks[i] = ByteBuffer.allocate(chunk.remaining());
            }
            chunksKey = key;
        }
        return chunks;
    }

    private static ByteBuffer[] split(byte[] all, int size) {
        if (size <= 0 || all.length % size != 0) {
            throw new ProtocolException("WireFormatError", "chunk_bytes " + size
                + " does not divide the file's " + all.length + " bytes");
        }
        ByteBuffer[] out = new ByteBuffer[all.length / size];
        for (int i = 0; i < out.length; i++) {
            out[i] = ByteBuffer.wrap(all, i * size, size).slice();
        }
        return out;
    }

    private Map<String, Object> read(Map<String, Object> c) throws Exception {
        String image = Args.str(c, "image", null);
        if (!image.equals(readImage)) {
            closeLog(readLog);
            readLog = null;
            readLog = (KafkaLogBase) Generation.loadImage(Args.map(c, "config"), START_MS, image,
                0L, 0L, Args.lng(c, "high_watermark"), false, null);
            readImage = image;
        }
        int maxBytes = Args.int32(c, "max_bytes");
        if (readBuffer == null || readBuffer.capacity() < maxBytes) {
            readBuffer = ByteBuffer.allocate(maxBytes);
        }
        KafkaLogBase log = readLog;
        ByteBuffer buffer = readBuffer;
        return Bench.timed(() -> consume(log, buffer, maxBytes));
    }

    private static Map<String, Object> consume(KafkaLogBase log, ByteBuffer buffer, int maxBytes)
            throws IOException {
        long offset = 0;
        long end = log.highWatermark();
        long bytes = 0;
        long batches = 0;
        while (offset < end) {
            FileRecords records = (FileRecords) log.read(offset, maxBytes, "high_watermark",
                false).records;
            buffer.clear();
            buffer.limit(records.sizeInBytes());
            records.readInto(buffer, 0);
            long next = -1;
            for (RecordBatch batch : MemoryRecords.readableRecords(buffer).batches()) {
                batch.ensureValid();
                next = batch.lastOffset() + 1;
                batches++;
            }
            if (next < 0) {
                throw new IllegalStateException("read at offset " + offset + " gave no batch");
            }
            offset = next;
            bytes += records.sizeInBytes();
        }
        return Map.of("bytes", bytes, "batches", batches);
    }

    private Map<String, Object> lookup(Map<String, Object> c) throws Exception {
        String dir = Args.str(c, "dir", null);
        if (!dir.equals(lookupDir)) {
            closeSegment();
            LogConfig config = new LogConfig(KafkaLogBase.kafkaProps(Args.map(c, "config"), true));
            lookupSegment = LogSegment.open(new File(dir), 0L, config, new ManualClock(START_MS),
                true, 0, false, "");
            targets = longs(Files.readAllBytes(Path.of(Args.str(c, "targets", null))));
            lookupDir = dir;
        }
        LogSegment segment = lookupSegment;
        long[] wanted = targets;
        return Bench.timed(() -> {
            long positions = 0;
            for (long t : wanted) {
                positions += segment.translateOffset(t).position;
            }
            // The sum is the caller's check of every answer, and keeps the JIT from
            // dropping lookups whose result is unused.
            return Map.of("position_sum", positions);
        });
    }

    private static long[] longs(byte[] bigEndian) {
        long[] out = new long[bigEndian.length / Long.BYTES];
        ByteBuffer.wrap(bigEndian).order(ByteOrder.BIG_ENDIAN).asLongBuffer().get(out);
        return out;
    }

    private Map<String, Object> recover(Map<String, Object> c) throws Exception {
        String image = Args.str(c, "image", null);
        if (!image.equals(crashedImage)) {
            closeLog(crashed);
            crashed = null;
            crashed = (KafkaLogBase) Generation.loadImage(Args.map(c, "config"), START_MS, image,
                0L, 0L, 0L, false, null);
            crashed.closeHandlers(); // a crash: the copy stays unflushed and unclean
            crashedImage = image;
        }
        KafkaLogBase log = crashed;
        Map<String, Object> out = Bench.timed(() -> {
            log.load(0L, 0L, false);
            return Map.of();
        });
        long end = log.logEndOffset();
        log.closeHandlers();
        out.put("log_end_offset", end);
        return out;
    }

    private Map<String, Object> clean(Map<String, Object> c) throws Exception {
        KafkaLogBase log = (KafkaLogBase) Generation.loadImage(Args.map(c, "config"), START_MS,
            Args.str(c, "image", null), Args.lng(c, "recovery_point"),
            Args.lng(c, "log_start_offset"), Args.lng(c, "high_watermark"), true, null);
        try {
            Map<String, Object> out = Bench.timed(() -> {
                long[] pass = log.cleanPass();
                if (pass == null) {
                    throw new IllegalStateException("Kafka's cleaner selected no log to clean");
                }
                return Map.of("first_dirty_offset", pass[0], "end_offset", pass[1]);
            });
            long records = 0;
            long bytes = 0;
            for (LogSegment s : log.segments()) {
                for (RecordBatch batch : s.log().batches()) {
                    Integer count = batch.countOrNull();
                    if (count == null) {
                        throw new IllegalStateException("a batch of magic " + batch.magic()
                            + " at offset " + batch.baseOffset() + " has no record count");
                    }
                    records += count;
                }
                bytes += s.size();
            }
            out.put("log_end_offset", log.logEndOffset());
            out.put("records", records);
            out.put("bytes", bytes);
            return out;
        } finally {
            log.closeHandlers(); // the copy is deleted with the log's temporary directory
            log.close();
        }
    }

    private KafkaLogBase freshLog(Map<String, Object> config) throws IOException {
        return (KafkaLogBase) Generation.open(config, START_MS, 0L);
    }

    private void release() {
        chunks = null;
        chunk = null;
        chunksKey = null;
    }

    private static void closeLog(KafkaLogBase log) {
        if (log != null) {
            log.close();
        }
    }

    private void closeSegment() throws IOException {
        if (lookupSegment != null) {
            lookupSegment.close();
            lookupSegment = null;
            lookupDir = null;
        }
    }

    @Override
    public void close() throws IOException {
        closeLog(readLog);
        closeLog(crashed);
        closeSegment();
    }
}
