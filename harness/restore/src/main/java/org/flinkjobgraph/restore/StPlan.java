package org.flinkjobgraph.restore;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * One statetypes case as data, deterministic in its seed: job v1 (the description StJob reads),
 * how it is snapshotted, and the edit users make for v2 (a type edit: key type, a user class
 * variant, a state's declared type or kind, a state renamed / added / removed; or an ordinary
 * edit: parallelism, max parallelism, a name, a uid, an operator inserted or removed; or none).
 */
final class StPlan {
    static final List<String> VALUE_TYPES = List.of(
            "LONG", "STRING", "POJO", "POJO_COLL", "GENERIC", "ENUM", "TUPLE2", "ROW", "LIST_HINT", "MAP_HINT", "AVRO");
    static final List<String> KEY_TYPES = List.of("LONG", "STRING", "TUPLE2", "POJO");
    /** The keyed states' kinds (declared by the job's keyed function). */
    static final List<String> KEYED_KINDS = List.of("VALUE", "LIST", "MAP", "REDUCING", "AGGREGATING");
    /** Where the keyed function registers its states (open(), first record, initializeState, a hook open() calls). */
    static final List<String> REGISTRATIONS = List.of("open", "lazy", "init", "hook");
    /** value type -> the user class it is made of */
    static final Map<String, String> CLASS_OF = Map.of("POJO", "PojoV", "POJO_COLL", "PojoColl", "GENERIC", "Gen", "ENUM", "Color", "AVRO", "AvroRec");

    // ------------------------------------------------------------------ the program

    /** One segment of the description: kind, fields in order, and (keyed) its states. */
    static final class Seg {
        final String kind;
        final LinkedHashMap<String, String> f = new LinkedHashMap<>();
        final List<String[]> states = new ArrayList<>();

        Seg(String kind) {
            this.kind = kind;
        }

        Seg put(String k, Object v) {
            f.put(k, String.valueOf(v));
            return this;
        }

        Seg copy() {
            Seg s = new Seg(kind);
            s.f.putAll(f);
            for (String[] st : states) {
                s.states.add(st.clone());
            }
            return s;
        }

        /** The operator's logical key (its uid when it has one in the base program). */
        String key() {
            switch (kind) {
                case "ost": return "opstate";
                case "keyed": return "keyed-1";
                case "win": return "win-1";
                case "bc": return "bc-1";
                default: return kind;
            }
        }

        String uid() {
            return f.get("uid");
        }

        /** uid, or #name: how the job's probes name the operator. */
        String probeId() {
            return f.containsKey("uid") ? f.get("uid") : "#" + f.get("name");
        }

        String describe() {
            StringBuilder sb = new StringBuilder(kind).append(':');
            boolean first = true;
            for (Map.Entry<String, String> e : f.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                sb.append(e.getKey()).append('=').append(e.getValue());
            }
            if (!states.isEmpty()) {
                sb.append(first ? "" : ",").append("states=");
                for (int i = 0; i < states.size(); i++) {
                    sb.append(i == 0 ? "" : "+").append(String.join("/", states.get(i)));
                }
            }
            return sb.toString();
        }

        boolean hasKey() {
            return kind.equals("keyed") || kind.equals("win") || kind.equals("bc");
        }
    }

    static final class Prog {
        final List<Seg> segs = new ArrayList<>();

        Prog copy() {
            Prog p = new Prog();
            for (Seg s : segs) {
                p.segs.add(s.copy());
            }
            return p;
        }

        Seg seg(String kind) {
            for (Seg s : segs) {
                if (s.kind.equals(kind)) {
                    return s;
                }
            }
            return null;
        }

        Seg byKey(String key) {
            for (Seg s : segs) {
                if (s.key().equals(key)) {
                    return s;
                }
            }
            return null;
        }

