package org.flinkjobgraph.restore;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * How a job's code declares a state (docs/statetypes-harness.md, "Declarations"): the style of the
 * declaration and the expression that gives its type, each state's as {@code style:expr} (its
 * description field), and its TTL as a short code. Every expression of one value type gives Flink
 * the same TypeInformation (so a change of style alone must restore); a type that an expression
 * cannot state (a {@code Row} class literal would be a Kryo type, {@code Types.LIST} is not the
 * {@code TypeHint<List<String>>} type) does not get it.
 */
final class StStyles {
    private StStyles() {}

    /** Styles that write the type directly in the descriptor's constructor, and their expression. */
    static final Map<String, List<String>> DIRECT = new LinkedHashMap<>();
    /** Styles that hold or build the descriptor elsewhere; their type is any of its expressions. */
    static final List<String> HOLDERS = List.of("static_field", "instance_field", "helper_method", "helper_args");

    static {
        DIRECT.put("class_literal", List.of("class"));
        DIRECT.put("type_hint", List.of("hint"));
        DIRECT.put("types", List.of("types", "basic"));
        DIRECT.put("typeinfo_of", List.of("tiof"));
        DIRECT.put("explicit_type_info", List.of("explicit"));
    }

    /** Every style label. */
    static List<String> styles() {
        List<String> out = new ArrayList<>(DIRECT.keySet());
        out.addAll(HOLDERS);
        return out;
    }

    /** Every type expression, in the order a fallback takes them. */
    static final List<String> EXPRS = List.of("class", "types", "hint", "tiof", "basic", "explicit");

    /**
     * The expressions that give {@code type} its TypeInformation, in the jars of the case: {@code
     * Types.POJO(PojoV.class)} fails where PojoV is not a POJO (the PojoV-kryo variant) and
     * {@code Types.GENERIC(Gen.class)} would keep Gen a Kryo type where it became a POJO.
     */
    static List<String> exprs(String type, String jarV1, String jarV2) {
        boolean pojoVKryo = "PojoV-kryo".equals(jarV1) || "PojoV-kryo".equals(jarV2);
        boolean genPojo = isGenPojo(jarV1) || isGenPojo(jarV2);
        switch (type) {
            case "LONG":
            case "STRING":
                return List.of("class", "types", "hint", "tiof", "basic");
            case "POJO":
                return pojoVKryo ? List.of("class", "hint", "tiof") : List.of("class", "types", "hint", "tiof");
            case "GENERIC":
                return genPojo ? List.of("class", "hint", "tiof") : List.of("class", "types", "hint", "tiof");
            case "POJO_COLL":
            case "ENUM":
                return List.of("class", "types", "hint", "tiof");
            case "TUPLE2":
                return List.of("types", "hint");
            case "ROW":
                return List.of("types", "explicit");
            case "LIST_HINT":
            case "MAP_HINT":
                return List.of("hint");
            case "AVRO":
                return List.of("explicit");
            default:
                throw new IllegalArgumentException("unknown value type " + type);
        }
    }

    private static boolean isGenPojo(String jar) {
        return "Gen-pojo".equals(jar) || "Gen-typeinfo".equals(jar);
    }

