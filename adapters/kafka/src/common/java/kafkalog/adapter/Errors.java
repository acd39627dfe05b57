package kafkalog.adapter;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TransactionCoordinatorFencedException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.config.ConfigException;

/**
 * Kafka's exceptions as the protocol's error codes (specs/errors.md). Exceptions Kafka's log
 * raises under a class name of its storage module are matched by simple name, since those
 * classes live in different packages across releases; everything else is UnexpectedException.
 */
public final class Errors {
    private Errors() {
    }

    public static Map<String, Object> toError(Throwable error) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (error instanceof LogError) {
            LogError log = (LogError) error;
            out.put("code", log.code());
            out.put("message", oneLine(log.getMessage()));
            out.putAll(log.extra());
            return out;
        }
        out.put("code", code(error));
        out.put("message", oneLine(error.getClass().getSimpleName() + ": " + error.getMessage()));
        return out;
    }

    static String code(Throwable error) {
        String name = error.getClass().getSimpleName();
        switch (name) {
            case "UnexpectedAppendOffsetException": return "UnexpectedAppendOffsetError";
            case "OffsetsOutOfOrderException": return "OffsetsOutOfOrderError";
            case "LogSegmentOffsetOverflowException": return "LogSegmentOffsetOverflowError";
            case "IndexOffsetOverflowException": return "IndexOffsetOverflowError";
            case "CorruptIndexException": return "CorruptIndexError";
            case "InvalidOffsetException": return "InvalidOffsetError";
            case "InvalidRecordException": return "InvalidRecordError";
            default: break;
        }
        if (error instanceof OffsetOutOfRangeException) return "OffsetOutOfRangeError";
        if (error instanceof RecordTooLargeException) return "RecordTooLargeError";
        if (error instanceof RecordBatchTooLargeException) return "RecordBatchTooLargeError";
        if (error instanceof CorruptRecordException) return "CorruptRecordError";
        if (error instanceof OutOfOrderSequenceException) return "OutOfOrderSequenceError";
        if (error instanceof InvalidProducerEpochException) return "InvalidProducerEpochError";
        if (error instanceof ProducerFencedException) return "InvalidProducerEpochError";
        if (error instanceof InvalidTxnStateException) return "InvalidTxnStateError";
        if (error instanceof TransactionCoordinatorFencedException) {
            return "TransactionCoordinatorFencedError";
        }
        if (error instanceof InvalidTimestampException) return "InvalidRecordError";
        if (error instanceof KafkaStorageException) return "KafkaStorageError";
        if (error instanceof ConfigException || error instanceof InvalidConfigurationException) {
            return "IllegalArgumentError";
        }
        if (error instanceof IllegalArgumentException) return "IllegalArgumentError";
        if (error instanceof IllegalStateException) return "IllegalStateError";
        if (error instanceof KafkaException && String.valueOf(error.getMessage())
                .startsWith("Trying to roll a new log segment")) {
            return "InvalidRollError";
        }
        return "UnexpectedException";
    }

    public static String oneLine(String message) {
        String text = message == null ? "" : message;
        text = text.replace('\n', ' ').replace('\r', ' ');
        return text.length() > 500 ? text.substring(0, 500) + "..." : text;
    }
}