        String describe() {
            StringBuilder sb = new StringBuilder();
            for (Seg s : segs) {
                sb.append(sb.length() == 0 ? "" : ";").append(s.describe());
            }
            return sb.toString();
        }

        int parallelism(Seg s) {
            String p = s.f.get("p");
            return Integer.parseInt(p != null ? p : seg("env").f.get("p"));
        }

        int keys() {
            return Integer.parseInt(seg("env").f.get("keys"));
        }

        /** Every state the program registers (the window's and broadcast state included). */
        List<St> states() {
            List<St> out = new ArrayList<>();
            for (Seg s : segs) {
                switch (s.kind) {
                    case "ost":
                        out.add(new St(s, s.f.get("state"), "union".equals(s.f.get("mode")) ? "UNION_LIST" : "LIST",
                                s.f.get("type"), "operator", "initializeState", null).declared(s.f.get("style"), null));
                        break;
                    case "keyed":
                        for (String[] st : s.states) {
                            out.add(new St(s, st[0], st[1], st[2], "keyed", s.f.get("reg"), s.f.get("key"))
                                    .declared(st.length > 3 ? st[3] : null, st.length > 4 && !st[4].equals("-") ? st[4] : null));
                        }
                        break;
                    case "win":
                        out.add(new St(s, "window-contents", "reduce".equals(s.f.get("fn")) ? "REDUCING" : "AGGREGATING",
                                s.f.get("type"), "keyed", "window operator", s.f.get("key"))
                                .declared(s.f.containsKey("style") ? "window_operator:" + s.f.get("style") : null, null));
                        break;
                    case "bc":
                        out.add(new St(s, s.f.get("state"), "BROADCAST", s.f.get("type"), "broadcast", "open", s.f.get("key"))
                                .declared(s.f.get("style"), null));
                        break;
                    default:
                }
            }
            return out;
        }
    }

    /** One state of a program. */
    static final class St {
        final Seg seg;
        final String name;
        final String kind;
        final String type;
        final String backend;
        final String registration;
        final String keyType;
        /** "style:expr" of the declaration (StStyles); null in programs of the sets before seed 41. */
        String style;
        /** TTL code (StStyles.drawTtl) or null. */
        String ttl;

        St(Seg seg, String name, String kind, String type, String backend, String registration, String keyType) {
            this.seg = seg;
            this.name = name;
            this.kind = kind;
            this.type = type;
            this.backend = backend;
            this.registration = registration;
            this.keyType = keyType;
        }

        St declared(String style, String ttl) {
            this.style = style;
            this.ttl = ttl;
            return this;
        }

        String probeKey() {
            return seg.probeId() + "|" + name;
        }

        /** How many distinct keys / instances the state is written for and read by. */
        int expected(Prog p) {
            return backend.equals("keyed") ? p.keys() : p.parallelism(seg);
        }
    }

    /** The program a description names (the inverse of Prog.describe). */
    static Prog parse(String desc) {
        Prog p = new Prog();
        for (String part : desc.split(";")) {
            int colon = part.indexOf(':');
            Seg s = new Seg(part.substring(0, colon));
            String rest = part.substring(colon + 1);
            if (!rest.isEmpty()) {
                for (String kv : rest.split(",")) {
                    int eq = kv.indexOf('=');
                    String k = kv.substring(0, eq);
                    String v = kv.substring(eq + 1);
                    if (k.equals("states")) {
                        for (String st : v.split("\\+")) {
                            s.states.add(st.split("/"));
                        }
                    } else {
                        s.f.put(k, v);
                    }
                }
            }
            p.segs.add(s);
        }
        return p;
    }

    // ------------------------------------------------------------------ the case

    String caseId;
    String set;
    long caseSeed;
    Prog v1;
    Prog v2;
    String jarV1 = "base";
    String jarV2 = "base";
    final Map<String, Object> runtime = new LinkedHashMap<>();
    final List<Object> edits = new ArrayList<>();
    final Map<String, Object> subject = new LinkedHashMap<>();

