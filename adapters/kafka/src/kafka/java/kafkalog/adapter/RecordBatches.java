package kafkalog.adapter;

import @records.pkg@.ControlRecordType;
import @records.pkg@.EndTransactionMarker;
import @records.pkg@.MemoryRecords;
import @records.pkg@.MemoryRecordsBuilder;
import @records.pkg@.RecordBatch;
import @records.pkg@.SimpleRecord;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;

/**
 * The protocol's appends decoded into Kafka's record batches, built with Kafka's own
 * MemoryRecordsBuilder (whose refusals, such as a negative base sequence with a producer id,
 * are then Kafka's). Arguments are read in a fixed order: with several bad fields, the first
 * one read decides the error.
 */
final class RecordBatches {
    private RecordBatches() {
    }

    /**
     * A leader append's one batch (offsets from 0; the log assigns them): the producer fields
     * and the records of the request `a`.
     */
    static MemoryRecords leaderBatch(Map<String, Object> a) {
        long pid = Args.lng(a, "producer_id", -1L);
        short producerEpoch = int16(Args.lng(a, "producer_epoch", -1L), "producer_epoch");
        int sequence = Args.int32(a, "base_sequence", -1L);
        boolean transactional = Args.bool(a, "is_transactional", false);
        List<Object> records = Args.list(a, "records");
        ByteBuffer buffer = ByteBuffer.allocate(1024 + 2 * estimate(records));
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, RecordBatch.MAGIC_VALUE_V2,
            Compression.NONE, TimestampType.CREATE_TIME, 0L, RecordBatch.NO_TIMESTAMP, pid,
            producerEpoch, sequence, transactional, false, RecordBatch.NO_PARTITION_LEADER_EPOCH);
        for (int i = 0; i < records.size(); i++) {
            addRecord(builder, Args.asMap(records.get(i), "records[" + i + "]"), -1L);
        }
        return builder.build();
    }

    /** The coordinator's COMMIT or ABORT marker batch, stamped with the clock's `nowMs`. */
    static MemoryRecords endTransactionMarker(long pid, short producerEpoch, boolean commit,
            int coordinatorEpoch, long nowMs) {
        EndTransactionMarker marker = new EndTransactionMarker(
            commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT, coordinatorEpoch);
        return MemoryRecords.withEndTransactionMarker(0L, nowMs,
            RecordBatch.NO_PARTITION_LEADER_EPOCH, pid, producerEpoch, marker);
    }

    /** A follower append's `batches` of the request `a`, each at its own offsets. */
    static MemoryRecords followerRecords(Map<String, Object> a) {
        List<Object> batches = Args.list(a, "batches");
        int size = 1024;
        for (Object b : batches) {
            size += 256 + 2 * estimate(Args.list(Args.asMap(b, "batches[]"), "records"));
        }
        ByteBuffer buffer = ByteBuffer.allocate(size);
        for (int i = 0; i < batches.size(); i++) {
            Map<String, Object> b = Args.asMap(batches.get(i), "batches[" + i + "]");
            buffer = writeFollowerBatch(buffer, b);
        }
        buffer.flip();
        return MemoryRecords.readableRecords(buffer.slice());
    }

    private static ByteBuffer writeFollowerBatch(ByteBuffer buffer, Map<String, Object> b) {
        long base = Args.lng(b, "base_offset");
        int leaderEpoch = Args.int32(b, "partition_leader_epoch");
        TimestampType type = "LogAppendTime".equals(Args.str(b, "timestamp_type", "CreateTime"))
            ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
        long appendTime = Args.lng(b, "log_append_time", -1L);
        long pid = Args.lng(b, "producer_id", -1L);
        short producerEpoch = int16(Args.lng(b, "producer_epoch", -1L), "producer_epoch");
        int sequence = Args.int32(b, "base_sequence", -1L);
        boolean transactional = Args.bool(b, "is_transactional", false);
        boolean control = Args.bool(b, "is_control", false);
        List<Object> records = Args.list(b, "records");
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, RecordBatch.MAGIC_VALUE_V2,
            Compression.NONE, type, base, appendTime, pid, producerEpoch, sequence,
            transactional || control, control, leaderEpoch);
        for (int i = 0; i < records.size(); i++) {
            Map<String, Object> r = Args.asMap(records.get(i), "records[" + i + "]");
            if (control) {
                builder.appendControlRecordWithOffset(base + i, new SimpleRecord(
                    Args.lng(r, "timestamp"), Args.bytes(r, "key"), Args.bytes(r, "value")));
            } else {
                addRecord(builder, r, base + i);
            }
        }
        builder.close();
        return builder.buffer();
    }

    private static void addRecord(MemoryRecordsBuilder builder, Map<String, Object> r,
            long offset) {
        byte[] key = Args.bytes(r, "key");
        byte[] value = Args.bytes(r, "value");
        long ts = Args.lng(r, "timestamp");
        List<Object> rawHeaders = Args.list(r, "headers");
        Header[] headers = new Header[rawHeaders.size()];
        for (int i = 0; i < headers.length; i++) {
            Map<String, Object> h = Args.asMap(rawHeaders.get(i), "headers[" + i + "]");
            String name = Args.str(h, "key", null);
            headers[i] = new RecordHeader(utf8Strict(name), Args.bytes(h, "value"));
        }
        if (offset < 0) {
            builder.append(ts, key, value, headers);
        } else {
            builder.appendWithOffset(offset, ts, key, value, headers);
        }
    }

    /** A header key as Kafka's encoder would write it; a lone surrogate cannot be encoded. */
    private static String utf8Strict(String key) {
        try {
            StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).encode(
                    java.nio.CharBuffer.wrap(key));
        } catch (CharacterCodingException e) {
            throw new LogError("IllegalArgumentError", "header key is not encodable as UTF-8");
        }
        return key;
    }

    /** Bytes enough for the records' batch: their text lengths bound their encoded sizes. */
    private static int estimate(List<Object> records) {
        int total = 0;
        for (Object o : records) {
            Map<String, Object> r = Args.asMap(o, "record");
            total += 64 + textLength(r.get("key")) + textLength(r.get("value"));
            Object headers = r.get("headers");
            if (headers instanceof List) {
                for (Object h : (List<?>) headers) {
                    if (h instanceof Map) {
                        total += 16 + textLength(((Map<?, ?>) h).get("key")) * 3
                            + textLength(((Map<?, ?>) h).get("value"));
                    }
                }
            }
        }
        return total;
    }

    private static int textLength(Object value) {
        return value instanceof String ? ((String) value).length() : 0;
    }

    /** A producer epoch argument; a value outside 16 bits is the model's IllegalArgumentError. */
    static short int16(long value, String name) {
        if (value < Short.MIN_VALUE || value > Short.MAX_VALUE) {
            throw new LogError("IllegalArgumentError", name + " " + value + " outside int16");
        }
        return (short) value;
    }
}
