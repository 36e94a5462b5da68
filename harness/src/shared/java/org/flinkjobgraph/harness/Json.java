package org.flinkjobgraph.harness;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Minimal JSON writer and reader (maps keep their insertion order; the reader gives integers as
 * Long, other numbers as Double): the harnesses write their records with it and the restore
 * harness reads its own records back (a cross-version case's first half, a set to re-export).
 */
public final class Json {
    private Json() {}

    /** String escapes: the character, then the letter after the backslash. */
    private static final String ESCAPES = "\"\"\\\\\nn\rr\tt\bb\ff";

    public static String write(Object o) {
        StringBuilder sb = new StringBuilder(1024);
        write(sb, o);
        return sb.toString();
    }

    @SuppressWarnings("unchecked")
    public static void write(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof String) {
            str(sb, (String) o);
        } else if (o instanceof Boolean || o instanceof Integer || o instanceof Long) {
            sb.append(o);
        } else if (o instanceof Number) {
            sb.append(o.toString());
        } else if (o instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<Object, Object> e : ((Map<Object, Object>) o).entrySet()) {
                if (!first) {
                    sb.append(", ");
                }
                first = false;
                str(sb, String.valueOf(e.getKey()));
                sb.append(": ");
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (o instanceof Collection) {
            sb.append('[');
            boolean first = true;
            for (Object x : (Collection<Object>) o) {
                if (!first) {
                    sb.append(", ");
                }
                first = false;
                write(sb, x);
            }
            sb.append(']');
        } else {
            str(sb, o.toString());
        }
    }

    private static void str(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            int e = ESCAPES.indexOf(c);
            if (e >= 0 && e % 2 == 0) {
                sb.append('\\').append(ESCAPES.charAt(e + 1));
            } else if (c < 0x20 || c == 0x2028 || c == 0x2029) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }

    /** One JSON object (a record line). */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> readObject(String text) {
        Reader p = new Reader(text);
        Object v = p.value();
        p.ws();
        if (p.i != text.length() || !(v instanceof Map)) {
            throw new IllegalArgumentException("not one JSON object at " + p.i);
        }
        return (Map<String, Object>) v;
    }

    private static final class Reader {
        private final String s;
        private int i;

        Reader(String s) {
            this.s = s;
        }

        void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        Object value() {
            ws();
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                items('}', () -> {
                    ws();
                    String k = string();
                    ws();
                    expect(':');
                    m.put(k, value());
                });
                return m;
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                items(']', () -> l.add(value()));
                return l;
            }
            if (c == '"') {
                return string();
            }
            for (Object literal : new Object[] {Boolean.TRUE, Boolean.FALSE, null}) {
                String word = String.valueOf(literal);
                if (s.startsWith(word, i)) {
                    i += word.length();
                    return literal;
                }
            }
            int st = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            String n = s.substring(st, i);
            if (n.isEmpty()) {
                throw new IllegalArgumentException("unexpected '" + c + "' at " + st);
            }
            return n.contains(".") || n.contains("e") || n.contains("E") ? (Object) Double.valueOf(n) : (Object) Long.valueOf(n);
        }

        /** The items of an object or array up to {@code close}, separated by commas. */
        void items(char close, Runnable item) {
            ws();
            if (s.charAt(i) == close) {
                i++;
                return;
            }
            while (true) {
                item.run();
                ws();
                if (s.charAt(i) != ',') {
                    expect(close);
                    return;
                }
                i++;
            }
        }

        void expect(char c) {
            if (s.charAt(i) != c) {
                throw new IllegalArgumentException("expected '" + c + "' at " + i);
            }
            i++;
        }

        String string() {
            expect('"');
            StringBuilder sb = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return sb.toString();
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                int at = ESCAPES.indexOf(e, 1);
                while (at >= 0 && at % 2 == 0) {
                    at = ESCAPES.indexOf(e, at + 1);
                }
                if (e == 'u') {
                    sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    i += 4;
                } else {
                    sb.append(at >= 0 ? ESCAPES.charAt(at - 1) : e);
                }
            }
        }
    }
}