    static String lower(String s) {
        return s.toLowerCase(Locale.ROOT);
    }

    static <T> T pick(Random r, List<T> l) {
        return l.get(r.nextInt(l.size()));
    }

    static String pickOther(Random r, List<String> l, String not) {
        List<String> c = new ArrayList<>(l);
        c.remove(not);
        return pick(r, c);
    }

    static Prog randomProgram(Random r, String name) {
        Prog p = new Prog();
        p.segs.add(new Seg("env").put("name", name).put("p", 1 + r.nextInt(3)).put("rate", 300).put("keys", 4 + r.nextInt(5)));
        p.segs.add(new Seg("src").put("uid", "src").put("name", "Numbers"));
        if (r.nextInt(100) < 30) {
            String t = pick(r, VALUE_TYPES);
            Seg s = new Seg("ost");
            if (r.nextInt(100) < 85) {
                s.put("uid", "opstate");
            }
            s.put("name", "Buffer").put("type", t).put("state", "buffer_" + lower(t)).put("mode", r.nextInt(100) < 70 ? "split" : "union")
                    .put("style", StStyles.draw(r, t));
            p.segs.add(s);
        }
        Seg k = new Seg("keyed");
        if (r.nextInt(100) < 90) {
            k.put("uid", "keyed-1");
        }
        k.put("name", "Agg1").put("key", pick(r, KEY_TYPES)).put("reg", REGISTRATIONS.get(weighted(r, 40, 20, 20, 20)));
        if (r.nextBoolean()) {
            k.put("timers", 1);
        }
        int n = r.nextInt(100) < 45 ? 1 : r.nextInt(100) < 75 ? 2 : 3;
        while (k.states.size() < n) {
            addRandomState(r, k);
        }
        p.segs.add(k);
        if (r.nextInt(100) < 25) {
            Seg w = new Seg("win");
            if (r.nextInt(100) < 90) {
                w.put("uid", "win-1");
            }
            String t = pick(r, VALUE_TYPES);
            w.put("name", "Win1").put("key", pick(r, KEY_TYPES)).put("fn", r.nextBoolean() ? "aggregate" : "reduce")
                    .put("assigner", r.nextInt(100) < 70 ? "tumbling" : "global").put("type", t)
                    .put("style", pick(r, windowExprs(t, "base", "base")));
            p.segs.add(w);
        }
        if (r.nextInt(100) < 20) {
            String t = pick(r, VALUE_TYPES);
            Seg b = new Seg("bc");
            if (r.nextInt(100) < 90) {
                b.put("uid", "bc-1");
            }
            b.put("name", "Rules").put("key", pick(r, KEY_TYPES)).put("type", t).put("state", "rules_" + lower(t))
                    .put("style", StStyles.draw(r, t));
            p.segs.add(b);
        }
        return p;
    }

    /** The window state's type expressions in main() (no descriptor there: no class literal). */
    static List<String> windowExprs(String type, String jarV1, String jarV2) {
        List<String> out = new ArrayList<>(StStyles.exprs(type, jarV1, jarV2));
        out.remove("class");
        return out;
    }

    /** A keyed state of a random kind and type, declared in a random style, 20 % with TTL. */
    static String[] addRandomState(Random r, Seg k) {
        for (int tries = 0; tries < 50; tries++) {
            String kind = KEYED_KINDS.get(weighted(r, 30, 20, 20, 15, 15));
            String type = pick(r, VALUE_TYPES);
            String name = lower(kind) + "_" + lower(type);
            boolean taken = false;
            for (String[] s : k.states) {
                taken |= s[0].equals(name);
            }
            if (!taken) {
                String[] st = {name, kind, type, StStyles.draw(r, type), r.nextInt(100) < 20 ? StStyles.drawTtl(r) : "-"};
                k.states.add(st);
                return st;
            }
        }
        throw new IllegalStateException("no free state name");
    }

