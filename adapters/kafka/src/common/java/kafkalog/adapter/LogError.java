package kafkalog.adapter;

import java.util.Map;

/** A log error of specs/errors.md raised by the adapter's own argument checks. */
public class LogError extends RuntimeException {
    private final String code;
    private final Map<String, Object> extra;

    public LogError(String code, String message) {
        this(code, message, Map.of());
    }

    public LogError(String code, String message, Map<String, Object> extra) {
        super(message);
        this.code = code;
        this.extra = extra;
    }

    public String code() {
        return code;
    }

    public Map<String, Object> extra() {
        return extra;
    }
}
