package org.flinkjobgraph.restore;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * A random executable stateful program as plain data (so that v1 can be copied and edited the way
 * users edit jobs, then built again). A program is a main pipeline source -> operators -> sink;
 * a UNION node merges a side branch (its own source and operators) into the main pipeline.
 */
public final class Program {

    static final List<String> SOURCES = Arrays.asList("SRC_FLIP27", "SRC_FLIP27", "SRC_LEGACY", "SRC_LEGACY_SINGLE");
    static final List<String> STATELESS = Arrays.asList("MAP", "FILTER", "FLATMAP", "PROCESS");
    static final List<String> KEYED = Arrays.asList("KCOUNT", "KHIST", "KRECENT", "REDUCE", "WTUMBLE", "WCOUNT");
    static final List<String> OPSTATE = Arrays.asList("BUFFER", "BUFFER_UNION");
    static final List<String> PARTITIONS = Arrays.asList("REBALANCE", "RESCALE", "SHUFFLE");
    static final List<String> SINKS = Arrays.asList("SINK_DISCARD", "SINK_DISCARD", "SINK_LEGACY", "SINK_STATEFUL");
    static final List<String> NAMES = Arrays.asList(
            "Sensor Readings", "Orders", "Users CDC", "Clicks", "Geo IP", "Parse", "Enrich", "Filter Bots",
            "Sessionize", "Dedup", "Format", "Aggregate", "Audit", "Score");
    static final List<String> UID_WORDS = Arrays.asList(
            "rules", "sessions", "dedup", "agg", "counter", "orders", "lookup", "buffer", "window", "enrich");

    /** One logical operator of the program. */
    public static final class Node implements Cloneable {
        public String id;
        public String kind;
        public String name;
        public String uid;
        public String uidHash;
        public int par = -1;
        public int maxPar = -1;
        public int keyMod;
        public String keyType; // "Long" | "String" for keyed kinds
        public int rate;
        public int count;
        public boolean startNewChain;
        public boolean disableChaining;
        public List<Node> branch; // UNION: the side branch, first node a source

        /** A copy to edit: every field, and the branch's nodes copied too. */
        Node copy() {
            Node n;
            try {
                n = (Node) super.clone();
            } catch (CloneNotSupportedException e) {
                throw new AssertionError(e);
            }
            if (branch != null) {
                n.branch = new ArrayList<>();
                for (Node b : branch) {
                    n.branch.add(b.copy());
                }
            }
            return n;
        }

        public boolean keyed() {
            return KEYED.contains(kind);
        }

        public boolean source() {
            return kind.startsWith("SRC_");
        }

        public boolean sink() {
            return kind.startsWith("SINK_");
        }

        /** Virtual (no StreamNode of its own): partitions and unions. */
        public boolean virtual() {
            return PARTITIONS.contains(kind) || kind.equals("UNION");
        }

        public boolean stateful() {
            return keyed() || OPSTATE.contains(kind) || source() || kind.equals("SINK_STATEFUL");
        }

        String describe() {
            StringBuilder sb = new StringBuilder(id).append(' ').append(kind);
            if (name != null) {
                sb.append(" name='").append(name).append('\'');
            }
            if (uid != null) {
                sb.append(" uid='").append(uid).append('\'');
            }
            if (uidHash != null) {
                sb.append(" uidHash=").append(uidHash);
            }
            if (par > 0) {
                sb.append(" par=").append(par);
            }
            if (maxPar > 0) {
                sb.append(" maxPar=").append(maxPar);
            }
            if (keyed()) {
                sb.append(" keyBy=v%").append(keyMod).append(':').append(keyType);
            }
            if (kind.equals("WCOUNT")) {
                sb.append(" count=").append(count);
            }
            if (source()) {
                sb.append(" rate=").append(rate).append("/s");
            }
            if (startNewChain) {
                sb.append(" startNewChain");
            }
            if (disableChaining) {
                sb.append(" disableChaining");
            }
            if (branch != null) {
                sb.append(" <- ").append(branch.get(0).id);
            }
            return sb.toString();
        }
    }

    public int envPar;
    public int envMaxPar = -1;
    public boolean chaining = true;
    public List<Node> main = new ArrayList<>();
    int nextId;
    int nextUid;

    public Program copy() {
        Program p = new Program();
        p.envPar = envPar;
        p.envMaxPar = envMaxPar;
        p.chaining = chaining;
        for (Node n : main) {
            p.main.add(n.copy());
        }
        p.nextId = nextId;
        p.nextUid = nextUid;
        return p;
    }

