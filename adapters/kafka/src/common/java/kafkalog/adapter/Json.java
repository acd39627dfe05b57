package kafkalog.adapter;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON reader and writer for the adapter protocol: objects become
 * LinkedHashMap, arrays ArrayList, integers Long, strings String, booleans Boolean, null null.
 * Fractions become Double, which fails every integer field (WireFormatError); an integer
 * beyond 64 bits is a ProtocolError, as the protocol asks for numbers past a language's limits.
 * Kept here rather than pulling a JSON library, because the adapter must not change the
 * versions of the libraries Kafka itself depends on.
 */
public final class Json {
    private static final int MAX_DEPTH = 200;

    private final String text;
    private final boolean lenient;
    private int pos;

    private Json(String text, boolean lenient) {
        this.text = text;
        this.lenient = lenient;
    }

    /** Parses one JSON value; raises ProtocolException naming what is wrong. */
    public static Object parse(String text) {
        return parse(text, false);
    }

    /**
     * With `lenient`, an integer beyond 64 bits reads as a Double instead of failing, so the
     * `id` of a request that is otherwise unreadable can still be found for its error reply.
     */
    public static Object parse(String text, boolean lenient) {
        Json p = new Json(text, lenient);
        p.skipSpace();
        Object value = p.value(0);
        p.skipSpace();
        if (p.pos != text.length()) {
            throw p.fail("trailing characters");
        }
        return value;
    }

    private ProtocolException fail(String what) {
        return new ProtocolException("not JSON: " + what + " at column " + (pos + 1));
    }

    private void skipSpace() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw new ProtocolException("not readable JSON: nesting deeper than " + MAX_DEPTH);
        }
        if (pos >= text.length()) {
            throw fail("unexpected end");
        }
        char c = text.charAt(pos);
        switch (c) {
            case '{': return object(depth);
            case '[': return array(depth);
            case '"': return string();
            case 't': return literal("true", Boolean.TRUE);
            case 'f': return literal("false", Boolean.FALSE);
            case 'n': return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw fail("unexpected character '" + c + "'");
        }
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, pos)) {
            throw fail("bad literal");
        }
        pos += word.length();
        return value;
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> out = new LinkedHashMap<>();
        pos++;
        skipSpace();
        if (peek() == '}') {
            pos++;
            return out;
        }
        while (true) {
            skipSpace();
            if (peek() != '"') {
                throw fail("expected a string key");
            }
            String key = string();
            skipSpace();
            expect(':');
            skipSpace();
            out.put(key, value(depth + 1));
            skipSpace();
            char c = next();
            if (c == '}') {
                return out;
            }
            if (c != ',') {
                pos--;
                throw fail("expected ',' or '}'");
            }
        }
    }

    private List<Object> array(int depth) {
        List<Object> out = new ArrayList<>();
        pos++;
        skipSpace();
        if (peek() == ']') {
            pos++;
            return out;
        }
        while (true) {
            skipSpace();
            out.add(value(depth + 1));
            skipSpace();
            char c = next();
            if (c == ']') {
                return out;
            }
            if (c != ',') {
                pos--;
                throw fail("expected ',' or ']'");
            }
        }
    }

    private char peek() {
        if (pos >= text.length()) {
            throw fail("unexpected end");
        }
        return text.charAt(pos);
    }

    private char next() {
        char c = peek();
        pos++;
        return c;
    }

    private void expect(char c) {
        if (next() != c) {
            pos--;
            throw fail("expected '" + c + "'");
        }
    }

    private String string() {
        pos++;
        StringBuilder out = new StringBuilder();
        while (true) {
            char c = next();
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                pos--;
                throw fail("control character in string");
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char e = next();
            switch (e) {
                case '"': out.append('"'); break;
                case '\\': out.append('\\'); break;
                case '/': out.append('/'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u':
                    if (pos + 4 > text.length()) {
                        throw fail("short \\u escape");
                    }
                    try {
                        out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                    } catch (NumberFormatException ex) {
                        throw fail("bad \\u escape");
                    }
                    pos += 4;
                    break;
                default:
                    pos--;
                    throw fail("bad escape");
            }
        }
    }

    private Object number() {
        int start = pos;
        if (peek() == '-') {
            pos++;
        }
        boolean fraction = false;
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c >= '0' && c <= '9') {
                pos++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || (c == '-' && pos > start)) {
                fraction = true;
                pos++;
            } else {
                break;
            }
        }
        String digits = text.substring(start, pos);
        try {
            if (fraction) {
                return Double.parseDouble(digits);
            }
            return Long.parseLong(digits);
        } catch (NumberFormatException ex) {
            pos = start;
            if (!fraction && digits.matches("-?[0-9]+")) {
                if (lenient) {
                    pos = start + digits.length();
                    return Double.valueOf(digits);
                }
                throw new ProtocolException("not readable JSON: the integer at column "
                    + (start + 1) + " does not fit in 64 bits");
            }
            throw fail("bad number");
        }
    }

    /** The compact JSON text of a value made of Map, List, String, Number, Boolean and null. */
    public static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(out, value);
        return out.toString();
    }

    private static void write(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            quote(out, (String) value);
        } else if (value instanceof Boolean || value instanceof Long || value instanceof Integer
                || value instanceof Short) {
            out.append(value);
        } else if (value instanceof Map) {
            out.append('{');
            Iterator<? extends Map.Entry<?, ?>> it = ((Map<?, ?>) value).entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<?, ?> e = it.next();
                quote(out, String.valueOf(e.getKey()));
                out.append(':');
                write(out, e.getValue());
                if (it.hasNext()) {
                    out.append(',');
                }
            }
            out.append('}');
        } else if (value instanceof List) {
            out.append('[');
            List<?> list = (List<?>) value;
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                write(out, list.get(i));
            }
            out.append(']');
        } else if (value instanceof byte[]) {
            quote(out, Base64.getEncoder().encodeToString((byte[]) value));
        } else {
            throw new IllegalStateException("no JSON form for " + value.getClass().getName());
        }
    }

    private static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }

    /** UTF-8 bytes of a header key, refusing lone surrogates as Kafka's encoder would not. */
    public static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