    /** Each state's style as far as its type and the case's jars allow it (StStyles.fit). */
    static void fitStyles(Prog p, String jarV1, String jarV2) {
        for (Seg s : p.segs) {
            switch (s.kind) {
                case "keyed":
                    for (String[] st : s.states) {
                        st[3] = StStyles.fit(st[3], st[2], jarV1, jarV2);
                    }
                    break;
                case "ost":
                case "bc":
                    s.put("style", StStyles.fit(s.f.get("style"), s.f.get("type"), jarV1, jarV2));
                    break;
                case "win": {
                    List<String> ok = windowExprs(s.f.get("type"), jarV1, jarV2);
                    if (!ok.contains(s.f.get("style"))) {
                        String now = null;
                        for (String x : StStyles.EXPRS) {
                            if (now == null && ok.contains(x)) {
                                now = x;
                            }
                        }
                        s.put("style", now);
                    }
                    break;
                }
                default:
            }
        }
    }

    /** Sets a state's value type in v1 (before v2 is copied), renaming it after its kind and type. */
    static void retypeInV1(St s, String type) {
        switch (s.seg.kind) {
            case "keyed":
                for (String[] st : s.seg.states) {
                    if (st[0].equals(s.name)) {
                        String name = lower(st[1]) + "_" + lower(type);
                        boolean taken = false;
                        for (String[] o : s.seg.states) {
                            taken |= o != st && o[0].equals(name);
                        }
                        st[0] = taken ? name + "_2" : name;
                        st[2] = type;
                    }
                }
                break;
            case "ost":
                s.seg.put("type", type).put("state", "buffer_" + lower(type));
                break;
            case "bc":
                s.seg.put("type", type).put("state", "rules_" + lower(type));
                break;
            default:
                s.seg.put("type", type);
        }
    }

