package kafkalog.adapter;

import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The adapter process: reads one request per line on stdin, answers one line on stdout
 * (specs/adapter-protocol.md). stdout carries protocol lines only: System.out is pointed at
 * stderr before anything else runs, so a stray print from any library cannot corrupt it.
 */
public final class Main {
    private static final Set<String> LOG_ACTIONS = Set.of(
        "append_as_leader", "append_marker", "append_as_follower", "read", "update_high_watermark",
        "maybe_increment_high_watermark", "maybe_increment_log_start_offset", "delete_old_segments",
        "roll", "truncate_to", "truncate_fully_and_start_at", "flush", "assign_epoch",
        "end_offset_for_epoch", "fetch_offset_by_timestamp", "advance_clock", "close_and_reopen",
        "crash", "clean");
    private static final Set<String> SESSION_ACTIONS =
        Set.of("handshake", "open", "load_image", "state", "check", "verify", "close");
    /** Features of every generation: `kafka_loader` is the `load_image` session request. */
    private static final Set<String> COMMON_FEATURES = Set.of("kafka_loader");

    private final PrintStream out;
    private final Set<String> features = new TreeSet<>(Generation.FEATURES);
    private boolean handshaken;
    private PartitionLog log;

    private Main(PrintStream out) {
        this.out = out;
        features.addAll(COMMON_FEATURES);
    }

    public static void main(String[] argv) throws IOException {
        PrintStream protocol = new PrintStream(new BufferedOutputStream(System.out), false,
            StandardCharsets.UTF_8);
        System.setOut(System.err);
        Main main = new Main(protocol);
        try {
            main.serve(System.in);
        } finally {
            main.closeLog();
            protocol.flush();
        }
        System.exit(0);
    }

    private void serve(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        byte[] buf = new byte[65536];
        int n;
        while ((n = in.read(buf)) >= 0) {
            for (int i = 0; i < n; i++) {
                b = buf[i];
                if (b == '\n') {
                    answer(line.toByteArray());
                    line.reset();
                } else {
                    line.write(b);
                }
            }
        }
        if (line.size() > 0) {
            answer(line.toByteArray());
        }
    }

