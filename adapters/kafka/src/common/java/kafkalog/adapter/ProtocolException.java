package kafkalog.adapter;

/** A request the adapter cannot understand; answered with the code it carries. */
public class ProtocolException extends RuntimeException {
    private final String code;

    public ProtocolException(String message) {
        this("ProtocolError", message);
    }

    public ProtocolException(String code, String message) {
        super(message);
        this.code = code;
    }

    public String code() {
        return code;
    }
}