    /** Records an edit: its type, target, then the given key / value pairs in order. */
    private void addEdit(String type, Object target, Object... keyValues) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("type", type);
        e.put("target", target);
        for (int i = 0; i < keyValues.length; i += 2) {
            e.put((String) keyValues[i], keyValues[i + 1]);
        }
        edits.add(e);
    }

    /** The states of {@code states} that {@code test} accepts, in order. */
    private static List<St> where(List<St> states, java.util.function.Predicate<St> test) {
        List<St> out = new ArrayList<>();
        for (St x : states) {
            if (test.test(x)) {
                out.add(x);
            }
        }
        return out;
    }

    /** Sets field {@code index} (0 name, 1 kind, 2 value type) of the keyed state named {@code name}. */
    private static void setKeyedState(Seg seg, String name, int index, String value) {
        for (String[] st : seg.states) {
            if (st[0].equals(name)) {
                st[index] = value;
            }
        }
    }

    static int weighted(Random r, int... w) {
        int total = 0;
        for (int x : w) {
            total += x;
        }
        int x = r.nextInt(total);
        for (int i = 0; i < w.length; i++) {
            x -= w[i];
            if (x < 0) {
                return i;
            }
        }
        return w.length - 1;
    }

    static final String[] CATEGORIES = {
        "none", "key_type", "class", "value_type", "state_kind", "rename_state", "add_state", "remove_state", "ordinary",
        "ttl", "restyle"
    };

    /**
     * The user-class variants the same-line sets walk through (every third case): the ones that
     * change what a declaration's type means for the saved values (POJO fields renamed, removed,
     * retyped; Avro schemas evolved compatibly or not; a Kryo class that gained a field) twice per
     * round (every variant once, then those again), the others once.
     */
    static List<String> variantCycle() {
        List<String> decl = List.of("PojoV-rename", "PojoV-remove", "PojoV-retype", "AvroRec-add", "AvroRec-remove",
                "AvroRec-retype", "AvroRec-nodefault", "Gen-add");
        List<String> out = new ArrayList<>(StClasses.jarVariants());
        out.remove("base");
        out.addAll(decl);
        return out;
    }

    /**
     * The case for (seed, index, attempt). Both kinds of sets weigh the edits of the declarations
     * (value type, kind, name, TTL, a state added or removed, the style of a declaration, user
     * classes) over the others, which all stay represented. In same-line sets every third index is
     * a user-class edit that walks through the class variants in turn ({@link #variantCycle}); the
     * others draw their edit at random; in cross sets every sixth case walks through the class
     * variants that change a declaration's meaning; in both every fifteenth case walks through the
     * ordinary edits. Retries (another attempt's seed) keep the index's stratum.
     */
    static StPlan make(String caseId, String set, long caseSeed, int index) {
        Random r = new Random(caseSeed);
        StPlan c = new StPlan();
        c.caseId = caseId;
        c.set = set;
        c.caseSeed = caseSeed;
        c.v1 = randomProgram(r, caseId);
        c.randomRuntime(r);
        if (set.equals("same") && index % 3 == 0) {
            List<String> variants = variantCycle();
            c.forcedVariant = variants.get((index / 3) % variants.size());
            c.applyEdit(r, "class");
        } else if (set.equals("cross") && index % 6 == 3) {
            // cross sets: every sixth case one of the class variants that change what a
            // declaration means for the saved values, in turn
            List<String> variants = variantCycle();
            variants = variants.subList(StClasses.jarVariants().size() - 1, variants.size());
            c.forcedVariant = variants.get((index / 6) % variants.size());
            c.applyEdit(r, "class");
        } else if (index % 15 == 1) {
            // every fifteenth case (never one of the strata above) an ordinary edit, each kind in
            // turn, so that every kind is in every set however few ordinary edits the draw gives
            c.forcedOrdinary = (index / 15) % 6;
            c.applyEdit(r, "ordinary");
        } else {
            // none, key_type, class, value_type, state_kind, rename_state, add_state, remove_state, ordinary, ttl, restyle
            int cat = set.equals("same")
                    ? weighted(r, 3, 5, 8, 13, 12, 9, 7, 8, 8, 15, 12)
                    : weighted(r, 10, 3, 12, 11, 10, 8, 6, 7, 9, 13, 11);
            c.applyEdit(r, CATEGORIES[cat]);
        }
        fitStyles(c.v1, c.jarV1, c.jarV2);
        fitStyles(c.v2, c.jarV1, c.jarV2);
        return c;
    }

    /** A user-class variant the stratum prescribes (null: drawn at random). */
    String forcedVariant;

    /** An ordinary edit's kind the stratum prescribes (index into {@link #ordinary}'s kinds; null: drawn). */
    Integer forcedOrdinary;

    void randomRuntime(Random r) {
        String backend = r.nextBoolean() ? "hashmap" : "rocksdb";
        int t = r.nextInt(100);
        String takenBy = t < 40 ? "stop-with-savepoint" : t < 80 ? "trigger-savepoint+cancel" : "retained-checkpoint";
        boolean incremental = backend.equals("rocksdb") && takenBy.equals("retained-checkpoint") && r.nextBoolean();
        runtime.put("state_backend", backend);
        runtime.put("savepoint_format", takenBy.equals("retained-checkpoint") ? null : r.nextBoolean() ? "CANONICAL" : "NATIVE");
        // incremental checkpoints mostly with file state: their SST files then sit in the job's
        // shared/ folder (as with Flink's default threshold), not inline in _metadata
        runtime.put("inline_threshold", r.nextInt(100) < (incremental ? 75 : 40) ? "0b" : "1mb");
        runtime.put("taken_by", takenBy);
        runtime.put("incremental", incremental);
        if (takenBy.equals("retained-checkpoint")) {
            runtime.put("checkpoints_taken", 1 + r.nextInt(2));
        }
    }

    private void setSubject(String label, St s) {
        subject.put("edit", label);
        subject.put("backend", s.backend);
        subject.put("state_kind", s.kind);
        subject.put("value_type", s.type);
        subject.put("key_type", s.keyType);
        subject.put("state", s.probeKey());
        subject.put("style", s.style);
        subject.put("ttl", s.ttl);
    }

    private St find(Prog p, String probeKeyOfV1State) {
        for (St s : p.states()) {
            if (s.probeKey().equals(probeKeyOfV1State)) {
                return s;
            }
        }
        return null;
    }

    void applyEdit(Random r, String category) {
        List<St> states = v1.states();
        St s = pick(r, states);
        switch (category) {
            case "key_type": {
                List<St> keyed = where(states, x -> x.keyType != null);
                s = pick(r, keyed);
                v2 = v1.copy();
                Seg seg = v2.byKey(s.seg.key());
                String old = seg.f.get("key");
                String now = pickOther(r, KEY_TYPES, old);
                seg.put("key", now);
                addEdit("change_key_type", s.seg.key(), "old", old, "new", now);
                setSubject("key_type", s);
                break;
            }
            case "class": {
                String variant;
                String cls;
                if (forcedVariant != null) {
                    variant = forcedVariant;
                    cls = variant.substring(0, variant.indexOf('-'));
                } else {
                    cls = List.of("PojoV", "PojoV", "PojoV", "PojoColl", "PojoColl", "Gen", "Gen", "Color", "Color", "PojoK",
                            "AvroRec", "AvroRec").get(r.nextInt(12));
                    List<String> variants = new ArrayList<>(StClasses.CLASSES.get(cls).keySet());
                    variants.remove("base");
                    variant = cls + "-" + pick(r, variants);
                }
                boolean reverse = r.nextInt(100) < 25;
                if (cls.equals("PojoK")) {
                    List<St> keyed = where(states, x -> x.keyType != null);
                    s = pick(r, keyed);
                    s.seg.put("key", "POJO");
                } else {
                    String type = null;
                    for (Map.Entry<String, String> e : CLASS_OF.entrySet()) {
                        if (e.getValue().equals(cls)) {
                            type = e.getKey();
                        }
                    }
                    if (!type.equals(s.type)) {
                        retypeInV1(s, type);
                    }
                }
                String subjectKey = v1.states().get(states.indexOf(s)).probeKey();
                v2 = v1.copy();
                jarV1 = reverse ? variant : "base";
                jarV2 = reverse ? "base" : variant;
                addEdit("change_user_class", cls, "old_jar", jarV1, "new_jar", jarV2, "reverse", reverse);
                setSubject("class:" + variant + (reverse ? "(reverse)" : ""), find(v1, subjectKey));
                break;
            }
            case "value_type": {
                v2 = v1.copy();
                St t = find(v2, s.probeKey());
                String now = pickOther(r, VALUE_TYPES, s.type);
                setType(t, now);
                addEdit("change_value_type", s.seg.key(), "state", s.name, "old", s.type, "new", now);
                setSubject("value_type", s);
                break;
            }
            case "state_kind": {
                List<St> c = where(states, x -> !x.kind.equals("BROADCAST"));
                s = pick(r, c);
                v2 = v1.copy();
                Seg seg = v2.byKey(s.seg.key());
                String now;
                switch (seg.kind) {
                    case "keyed":
                        now = pickOther(r, KEYED_KINDS, s.kind);
                        setKeyedState(seg, s.name, 1, now);
                        break;
                    case "ost":
                        now = s.kind.equals("LIST") ? "UNION_LIST" : "LIST";
                        seg.put("mode", now.equals("LIST") ? "split" : "union");
                        break;
                    default:
                        now = s.kind.equals("REDUCING") ? "AGGREGATING" : "REDUCING";
                        seg.put("fn", now.equals("REDUCING") ? "reduce" : "aggregate");
                }
                addEdit("change_state_kind", s.seg.key(), "state", s.name, "old", s.kind, "new", now);
                setSubject("state_kind", s);
                break;
            }
            case "rename_state": {
                List<St> c = where(states, x -> !x.seg.kind.equals("win"));
                s = pick(r, c);
                v2 = v1.copy();
                Seg seg = v2.byKey(s.seg.key());
                String now = s.name + "_v2";
                if (seg.kind.equals("keyed")) {
                    setKeyedState(seg, s.name, 0, now);
                } else {
                    seg.put("state", now);
                }
                addEdit("rename_state", s.seg.key(), "old", s.name, "new", now);
                setSubject("rename_state", s);
                break;
            }
            case "add_state": {
                v2 = v1.copy();
                Seg seg = v2.seg("keyed");
                String[] st = addRandomState(r, seg);
                addEdit("add_state", seg.key(), "state", st[0], "state_kind", st[1], "value_type", st[2]);
                setSubject("add_state", find(v2, seg.probeId() + "|" + st[0]));
                break;
            }
            case "remove_state": {
                Seg k = v1.seg("keyed");
                if (k.states.size() < 2) {
                    addRandomState(r, k);
                }
                String[] gone = pick(r, k.states);
                St removed = find(v1, k.probeId() + "|" + gone[0]);
                v2 = v1.copy();
                v2.seg("keyed").states.removeIf(st -> st[0].equals(gone[0]));
                addEdit("remove_state", k.key(), "state", gone[0]);
                setSubject("remove_state", removed);
                break;
            }
            case "ordinary": {
                v2 = v1.copy();
                String label = ordinary(r, s);
                setSubject(label, s);
                break;
            }
            case "ttl": {
                List<St> keyed = where(states, x -> x.seg.kind.equals("keyed"));
                s = pick(r, keyed);
                int how = weighted(r, 40, 30, 30); // on, off, changed
                if (how > 0 && s.ttl == null) { // v1 gets a TTL to switch off or change
                    String ttl = StStyles.drawTtl(r);
                    setKeyedState(s.seg, s.name, 4, ttl);
                    s = find(v1, s.probeKey());
                } else if (how == 0 && s.ttl != null) {
                    setKeyedState(s.seg, s.name, 4, "-");
                    s = find(v1, s.probeKey());
                }
                v2 = v1.copy();
                String now = how == 0 ? StStyles.drawTtl(r) : how == 1 ? null : StStyles.changeTtl(r, s.ttl);
                setKeyedState(v2.byKey(s.seg.key()), s.name, 4, now == null ? "-" : now);
                addEdit("change_ttl", s.seg.key(), "state", s.name, "old", s.ttl, "new", now);
                setSubject(how == 0 ? "ttl_on" : how == 1 ? "ttl_off" : "ttl_changed", s);
                break;
            }
            case "restyle": {
                // a window state declared with the only expression its type has keeps it
                s = pick(r, where(states, x -> !x.seg.kind.equals("win") || windowExprs(x.type, jarV1, jarV2).size() > 1));
                v2 = v1.copy();
                Seg seg = v2.byKey(s.seg.key());
                if (seg.kind.equals("keyed") && r.nextInt(100) < 25) {
                    String old = seg.f.get("reg");
                    String now = pickOther(r, REGISTRATIONS, old);
                    seg.put("reg", now);
                    addEdit("change_registration", seg.key(), "old", old, "new", now);
                    setSubject("change_registration", s);
                    break;
                }
                String now;
                if (seg.kind.equals("win")) {
                    now = pickOther(r, windowExprs(s.type, jarV1, jarV2), seg.f.get("style"));
                    seg.put("style", now);
                } else {
                    now = StStyles.drawOther(r, s.style, s.type, jarV1, jarV2);
                    if (seg.kind.equals("keyed")) {
                        setKeyedState(seg, s.name, 3, now);
                    } else {
                        seg.put("style", now);
                    }
                }
                addEdit("change_declaration_style", s.seg.key(), "state", s.name, "old",
                        seg.kind.equals("win") ? s.seg.f.get("style") : s.style, "new", now);
                setSubject("restyle", s);
                break;
            }
            default: {
                v2 = v1.copy();
                setSubject("none", s);
            }
        }
        // now and then a harmless edit on top (as the vectors: a type edit plus a rename or rescale)
        if (!category.equals("none") && !category.equals("ordinary") && r.nextInt(100) < 15) {
            Seg k = v2.seg("keyed");
            if (k.uid() != null && r.nextBoolean()) {
                rename(k);
            } else {
                rescale(r, v2.seg("env"), "env");
            }
        }
    }

    private static void setType(St t, String type) {
        if (t.seg.kind.equals("keyed")) {
            setKeyedState(t.seg, t.name, 2, type);
        } else {
            t.seg.put("type", type);
        }
    }

    private void rename(Seg seg) {
        String old = seg.f.get("name");
        seg.put("name", old + "V2");
        addEdit("rename_op", seg.uid(), "old", old, "new", old + "V2");
    }

    private void rescale(Random r, Seg seg, String target) {
        int old = Integer.parseInt(seg.f.containsKey("p") ? seg.f.get("p") : v2.seg("env").f.get("p"));
        int now = old == 1 ? 2 + r.nextInt(2) : r.nextBoolean() ? 1 : old == 2 ? 3 : 2;
        seg.put("p", now);
        addEdit("change_parallelism", target, "old", old, "new", now);
    }

    /** Ordinary (non-type) edits on v2; returns the subject label. */
    private String ordinary(Random r, St s) {
        int k = forcedOrdinary != null ? forcedOrdinary : weighted(r, 30, 15, 15, 15, 12, 13);
        Seg keyed = v2.seg("keyed");
        switch (k) {
            case 0: {
                if (r.nextBoolean()) {
                    rescale(r, keyed, keyed.key());
                } else {
                    rescale(r, v2.seg("env"), "env");
                }
                return "change_parallelism";
            }
            case 1:
                rename(keyed);
                return "rename_op";
            case 2: {
                v2.segs.add(v2.segs.indexOf(keyed), new Seg("map").put("name", "Tap"));
                addEdit("insert_stateless", "Tap", "before", keyed.key());
                return "insert_stateless";
            }
            case 3: {
                Seg seg = r.nextBoolean() ? keyed : v2.seg("env");
                String target = seg.kind.equals("env") ? "env" : seg.key();
                seg.put("maxp", 256);
                addEdit("change_max_parallelism", target, "old", null, "new", 256);
                return "change_max_parallelism";
            }
            case 4: {
                Seg seg = v2.byKey(s.seg.key());
                String old = seg.uid();
                String now = (old == null ? seg.key() : old) + "-v2";
                seg.put("uid", now);
                if (old == null) { // keep the uid right after the kind, where the program puts it
                    String name = seg.f.remove("name");
                    LinkedHashMap<String, String> rest = new LinkedHashMap<>(seg.f);
                    seg.f.clear();
                    seg.f.put("uid", now);
                    seg.f.put("name", name);
                    rest.remove("uid");
                    seg.f.putAll(rest);
                }
                addEdit("change_uid", seg.key(), "old", old, "new", now);
                return "change_uid";
            }
            default: {
                List<Seg> removable = new ArrayList<>();
                for (Seg x : v2.segs) {
                    if (x.kind.equals("ost") || x.kind.equals("win") || x.kind.equals("bc")) {
                        removable.add(x);
                    }
                }
                Seg gone = removable.isEmpty() ? keyed : pick(r, removable);
                v2.segs.remove(gone);
                addEdit("remove_op", gone.key());
                return "remove_op";
            }
        }
    }
}