    /** Every node, main pipeline first, each branch right after its UNION node. */
    public List<Node> allNodes() {
        List<Node> out = new ArrayList<>();
        for (Node n : main) {
            out.add(n);
            if (n.branch != null) {
                out.addAll(n.branch);
            }
        }
        return out;
    }

    Node byUid(String uid) {
        for (Node n : allNodes()) {
            if (uid.equals(n.uid)) {
                return n;
            }
        }
        return null;
    }

    public Node byId(String id) {
        for (Node n : allNodes()) {
            if (n.id.equals(id)) {
                return n;
            }
        }
        return null;
    }

    public List<String> describe() {
        List<String> out = new ArrayList<>();
        StringBuilder env = new StringBuilder("env parallelism=").append(envPar);
        if (envMaxPar > 0) {
            env.append(" maxParallelism=").append(envMaxPar);
        }
        if (!chaining) {
            env.append(" disableOperatorChaining");
        }
        out.add(env.toString());
        for (Node n : main) {
            out.add("main: " + n.describe());
            if (n.branch != null) {
                for (Node b : n.branch) {
                    out.add("main/" + n.branch.get(0).id + ": " + b.describe());
                }
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ generation

    static <T> T pick(Random r, List<T> l) {
        return l.get(r.nextInt(l.size()));
    }

    /** A uid no node of this program has (Flink rejects duplicate uids while building the graph). */
    String freshUid(Random r) {
        String u = pick(r, UID_WORDS) + (r.nextInt(4) == 0 ? "-op" : "-" + (++nextUid));
        for (Node n : allNodes()) {
            if (u.equals(n.uid)) {
                return pick(r, UID_WORDS) + "-" + (++nextUid);
            }
        }
        return u;
    }

    static String randomHash(Random r) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 32; i++) {
            sb.append(Character.forDigit(r.nextInt(16), 16));
        }
        return sb.toString();
    }

    /** The configured max parallelism that applies to {@code n} (-1 = none). */
    int configuredMaxPar(Node n) {
        return n.maxPar > 0 ? n.maxPar : envMaxPar;
    }

    Node newNode(Random r, String kind, boolean withExtras) {
        Node n = new Node();
        n.id = "n" + (nextId++);
        n.kind = kind;
        if (n.source()) {
            n.name = pick(r, NAMES);
            n.rate = pick(r, Arrays.asList(20, 40, 60, 100));
            if (kind.equals("SRC_LEGACY_SINGLE")) {
                n.par = 1;
            }
        } else if (n.sink()) {
            n.name = pick(r, Arrays.asList("out", "Kafka Sink", "Audit Sink", "Print"));
        } else if (r.nextInt(10) < 2 && !n.virtual()) {
            n.name = pick(r, NAMES);
        }
        if (n.keyed()) {
            n.keyMod = pick(r, Arrays.asList(5, 7, 11, 16, 100));
            n.keyType = r.nextInt(4) == 0 ? "String" : "Long";
            if (kind.equals("WCOUNT")) {
                n.count = 2 + r.nextInt(4);
            }
        }
        if (n.virtual() || !withExtras) {
            return n;
        }
        if (r.nextInt(100) < 45) {
            n.uid = freshUid(r);
        }
        if (r.nextInt(100) < 6 && !kind.equals("SINK_DISCARD") && !kind.equals("SINK_STATEFUL")) {
            n.uidHash = randomHash(r);
        }
        if (!kind.equals("SRC_LEGACY_SINGLE") && r.nextInt(100) < 20) {
            n.par = 1 + r.nextInt(4);
        }
        if (!n.sink() && r.nextInt(100) < 8) {
            n.maxPar = pick(r, Arrays.asList(4, 8, 32, 64, 256));
        }
        if (!n.source() && r.nextInt(100) < 6) {
            n.startNewChain = true;
        } else if (r.nextInt(100) < 4) {
            n.disableChaining = true;
        }
        return n;
    }

    /** Clamp node parallelism to its configured max parallelism (Flink rejects p > max p). */
    void fix() {
        for (Node n : allNodes()) {
            int mp = configuredMaxPar(n);
            int p = n.par > 0 ? n.par : envPar;
            if (mp > 0 && p > mp) {
                n.par = mp;
            }
        }
    }

    String randomMiddleKind(Random r) {
        int x = r.nextInt(100);
        if (x < 35) {
            return pick(r, STATELESS);
        } else if (x < 70) {
            return pick(r, KEYED);
        } else if (x < 82) {
            return pick(r, OPSTATE);
        } else if (x < 92) {
            return pick(r, PARTITIONS);
        }
        return "UNION";
    }

    public static Program random(Random r) {
        Program p = new Program();
        p.envPar = 1 + r.nextInt(4);
        if (r.nextInt(100) < 10) {
            p.envMaxPar = pick(r, Arrays.asList(64, 128, 1024));
        }
        if (r.nextInt(100) < 5) {
            p.chaining = false;
        }
        p.main.add(p.newNode(r, pick(r, SOURCES), true));
        int middle = 2 + r.nextInt(7);
        boolean union = false;
        for (int i = 0; i < middle; i++) {
            String k = p.randomMiddleKind(r);
            if (k.equals("UNION")) {
                if (union) {
                    k = "MAP";
                } else {
                    union = true;
                    Node u = p.newNode(r, "UNION", false);
                    u.branch = new ArrayList<>();
                    u.branch.add(p.newNode(r, pick(r, SOURCES), true));
                    if (r.nextBoolean()) {
                        u.branch.add(p.newNode(r, r.nextBoolean() ? pick(r, STATELESS) : pick(r, OPSTATE), true));
                    }
                    p.main.add(u);
                    continue;
                }
            }
            p.main.add(p.newNode(r, k, true));
        }
        p.main.add(p.newNode(r, pick(r, SINKS), true));
        p.fix();
        return p;
    }

    // ------------------------------------------------------------------ edits

    /** Nodes an edit may target: real operators of the main pipeline and of branches. */
    List<Node> real() {
        List<Node> out = new ArrayList<>();
        for (Node n : allNodes()) {
            if (!n.virtual()) {
                out.add(n);
            }
        }
        return out;
    }

    /** Main-pipeline positions strictly between the source and the sink. */
    List<Integer> middlePositions() {
        List<Integer> out = new ArrayList<>();
        for (int i = 1; i < main.size() - 1; i++) {
            out.add(i);
        }
        return out;
    }

    /** The edit of one value: {@link #edit} with "old" and "new". */
    static Map<String, Object> change(String type, Node target, Object old, Object now) {
        Map<String, Object> e = edit(type, target);
        e.put("old", old);
        e.put("new", now);
        return e;
    }

    static Map<String, Object> edit(String type, Node target) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("type", type);
        if (target != null) {
            e.put("target", target.id);
            e.put("target_kind", target.kind);
        } else {
            e.put("target", "env");
        }
        return e;
    }

