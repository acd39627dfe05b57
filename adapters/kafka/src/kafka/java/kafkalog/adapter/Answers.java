package kafkalog.adapter;

import @records.pkg@.FileRecords;
import @records.pkg@.Record;
import @records.pkg@.RecordBatch;
import @records.pkg@.Records;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;

/**
 * Kafka's answers encoded as the protocol's values (specs/adapter-protocol.md): an append's
 * LogAppendInfo, a read's FetchDataInfo with its batches as Kafka holds them, offset metadata
 * and a timestamp lookup. Fields go out in the protocol's order (LinkedHashMap).
 */
final class Answers {
    private Answers() {
    }

    /** An append's result; `offsetOfMaxTimestamp` as the release reports it (-1 without). */
    static Map<String, Object> appendInfo(LogAppendInfo info, long offsetOfMaxTimestamp) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("first_offset", info.firstOffset());
        out.put("last_offset", info.lastOffset());
        out.put("max_timestamp", info.maxTimestamp());
        out.put("offset_of_max_timestamp", offsetOfMaxTimestamp);
        out.put("log_append_time", info.logAppendTime());
        out.put("valid_bytes", (long) info.validBytes());
        out.put("record_count", info.numMessages());
        return out;
    }

    /** A read's answer; the aborted transactions only at `txn_committed` isolation. */
    static Map<String, Object> fetched(FetchDataInfo info, String isolation) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("fetch_offset_metadata", offsetMetadata(info.fetchOffsetMetadata));
        out.put("size_in_bytes", (long) info.records.sizeInBytes());
        out.put("batches", batchViews(info.records));
        out.put("first_entry_incomplete", info.firstEntryIncomplete);
        if ("txn_committed".equals(isolation) && info.abortedTransactions.isPresent()) {
            out.put("aborted_transactions", abortedTransactions(info.abortedTransactions.get()));
        }
        return out;
    }

    private static List<Object> abortedTransactions(
            List<FetchResponseData.AbortedTransaction> transactions) {
        List<Object> aborted = new ArrayList<>();
        for (FetchResponseData.AbortedTransaction t : transactions) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("producer_id", t.producerId());
            e.put("first_offset", t.firstOffset());
            aborted.add(e);
        }
        return aborted;
    }

    private static List<Object> batchViews(Records records) {
        List<Object> out = new ArrayList<>();
        for (RecordBatch batch : records.batches()) {
            out.add(batchView(batch));
        }
        return out;
    }

    private static Map<String, Object> batchView(RecordBatch batch) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("base_offset", batch.baseOffset());
        view.put("last_offset", batch.lastOffset());
        view.put("partition_leader_epoch", (long) batch.partitionLeaderEpoch());
        view.put("max_timestamp", batch.maxTimestamp());
        view.put("size_in_bytes", (long) batch.sizeInBytes());
        view.put("position", (long) position(batch));
        List<Object> recs = new ArrayList<>();
        List<Object> offsets = new ArrayList<>();
        boolean gapless = true;
        for (Record r : batch) {
            recs.add(record(r));
            gapless &= r.offset() == batch.baseOffset() + offsets.size();
            offsets.add(r.offset());
        }
        view.put("records", recs);
        // A cleaned batch keeps its base and last offset but only some records (CLN-47).
        if (!gapless || batch.baseOffset() + offsets.size() != batch.lastOffset() + 1) {
            view.put("record_offsets", offsets);
        }
        view.put("timestamp_type", batch.timestampType() == TimestampType.LOG_APPEND_TIME
            ? "LogAppendTime" : "CreateTime");
        if (batch.producerId() != -1L) {
            view.put("producer_id", batch.producerId());
            view.put("producer_epoch", (long) batch.producerEpoch());
            view.put("base_sequence", (long) batch.baseSequence());
        }
        if (batch.isTransactional()) {
            view.put("is_transactional", true);
        }
        if (batch.isControlBatch()) {
            view.put("is_control", true);
        }
        return view;
    }

    /** The batch's byte position in its segment file; -1 for a batch read from memory. */
    private static int position(RecordBatch batch) {
        if (batch instanceof @records.pkg@.FileLogInputStream.FileChannelRecordBatch) {
            return ((@records.pkg@.FileLogInputStream.FileChannelRecordBatch) batch).position();
        }
        return -1;
    }

    private static Map<String, Object> record(Record r) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("key", r.hasKey() ? bytesOf(r.key()) : null);
        out.put("value", r.hasValue() ? bytesOf(r.value()) : null);
        out.put("timestamp", r.timestamp());
        List<Object> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            Map<String, Object> hv = new LinkedHashMap<>();
            hv.put("key", h.key());
            hv.put("value", h.value());
            headers.add(hv);
        }
        out.put("headers", headers);
        return out;
    }

    /** The buffer's remaining bytes, leaving the buffer itself untouched. */
    private static byte[] bytesOf(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] out = new byte[copy.remaining()];
        copy.get(out);
        return out;
    }

    static Map<String, Object> offsetMetadata(LogOffsetMetadata m) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("message_offset", m.messageOffset);
        out.put("segment_base_offset", m.segmentBaseOffset);
        out.put("relative_position_in_segment", (long) m.relativePositionInSegment);
        return out;
    }

    static Map<String, Object> timestampAndOffset(FileRecords.TimestampAndOffset t) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("timestamp", t.timestamp);
        out.put("offset", t.offset);
        out.put("leader_epoch", t.leaderEpoch.map(Integer::longValue).orElse(null));
        return out;
    }
}