    /** The styles a state of {@code type} can be declared in. */
    static List<String> stylesFor(String type, String jarV1, String jarV2) {
        List<String> ok = exprs(type, jarV1, jarV2);
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : DIRECT.entrySet()) {
            for (String x : e.getValue()) {
                if (ok.contains(x)) {
                    out.add(e.getKey());
                    break;
                }
            }
        }
        out.addAll(HOLDERS);
        return out;
    }

    /** A style and expression drawn for {@code type} ("style:expr"). */
    static String draw(Random r, String type) {
        String style = StPlan.pick(r, stylesFor(type, "base", "base"));
        return style + ":" + drawExpr(r, style, type, "base", "base");
    }

    /** Another style (or, for a holder style, another expression) for the same type. */
    static String drawOther(Random r, String styleExpr, String type, String jarV1, String jarV2) {
        for (int i = 0; i < 50; i++) {
            String style = StPlan.pick(r, stylesFor(type, jarV1, jarV2));
            String now = style + ":" + drawExpr(r, style, type, jarV1, jarV2);
            if (!now.equals(styleExpr)) {
                return now;
            }
        }
        throw new IllegalStateException("no other style for " + type);
    }

    private static String drawExpr(Random r, String style, String type, String jarV1, String jarV2) {
        List<String> ok = exprs(type, jarV1, jarV2);
        List<String> c = new ArrayList<>();
        for (String x : DIRECT.containsKey(style) ? DIRECT.get(style) : EXPRS) {
            if (ok.contains(x)) {
                c.add(x);
            }
        }
        return StPlan.pick(r, c);
    }

    /**
     * The style kept as far as the type and the jars allow: a holder style keeps its kind of holder
     * with the first expression that states the type; a direct style that cannot becomes the first
     * direct style that can (deterministic, no randomness: v1 and v2 fit alike).
     */
    static String fit(String styleExpr, String type, String jarV1, String jarV2) {
        String style = style(styleExpr);
        String expr = expr(styleExpr);
        List<String> ok = exprs(type, jarV1, jarV2);
        if (ok.contains(expr) && (!DIRECT.containsKey(style) || DIRECT.get(style).contains(expr))) {
            return styleExpr;
        }
        if (HOLDERS.contains(style)) {
            for (String x : EXPRS) {
                if (ok.contains(x)) {
                    return style + ":" + x;
                }
            }
        }
        if (DIRECT.containsKey(style)) {
            for (String x : DIRECT.get(style)) {
                if (ok.contains(x)) {
                    return style + ":" + x;
                }
            }
        }
        for (Map.Entry<String, List<String>> e : DIRECT.entrySet()) {
            for (String x : e.getValue()) {
                if (ok.contains(x)) {
                    return e.getKey() + ":" + x;
                }
            }
        }
        throw new IllegalStateException("no style for " + type);
    }

    static String style(String styleExpr) {
        return styleExpr.substring(0, styleExpr.indexOf(':'));
    }

    static String expr(String styleExpr) {
        return styleExpr.substring(styleExpr.indexOf(':') + 1);
    }

    // ------------------------------------------------------------------ TTL

    /**
     * A TTL code: {@code <hours>h} then flags joined by '_': {@code rw} (OnReadAndWrite), {@code rx}
     * (ReturnExpiredIfNotCleanedUp), {@code full} (cleanupFullSnapshot), {@code incr}
     * (cleanupIncrementally(10, false)), {@code rocks} (cleanupInRocksdbCompactFilter(1000)),
     * {@code nobg} (disableCleanupInBackground). Hours long enough that nothing expires while a
     * case runs.
     */
    static String drawTtl(Random r) {
        StringBuilder sb = new StringBuilder(StPlan.pick(r, List.of("1", "6", "24"))).append('h');
        if (r.nextInt(100) < 30) {
            sb.append("_rw");
        }
        if (r.nextInt(100) < 20) {
            sb.append("_rx");
        }
        int c = r.nextInt(100);
        sb.append(c < 15 ? "_full" : c < 30 ? "_incr" : c < 40 ? "_rocks" : c < 50 ? "_nobg" : "");
        return sb.toString();
    }

    /** Another TTL configuration than {@code ttl}: a change of its time, update type, visibility or cleanup. */
    static String changeTtl(Random r, String ttl) {
        String[] t = parseTtl(ttl);
        for (int i = 0; i < 50; i++) {
            String[] n = t.clone();
            switch (r.nextInt(4)) {
                case 0:
                    n[0] = StPlan.pickOther(r, List.of("1", "6", "24", "48"), t[0]);
                    break;
                case 1:
                    n[1] = n[1].isEmpty() ? "rw" : "";
                    break;
                case 2:
                    n[2] = n[2].isEmpty() ? "rx" : "";
                    break;
                default:
                    n[3] = StPlan.pickOther(r, List.of("full", "incr", "rocks", "nobg", ""), t[3]);
            }
            String out = ttlCode(n);
            if (!out.equals(ttl)) {
                return out;
            }
        }
        throw new IllegalStateException("no other TTL than " + ttl);
    }

    /** {hours, "rw" or "", "rx" or "", cleanup or ""}. */
    static String[] parseTtl(String ttl) {
        String[] p = ttl.split("_");
        String[] t = {p[0].substring(0, p[0].length() - 1), "", "", ""};
        for (int i = 1; i < p.length; i++) {
            switch (p[i]) {
                case "rw": t[1] = "rw"; break;
                case "rx": t[2] = "rx"; break;
                default: t[3] = p[i];
            }
        }
        return t;
    }

    static String ttlCode(String[] t) {
        StringBuilder sb = new StringBuilder(t[0]).append('h');
        for (int i = 1; i < 4; i++) {
            if (!t[i].isEmpty()) {
                sb.append('_').append(t[i]);
            }
        }
        return sb.toString();
    }

    /** The TTL code as a readable map (the states lists' {@code ttl_config}); null without TTL. */
    static Map<String, Object> ttlConfig(String ttl) {
        if (ttl == null || ttl.equals("-")) {
            return null;
        }
        String[] t = parseTtl(ttl);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ttl_ms", Long.parseLong(t[0]) * 3_600_000L);
        m.put("update_type", t[1].isEmpty() ? "OnCreateAndWrite" : "OnReadAndWrite");
        m.put("state_visibility", t[2].isEmpty() ? "NeverReturnExpired" : "ReturnExpiredIfNotCleanedUp");
        m.put("cleanup", t[3].isEmpty() ? "default" : t[3].toLowerCase(Locale.ROOT));
        return m;
    }
}