    private void answer(byte[] raw) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(raw)).toString();
        } catch (CharacterCodingException e) {
            String lossy = new String(raw, StandardCharsets.UTF_8);
            reply(readableId(lossy), error("ProtocolError", "request is not UTF-8"));
            return;
        }
        if (text.isBlank()) {
            return;
        }
        Long id = null;
        Map<String, Object> body;
        try {
            Object parsed = Json.parse(text);
            if (!(parsed instanceof Map)) {
                throw new ProtocolException("a message must be a JSON object");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> request = (Map<String, Object>) parsed;
            Object rawId = request.get("id");
            if (rawId instanceof Long) {
                id = (Long) rawId;
            }
            body = dispatch(request, rawId);
        } catch (ProtocolException e) {
            if (id == null) {
                id = readableId(text);
            }
            body = error(e.code(), e.getMessage());
        } catch (Throwable e) {
            Map<String, Object> err = Errors.toError(e);
            if ("UnexpectedException".equals(err.get("code"))) {
                e.printStackTrace(System.err);
            }
            body = Map.of("error", err);
        }
        reply(id, body);
    }

    private Map<String, Object> dispatch(Map<String, Object> request, Object rawId)
            throws Exception {
        if (!request.containsKey("id") || !request.containsKey("action")) {
            throw new ProtocolException("request without id or action");
        }
        if (!(rawId instanceof Long)) {
            throw new ProtocolException("request id must be an integer, got " + rawId);
        }
        for (String key : request.keySet()) {
            if (!Set.of("id", "action", "args").contains(key)) {
                throw new ProtocolException("unknown request field " + key);
            }
        }
        if (!(request.get("action") instanceof String)) {
            throw new ProtocolException("action must be a string");
        }
        String action = (String) request.get("action");
        Object rawArgs = request.getOrDefault("args", Map.of());
        if (rawArgs == null) {
            rawArgs = Map.of();
        }
        if (!(rawArgs instanceof Map)) {
            throw new ProtocolException("args must be an object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> args = (Map<String, Object>) rawArgs;
        if (!LOG_ACTIONS.contains(action) && !SESSION_ACTIONS.contains(action)) {
            throw new ProtocolException("UnknownActionError", "unknown action '" + action + "'");
        }
        if (action.equals("handshake")) {
            return ok(handshake(args));
        }
        if (!handshaken) {
            throw new ProtocolException("the first request must be handshake");
        }
        if (action.equals("open")) {
            closeLog();
            log = Generation.open(Args.map(args, "config"), Args.lng(args, "now_ms", 0L),
                Args.lng(args, "log_start_offset", 0L));
            return ok(null);
        }
        if (action.equals("load_image")) {
            closeLog();
            log = Generation.loadImage(Args.map(args, "config"), Args.lng(args, "now_ms", 0L),
                Args.str(args, "dir", null), Args.lng(args, "recovery_point"),
                Args.lng(args, "log_start_offset"), Args.lng(args, "high_watermark", 0L),
                Args.bool(args, "clean_shutdown", false), Args.optLong(args, "cleaner_checkpoint"));
            return ok(log.handle("state", Map.of()));
        }
        if (log == null) {
            throw new ProtocolException(action + " before open");
        }
        if (action.equals("close")) {
            closeLog();
            return ok(null);
        }
        if (LOG_ACTIONS.contains(action) && !asked(action)) {
            return Map.of("unsupported", Map.of("message", Generation.IMPLEMENTATION
                + " does not support " + action));
        }
        return ok(log.handle(action, args));
    }

    private boolean asked(String action) {
        switch (action) {
            case "append_marker": return features.contains("transactions");
            case "append_as_follower": return features.contains("follower_append");
            case "maybe_increment_high_watermark": return features.contains("hw_metadata");
            case "assign_epoch":
            case "end_offset_for_epoch": return features.contains("leader_epochs");
            case "fetch_offset_by_timestamp": return features.contains("timestamps");
            case "close_and_reopen": return features.contains("reopen");
            case "clean": return features.contains("clean");
            case "crash": return features.contains("crash") || features.contains("crash_kill");
            default: return true;
        }
    }

    private Object handshake(Map<String, Object> args) {
        Object version = args.get("protocol_version");
        if (!(version instanceof Long) || ((Long) version != 1L && (Long) version != 2L)) {
            throw new ProtocolException("unsupported protocol_version " + version
                + "; this adapter speaks 1 or 2");
        }
        handshaken = true;
        if ((Long) version == 1L) {
            features.remove("crash");
            features.remove("crash_kill");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("protocol_version", version);
        out.put("implementation", Generation.IMPLEMENTATION);
        out.put("features", List.copyOf(features));
        return out;
    }

    private void closeLog() {
        PartitionLog old = log;
        log = null;
        if (old != null) {
            old.close();
        }
    }

    private static Map<String, Object> ok(Object value) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("ok", value);
        return out;
    }

    private static Map<String, Object> error(String code, String message) {
        Map<String, Object> err = new LinkedHashMap<>();
        err.put("code", code);
        err.put("message", Errors.oneLine(message));
        return Map.of("error", err);
    }

    private static Long readableId(String text) {
        try {
            Object parsed = Json.parse(text, true);
            if (parsed instanceof Map && ((Map<?, ?>) parsed).get("id") instanceof Long) {
                return (Long) ((Map<?, ?>) parsed).get("id");
            }
        } catch (RuntimeException e) {
            return null;
        }
        return null;
    }

    private void reply(Long id, Map<String, Object> body) {
        Map<String, Object> message = new LinkedHashMap<>();
        message.put("id", id);
        message.putAll(body);
        out.print(Json.write(message));
        out.print('\n');
        out.flush();
    }
}