    /** Applies one random user edit in place and describes it; null when none applied. */
    public Map<String, Object> randomEdit(Random r) {
        String[] types = {
            "change_parallelism", "change_parallelism", "change_max_parallelism", "add_stateful", "insert_stateless",
            "insert_stateless", "remove_op", "swap", "add_uid", "remove_uid", "change_uid", "rename", "chaining",
            "change_keyby"
        };
        String type = types[r.nextInt(types.length)];
        List<Node> real = real();
        switch (type) {
            case "change_parallelism": {
                if (r.nextInt(3) == 0) {
                    int old = envPar;
                    envPar = pickOther(r, envPar, 1, 6);
                    return change(type, null, old, envPar);
                }
                Node n = pick(r, real);
                if (n.kind.equals("SRC_LEGACY_SINGLE")) {
                    return null;
                }
                int old = n.par;
                n.par = pickOther(r, n.par, 1, 6);
                return change(type, n, old, n.par);
            }
            case "change_max_parallelism": {
                List<Integer> values = Arrays.asList(-1, 4, 8, 32, 64, 128, 256, 1024);
                if (r.nextInt(4) == 0) {
                    int old = envMaxPar;
                    envMaxPar = pickOtherOf(r, envMaxPar, values);
                    return change(type, null, old, envMaxPar);
                }
                Node n = pick(r, real);
                int old = n.maxPar;
                n.maxPar = pickOtherOf(r, n.maxPar, values);
                return change(type, n, old, n.maxPar);
            }
            case "add_stateful":
            case "insert_stateless": {
                String kind = type.equals("add_stateful")
                        ? (r.nextInt(4) == 0 ? pick(r, OPSTATE) : pick(r, KEYED))
                        : pick(r, STATELESS);
                Node n = newNode(r, kind, true);
                int pos = pick(r, middlePositions().isEmpty() ? Arrays.asList(1) : withEnd(middlePositions()));
                main.add(pos, n);
                Map<String, Object> e = edit(type, n);
                e.put("where", "before");
                e.put("neighbour", main.get(pos + 1).id);
                e.put("new_node", n.describe());
                return e;
            }
            case "remove_op": {
                List<Integer> pos = new ArrayList<>();
                for (int i : middlePositions()) {
                    if (!main.get(i).kind.equals("UNION")) {
                        pos.add(i);
                    }
                }
                if (pos.isEmpty()) {
                    return null;
                }
                Node n = main.remove((int) pick(r, pos));
                return edit(type, n);
            }
            case "swap": {
                List<Integer> pos = new ArrayList<>();
                for (int i : middlePositions()) {
                    if (i + 1 < main.size() - 1) {
                        pos.add(i);
                    }
                }
                if (pos.isEmpty()) {
                    return null;
                }
                int i = pick(r, pos);
                Node a = main.get(i);
                Node b = main.get(i + 1);
                main.set(i, b);
                main.set(i + 1, a);
                Map<String, Object> e = edit(type, a);
                e.put("other", b.id);
                e.put("other_kind", b.kind);
                return e;
            }
            case "add_uid":
            case "remove_uid":
            case "change_uid": {
                List<Node> cands = new ArrayList<>();
                for (Node n : real) {
                    if ((n.uid == null) == type.equals("add_uid")) {
                        cands.add(n);
                    }
                }
                if (cands.isEmpty()) {
                    return null;
                }
                Node n = pick(r, cands);
                Map<String, Object> e = edit(type, n);
                if (type.equals("add_uid")) {
                    n.uid = freshUid(r);
                    e.put("uid", n.uid);
                } else if (type.equals("remove_uid")) {
                    e.put("old", n.uid);
                    n.uid = null;
                } else {
                    e.put("old", n.uid);
                    String renamed = n.uid + "_v2";
                    n.uid = r.nextBoolean() && byUid(renamed) == null ? renamed : freshUid(r);
                    e.put("new", n.uid);
                }
                return e;
            }
            case "rename": {
                Node n = pick(r, real);
                String old = n.name;
                n.name = pickOtherOf(r, n.name, NAMES);
                return change(type, n, old, n.name);
            }
            case "chaining": {
                if (r.nextInt(5) == 0) {
                    String old = chaining ? "enabled" : "disabled";
                    chaining = !chaining;
                    return change(type, null, old, chaining ? "enabled" : "disabled");
                }
                Node n = pick(r, real);
                Map<String, Object> e = edit(type, n);
                e.put("old", n.startNewChain ? "startNewChain" : n.disableChaining ? "disableChaining" : "default");
                if (n.startNewChain || n.disableChaining) {
                    n.startNewChain = false;
                    n.disableChaining = false;
                } else if (r.nextBoolean() && !n.source()) {
                    n.startNewChain = true;
                } else {
                    n.disableChaining = true;
                }
                e.put("new", n.startNewChain ? "startNewChain" : n.disableChaining ? "disableChaining" : "default");
                return e;
            }
            case "change_keyby": {
                List<Node> cands = new ArrayList<>();
                for (Node n : real) {
                    if (n.keyed()) {
                        cands.add(n);
                    }
                }
                if (cands.isEmpty()) {
                    return null;
                }
                Node n = pick(r, cands);
                Map<String, Object> e = edit(type, n);
                e.put("old", "v%" + n.keyMod + ":" + n.keyType);
                boolean typeChange = r.nextBoolean();
                if (typeChange) {
                    n.keyType = n.keyType.equals("Long") ? "String" : "Long";
                } else {
                    n.keyMod = pickOtherOf(r, n.keyMod, Arrays.asList(5, 7, 11, 16, 100));
                }
                e.put("key_type_changed", typeChange);
                e.put("new", "v%" + n.keyMod + ":" + n.keyType);
                return e;
            }
            default:
                throw new IllegalStateException(type);
        }
    }

    static List<Integer> withEnd(List<Integer> l) {
        List<Integer> out = new ArrayList<>(l);
        out.add(l.get(l.size() - 1) + 1);
        return out;
    }

    static int pickOther(Random r, int old, int lo, int hi) {
        for (int i = 0; i < 20; i++) {
            int v = lo + r.nextInt(hi - lo + 1);
            if (v != old) {
                return v;
            }
        }
        return old == lo ? hi : lo;
    }

    static <T> T pickOtherOf(Random r, T old, List<T> values) {
        for (int i = 0; i < 20; i++) {
            T v = pick(r, values);
            if (!v.equals(old)) {
                return v;
            }
        }
        return values.get(0);
    }
}
