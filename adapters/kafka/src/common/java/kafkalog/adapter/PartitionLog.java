package kafkalog.adapter;

import java.util.Map;

/** One open log behind the protocol: answers log actions and the session's state requests. */
public interface PartitionLog {
    /** The `ok` value of a log action or of state/check/verify; throws on a log error. */
    Object handle(String action, Map<String, Object> args) throws Exception;

    /** Closes the log and removes its directory; never throws. */
    void close();
}
