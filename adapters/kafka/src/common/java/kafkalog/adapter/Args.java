package kafkalog.adapter;

import java.util.Base64;
import java.util.List;
import java.util.Map;

/** Typed access to a request's `args`, failing with WireFormatError naming the field. */
public final class Args {
    private static final Object REQUIRED = new Object();

    private Args() {
    }

    private static Object get(Map<String, Object> args, String name, Object fallback) {
        if (args.containsKey(name)) {
            return args.get(name);
        }
        if (fallback == REQUIRED) {
            throw new ProtocolException("WireFormatError", "missing argument '" + name + "'");
        }
        return fallback;
    }

    private static ProtocolException wrong(String name, String expected, Object value) {
        return new ProtocolException("WireFormatError", name + ": expected " + expected + ", got "
            + (value == null ? "null" : value.getClass().getSimpleName()));
    }

    public static long lng(Map<String, Object> args, String name) {
        return lng(args, name, REQUIRED);
    }

    public static long lng(Map<String, Object> args, String name, Object fallback) {
        Object value = get(args, name, fallback);
        if (!(value instanceof Long)) {
            throw wrong(name, "an integer", value);
        }
        return (Long) value;
    }

    /** An int argument; a value outside 32 bits is the model's IllegalArgumentError. */
    public static int int32(Map<String, Object> args, String name) {
        return int32(args, name, REQUIRED);
    }

    public static int int32(Map<String, Object> args, String name, Object fallback) {
        long value = lng(args, name, fallback);
        if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {
            throw new LogError("IllegalArgumentError", name + " " + value + " outside int32");
        }
        return (int) value;
    }

    /** A number argument: an integer or a fraction (the JSON reader keeps 0.0 a Double). */
    public static double dbl(Map<String, Object> args, String name, Object fallback) {
        Object value = get(args, name, fallback);
        if (!(value instanceof Long) && !(value instanceof Double)) {
            throw wrong(name, "a number", value);
        }
        return ((Number) value).doubleValue();
    }

    public static Long optLong(Map<String, Object> args, String name) {
        Object value = get(args, name, null);
        if (value == null) {
            return null;
        }
        if (!(value instanceof Long)) {
            throw wrong(name, "an integer or null", value);
        }
        return (Long) value;
    }

    public static boolean bool(Map<String, Object> args, String name, Object fallback) {
        Object value = get(args, name, fallback);
        if (!(value instanceof Boolean)) {
            throw wrong(name, "a boolean", value);
        }
        return (Boolean) value;
    }

    public static String str(Map<String, Object> args, String name, Object fallback) {
        Object value = get(args, name, fallback);
        if (!(value instanceof String)) {
            throw wrong(name, "a string", value);
        }
        return (String) value;
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> map(Map<String, Object> args, String name) {
        Object value = get(args, name, REQUIRED);
        if (!(value instanceof Map)) {
            throw wrong(name, "an object", value);
        }
        return (Map<String, Object>) value;
    }

    @SuppressWarnings("unchecked")
    public static List<Object> list(Map<String, Object> args, String name) {
        Object value = get(args, name, REQUIRED);
        if (!(value instanceof List)) {
            throw wrong(name, "an array", value);
        }
        return (List<Object>) value;
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> asMap(Object value, String name) {
        if (!(value instanceof Map)) {
            throw wrong(name, "an object", value);
        }
        return (Map<String, Object>) value;
    }

    /** Nullable base64 bytes. */
    public static byte[] bytes(Map<String, Object> args, String name) {
        Object value = get(args, name, REQUIRED);
        if (value == null) {
            return null;
        }
        if (!(value instanceof String)) {
            throw wrong(name, "base64 text", value);
        }
        try {
            return Base64.getDecoder().decode((String) value);
        } catch (IllegalArgumentException e) {
            throw new ProtocolException("WireFormatError", name + ": invalid base64");
        }
    }
}
