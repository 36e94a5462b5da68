package org.flinkjobgraph.restore;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The Java source of one job's own code (the case jar: {@code StJob}, {@code KeyedFn},
 * {@code BufferFn}, {@code RulesFn}, {@code StateDecls}), generated from its program: every
 * state declaration is literal code in the style the program gives it (StStyles: a class literal,
 * a TypeHint, Types.*, TypeInformation.of(X.class), an explicit TypeInformation, a descriptor in
 * a static or instance field, built in a helper method of the function or in a generic helper
 * called with the name and type), registered where the program says (open(), the first record,
 * CheckpointedFunction.initializeState, a hook the base class's open() calls; operator state in
 * initializeState), with its TTL. The functions extend the hand-written bases of the support jar
 * (KeyedStateFn, OpStateFn, BcastFn), which write, read and probe the states they are handed.
 */
final class StCode {
    private final StPlan.Prog prog;
    private final boolean legacyApi;
    private final String label;
    /** helper_args overloads StateDecls needs: kind + ("Class" or "Info") + ("" or "Ttl"). */
    private final Set<String> helpers = new LinkedHashSet<>();
    private final Set<String> imports = new java.util.TreeSet<>();

    private StCode(StPlan.Prog prog, boolean legacyApi, String label) {
        this.prog = prog;
        this.legacyApi = legacyApi;
        this.label = label;
    }

    /** Simple class name -> source of the job's own classes. */
    static Map<String, String> sources(String description, boolean legacyApi, String label) {
        return new StCode(StPlan.parse(description), legacyApi, label).all();
    }

    /** How each state's declaration is held (inline in the registration, or a local variable). */
    static String holder(StPlan.St s) {
        String style = StStyles.style(s.style);
        if (!StStyles.DIRECT.containsKey(style)) {
            return style;
        }
        // with TTL the descriptor needs a name; else a stable half of the states are written inline
        return s.ttl != null || (s.name.hashCode() & 1) == 0 ? "local" : "inline";
    }

    /** helper_method: a static method for a stable half of the states, an instance method for the others. */
    static boolean staticHelper(StPlan.St s) {
        return (s.name.hashCode() & 2) == 0;
    }

    private Map<String, String> all() {
        Map<String, String> out = new TreeMap<>();
        List<StPlan.St> keyed = new ArrayList<>();
        StPlan.St ost = null;
        StPlan.St bc = null;
        StPlan.St win = null;
        StPlan.Seg keyedSeg = null;
        for (StPlan.St s : prog.states()) {
            switch (s.seg.kind) {
                case "keyed":
                    keyed.add(s);
                    keyedSeg = s.seg;
                    break;
                case "ost":
                    ost = s;
                    break;
                case "bc":
                    bc = s;
                    break;
                default:
                    win = s;
            }
        }
        if (keyedSeg != null) {
            out.put("KeyedFn", keyedFn(keyedSeg, keyed));
        }
        if (ost != null) {
            out.put("BufferFn", bufferFn(ost));
        }
        if (bc != null) {
            out.put("RulesFn", rulesFn(bc));
        }
        out.put("StJob", stJob(keyedSeg != null, ost != null, bc, win));
        if (!helpers.isEmpty()) {
            out.put("StateDecls", stateDecls());
        }
        return out;
    }

    // ------------------------------------------------------------------ types

    static String javaType(String type) {
        switch (type) {
            case "LONG": return "Long";
            case "STRING": return "String";
            case "POJO": return "PojoV";
            case "POJO_COLL": return "PojoColl";
            case "GENERIC": return "Gen";
            case "ENUM": return "Color";
            case "TUPLE2": return "Tuple2<Long, String>";
            case "ROW": return "Row";
            case "LIST_HINT": return "List<String>";
            case "MAP_HINT": return "Map<String, Long>";
            case "AVRO": return "GenericRecord";
            default: throw new IllegalArgumentException(type);
        }
    }

    private void importsFor(String type) {
        switch (type) {
            case "TUPLE2": imports.add("org.apache.flink.api.java.tuple.Tuple2"); break;
            case "ROW": imports.add("org.apache.flink.types.Row"); break;
            case "LIST_HINT": imports.add("java.util.List"); break;
            case "MAP_HINT": imports.add("java.util.Map"); break;
            case "AVRO": imports.add("org.apache.avro.generic.GenericRecord"); break;
            default:
        }
    }

    /** A TypeInformation expression of {@code type} ({@code expr} not "class"). */
    private String info(String type, String expr) {
        importsFor(type);
        switch (expr) {
            case "hint":
                imports.add("org.apache.flink.api.common.typeinfo.TypeHint");
                imports.add("org.apache.flink.api.common.typeinfo.TypeInformation");
                return "TypeInformation.of(new TypeHint<" + javaType(type) + ">() {})";
            case "tiof":
                imports.add("org.apache.flink.api.common.typeinfo.TypeInformation");
                return "TypeInformation.of(" + javaType(type) + ".class)";
            case "basic":
                imports.add("org.apache.flink.api.common.typeinfo.BasicTypeInfo");
                return "BasicTypeInfo." + type + "_TYPE_INFO";
            case "explicit":
                if (type.equals("ROW")) {
                    imports.add("org.apache.flink.api.java.typeutils.RowTypeInfo");
                    imports.add("org.apache.flink.api.common.typeinfo.Types");
                    return "new RowTypeInfo(Types.LONG, Types.STRING, Types.DOUBLE)";
                }
                imports.add("org.apache.flink.formats.avro.typeutils.GenericRecordAvroTypeInfo");
                return "new GenericRecordAvroTypeInfo(AvroRec.schema())";
            case "types":
                imports.add("org.apache.flink.api.common.typeinfo.Types");
                switch (type) {
                    case "LONG": return "Types.LONG";
                    case "STRING": return "Types.STRING";
                    case "POJO": return "Types.POJO(PojoV.class)";
                    case "POJO_COLL": return "Types.POJO(PojoColl.class)";
                    case "GENERIC": return "Types.GENERIC(Gen.class)";
                    case "ENUM": return "Types.ENUM(Color.class)";
                    case "TUPLE2": return "Types.TUPLE(Types.LONG, Types.STRING)";
                    case "ROW": return "Types.ROW(Types.LONG, Types.STRING, Types.DOUBLE)";
                    default: throw new IllegalArgumentException("no Types.* for " + type);
                }
            default:
                throw new IllegalArgumentException("no TypeInformation expression " + expr);
        }
    }

    /** The type argument of a descriptor constructor: a class literal or a TypeInformation. */
    private String typeArg(String type, String expr) {
        if (expr.equals("class")) {
            importsFor(type);
            return javaType(type) + ".class";
        }
        return info(type, expr);
    }

    /** The map states' user key (String) in the family of the value's expression. */
    private String keyArg(String expr) {
        switch (expr) {
            case "class": return "String.class";
            case "basic": return "BasicTypeInfo.STRING_TYPE_INFO";
            case "tiof": return "TypeInformation.of(String.class)";
            default:
                imports.add("org.apache.flink.api.common.typeinfo.Types");
                return "Types.STRING";
        }
    }

    static String descriptorClass(String kind) {
        switch (kind) {
            case "VALUE": return "ValueStateDescriptor";
            case "LIST":
            case "UNION_LIST":
                return "ListStateDescriptor";
            case "MAP":
            case "BROADCAST":
                return "MapStateDescriptor";
            case "REDUCING": return "ReducingStateDescriptor";
            case "AGGREGATING": return "AggregatingStateDescriptor";
            default: throw new IllegalArgumentException(kind);
        }
    }

    private static String descriptorType(String kind, String type) {
        String t = javaType(type);
        switch (kind) {
            case "MAP":
            case "BROADCAST":
                return "MapStateDescriptor<String, " + t + ">";
            case "AGGREGATING":
                return "AggregatingStateDescriptor<" + t + ", " + t + ", " + t + ">";
            default:
                return descriptorClass(kind) + "<" + t + ">";
        }
    }

    private static String stateType(String kind, String type) {
        String t = javaType(type);
        switch (kind) {
            case "VALUE": return "ValueState<" + t + ">";
            case "LIST":
            case "UNION_LIST":
                return "ListState<" + t + ">";
            case "MAP": return "MapState<String, " + t + ">";
            case "REDUCING": return "ReducingState<" + t + ">";
            case "AGGREGATING": return "AggregatingState<" + t + ", " + t + ">";
            default: throw new IllegalArgumentException(kind);
        }
    }

    private static String getter(String kind) {
        switch (kind) {
            case "VALUE": return "getState";
            case "LIST": return "getListState";
            case "UNION_LIST": return "getUnionListState";
            case "MAP": return "getMapState";
            case "REDUCING": return "getReducingState";
            case "AGGREGATING": return "getAggregatingState";
            default: throw new IllegalArgumentException(kind);
        }
    }

    /** {@code new XStateDescriptor<>("name", ...)} of a state. */
    private String newDescriptor(String kind, String name, String type, String expr) {
        String d = descriptorClass(kind);
        imports.add("org.apache.flink.api.common.state." + d);
        String q = "\"" + name + "\"";
        switch (kind) {
            case "MAP":
            case "BROADCAST":
                return "new " + d + "<>(" + q + ", " + keyArg(expr) + ", " + typeArg(type, expr) + ")";
            case "REDUCING":
                return "new " + d + "<>(" + q + ", new StateFns.Latest<>(), " + typeArg(type, expr) + ")";
            case "AGGREGATING":
                return "new " + d + "<>(" + q + ", new StateFns.Keep<>(), " + typeArg(type, expr) + ")";
            default:
                return "new " + d + "<>(" + q + ", " + typeArg(type, expr) + ")";
        }
    }

    /** The TTL configuration's builder expression. */
    private String ttl(String code) {
        imports.add("org.apache.flink.api.common.state.StateTtlConfig");
        String[] t = StStyles.parseTtl(code);
        StringBuilder sb = new StringBuilder("StateTtlConfig.newBuilder(");
        if (legacyApi) {
            imports.add("org.apache.flink.api.common.time.Time");
            sb.append("Time.hours(").append(t[0]).append("))");
        } else {
            imports.add("java.time.Duration");
            sb.append("Duration.ofHours(").append(t[0]).append("))");
        }
        if (!t[1].isEmpty()) {
            sb.append("\n                    .setUpdateType(StateTtlConfig.UpdateType.OnReadAndWrite)");
        }
        if (!t[2].isEmpty()) {
            sb.append("\n                    .setStateVisibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)");
        }
        switch (t[3]) {
            case "full": sb.append("\n                    .cleanupFullSnapshot()"); break;
            case "incr": sb.append("\n                    .cleanupIncrementally(10, false)"); break;
            case "rocks": sb.append("\n                    .cleanupInRocksdbCompactFilter(1000)"); break;
            case "nobg": sb.append("\n                    .disableCleanupInBackground()"); break;
            default:
        }
        return sb.append("\n                    .build()").toString();
    }

    static String camel(String name) {
        StringBuilder sb = new StringBuilder();
        boolean up = false;
        for (char c : name.toCharArray()) {
            if (c == '_' || c == '-') {
                up = true;
            } else {
                sb.append(up ? Character.toUpperCase(c) : c);
                up = false;
            }
        }
        return sb.toString();
    }

    static String constant(String name) {
        return name.toUpperCase(Locale.ROOT).replace('-', '_');
    }

    // ------------------------------------------------------------------ declarations

    /** One state's declaration: members of the class, constructor lines, and the registration. */
    private final class Decl {
        /** fields (and a static block) the declaration needs, then helper methods. */
        final List<String> members = new ArrayList<>();
        final List<String> methods = new ArrayList<>();
        final List<String> ctor = new ArrayList<>();
        final List<String> before = new ArrayList<>();
        String descriptor; // the expression passed to the registration

        Decl(StPlan.St s, String kind) {
            String style = StStyles.style(s.style);
            String expr = StStyles.expr(s.style);
            String dt = descriptorType(kind, s.type);
            String created = newDescriptor(kind, s.name, s.type, expr);
            String c = camel(s.name);
            switch (holder(s)) {
                case "inline":
                    descriptor = created;
                    break;
                case "local":
                    before.add("        " + dt + " " + c + "Descriptor = " + created + ";");
                    if (s.ttl != null) {
                        before.add("        " + c + "Descriptor.enableTimeToLive(" + ttl(s.ttl) + ");");
                    }
                    descriptor = c + "Descriptor";
                    break;
                case "static_field": {
                    String f = constant(s.name);
                    members.add("    private static final " + dt + " " + f + " = " + created + ";");
                    if (s.ttl != null) {
                        members.add("\n    static {\n        " + f + ".enableTimeToLive(" + ttl(s.ttl) + ");\n    }");
                    }
                    descriptor = f;
                    break;
                }
                case "instance_field": {
                    String f = c + "Descriptor";
                    members.add("    private final " + dt + " " + f + " = " + created + ";");
                    if (s.ttl != null) {
                        ctor.add("        " + f + ".enableTimeToLive(" + ttl(s.ttl) + ");");
                    }
                    descriptor = f;
                    break;
                }
                case "helper_method": {
                    StringBuilder m = new StringBuilder("\n    /** The descriptor of state " + s.name + ". */\n    private ")
                            .append(staticHelper(s) ? "static " : "").append(dt).append(' ').append(c)
                            .append("Descriptor() {\n        ").append(dt).append(" d = ").append(created).append(";\n");
                    if (s.ttl != null) {
                        m.append("        d.enableTimeToLive(").append(ttl(s.ttl)).append(");\n");
                    }
                    m.append("        return d;\n    }");
                    methods.add(m.toString());
                    descriptor = c + "Descriptor()";
                    break;
                }
                case "helper_args": {
                    String k = kind.equals("UNION_LIST") ? "LIST" : kind.equals("BROADCAST") ? "MAP" : kind;
                    String h = k.toLowerCase(Locale.ROOT) + (expr.equals("class") ? "Class" : "Info") + (s.ttl != null ? "Ttl" : "");
                    helpers.add(h);
                    descriptor = "StateDecls." + k.toLowerCase(Locale.ROOT) + "(\"" + s.name + "\", " + typeArg(s.type, expr)
                            + (s.ttl != null ? ", " + ttl(s.ttl) : "") + ")";
                    break;
                }
                default:
                    throw new IllegalStateException(style);
            }
        }
    }

    private String header(String doc, Set<String> extra) {
        StringBuilder sb = new StringBuilder("package statetypes.user;\n\n");
        Set<String> all = new java.util.TreeSet<>(imports);
        all.addAll(extra);
        String group = null;
        for (String i : all) {
            String g = i.startsWith("java.") ? "java" : "other";
            if (group != null && !g.equals(group)) {
                sb.append('\n');
            }
            group = g;
            sb.append("import ").append(i).append(";\n");
        }
        sb.append("\n/**\n * ").append(doc).append("\n * (generated for ").append(label).append(")\n */\n");
        return sb.toString();
    }

    private String keyedFn(StPlan.Seg seg, List<StPlan.St> states) {
        imports.clear();
        String reg = seg.f.get("reg");
        List<String> members = new ArrayList<>();
        List<String> methods = new ArrayList<>();
        List<String> fields = new ArrayList<>();
        List<String> ctor = new ArrayList<>();
        List<String> body = new ArrayList<>();
        List<String> handles = new ArrayList<>();
        Set<String> extra = new java.util.TreeSet<>();
        extra.add("java.util.List");
        for (StPlan.St s : states) {
            Decl d = new Decl(s, s.kind);
            members.addAll(d.members);
            methods.addAll(d.methods);
            ctor.addAll(d.ctor);
            body.addAll(d.before);
            String h = camel(s.name);
            extra.add("org.apache.flink.api.common.state." + stateType(s.kind, s.type).replaceAll("<.*", ""));
            fields.add("    private transient " + stateType(s.kind, s.type) + " " + h + ";");
            String ctx = reg.equals("init") ? "ctx.getKeyedStateStore()" : "getRuntimeContext()";
            body.add("        " + h + " = " + ctx + "." + getter(s.kind) + "(" + d.descriptor + ");");
            handles.add(h);
        }
        body.add("        bind(" + String.join(", ", handles) + ");");
        StringBuilder c = new StringBuilder();
        c.append("public final class KeyedFn extends KeyedStateFn");
        if (reg.equals("init")) {
            extra.add("org.apache.flink.streaming.api.checkpoint.CheckpointedFunction");
            extra.add("org.apache.flink.runtime.state.FunctionInitializationContext");
            extra.add("org.apache.flink.runtime.state.FunctionSnapshotContext");
            c.append(" implements CheckpointedFunction");
        }
        c.append(" {\n");
        members.addAll(fields);
        for (String m : members) {
            c.append(m).append('\n');
        }
        c.append("\n    public KeyedFn(String probeKey, List<String[]> states, int keys, boolean timers) {\n")
                .append("        super(probeKey, states, keys, timers);\n");
        for (String x : ctor) {
            c.append(x).append('\n');
        }
        c.append("    }\n\n");
        switch (reg) {
            case "open":
                c.append("    @Override\n");
                if (legacyApi) {
                    extra.add("org.apache.flink.configuration.Configuration");
                    c.append("    public void open(Configuration parameters) throws Exception {\n");
                } else {
                    extra.add("org.apache.flink.api.common.functions.OpenContext");
                    c.append("    public void open(OpenContext openContext) throws Exception {\n");
                }
                appendLines(c, body);
                c.append("    }\n");
                break;
            case "hook":
                c.append("    @Override\n    protected void registerStates() throws Exception {\n");
                appendLines(c, body);
                c.append("    }\n");
                break;
            case "init":
                c.append("    @Override\n    public void initializeState(FunctionInitializationContext ctx) throws Exception {\n");
                appendLines(c, body);
                c.append("    }\n\n    @Override\n    public void snapshotState(FunctionSnapshotContext ctx) {}\n");
                break;
            case "lazy":
                extra.add("org.apache.flink.util.Collector");
                c.append("    @Override\n    public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {\n")
                        .append("        if (").append(handles.get(0)).append(" == null) {\n");
                for (String b : body) {
                    c.append("    ").append(b).append('\n');
                }
                c.append("        }\n        record(v, ctx, out);\n    }\n");
                break;
            default:
                throw new IllegalArgumentException("registration " + reg);
        }
        appendLines(c, methods);
        c.append("}\n");
        String doc = "The keyed state function: its states declared " + where(reg) + ".";
        return header(doc, extra) + c;
    }

    private static String where(String reg) {
        switch (reg) {
            case "open": return "in open()";
            case "hook": return "in registerStates(), which the base class's open() calls";
            case "init": return "in CheckpointedFunction.initializeState, through the keyed state store";
            default: return "on the first record (processElement)";
        }
    }

    private static void appendLines(StringBuilder c, List<String> lines) {
        for (String l : lines) {
            c.append(l).append('\n');
        }
    }

    private String bufferFn(StPlan.St s) {
        imports.clear();
        Set<String> extra = new java.util.TreeSet<>();
        extra.add("org.apache.flink.api.common.state.ListState");
        extra.add("org.apache.flink.runtime.state.FunctionInitializationContext");
        Decl d = new Decl(s, "LIST");
        StringBuilder c = new StringBuilder("public final class BufferFn extends OpStateFn {\n");
        appendLines(c, d.members);
        c.append("\n    public BufferFn(String probeKey, String stateName, String type) {\n")
                .append("        super(probeKey, stateName, type);\n");
        appendLines(c, d.ctor);
        c.append("    }\n\n    @Override\n    public void initializeState(FunctionInitializationContext ctx) throws Exception {\n");
        appendLines(c, d.before);
        c.append("        ").append(stateType("LIST", s.type)).append(" buffer = ctx.getOperatorStateStore().")
                .append(getter(s.kind)).append('(').append(d.descriptor).append(");\n");
        c.append("        restored(buffer);\n    }\n");
        appendLines(c, d.methods);
        c.append("}\n");
        String doc = "The operator (" + (s.kind.equals("UNION_LIST") ? "union " : "") + "list) state function: a "
                + "CheckpointedFunction that declares its state in initializeState.";
        return header(doc, extra) + c;
    }

    private String rulesFn(StPlan.St s) {
        imports.clear();
        Set<String> extra = new java.util.TreeSet<>();
        extra.add("org.apache.flink.util.Collector");
        Decl d = new Decl(s, "BROADCAST");
        StringBuilder c = new StringBuilder("public final class RulesFn extends BcastFn {\n");
        appendLines(c, d.members);
        c.append("\n    public RulesFn(String probeKey, String stateName, String type) {\n")
                .append("        super(probeKey, stateName, type);\n");
        appendLines(c, d.ctor);
        c.append("    }\n\n    @Override\n    public void processBroadcastElement(Long v, Context ctx, Collector<Long> out) throws Exception {\n");
        appendLines(c, d.before);
        c.append("        broadcastRecord(v, ctx.getBroadcastState(").append(d.descriptor).append("));\n    }\n");
        appendLines(c, d.methods);
        c.append("}\n");
        String doc = "The broadcast function: it re-creates the broadcast state's descriptor StJob passes to broadcast(...).";
        return header(doc, extra) + c;
    }

    private String stJob(boolean keyed, boolean ost, StPlan.St bc, StPlan.St win) {
        imports.clear();
        Set<String> extra = new java.util.TreeSet<>();
        extra.add("org.apache.flink.streaming.api.environment.StreamExecutionEnvironment");
        StringBuilder c = new StringBuilder("public final class StJob implements Topology.Parts {\n");
        c.append("    public static void main(String[] args) throws Exception {\n        Topology.main(args, new StJob());\n    }\n\n");
        c.append("    /** Builds the described job (the harness calls this with the job's description). */\n");
        c.append("    public static String build(StreamExecutionEnvironment env, String description) {\n")
                .append("        return Topology.build(env, description, new StJob());\n    }\n");
        if (keyed) {
            extra.add("java.util.List");
            c.append("\n    @Override\n    public KeyedStateFn keyed(String probeKey, List<String[]> states, int keys, boolean timers) {\n")
                    .append("        return new KeyedFn(probeKey, states, keys, timers);\n    }\n");
        }
        if (ost) {
            c.append("\n    @Override\n    public OpStateFn buffer(String probeKey, String stateName, String type) {\n")
                    .append("        return new BufferFn(probeKey, stateName, type);\n    }\n");
        }
        if (bc != null) {
            String expr = StStyles.expr(bc.style);
            c.append("\n    @Override\n    public ").append(descriptorType("BROADCAST", bc.type)).append(" rules() {\n")
                    .append("        return ").append(newDescriptor("BROADCAST", bc.name, bc.type, expr)).append(";\n    }\n");
            c.append("\n    @Override\n    public BcastFn rulesFn(String probeKey, String stateName, String type) {\n")
                    .append("        return new RulesFn(probeKey, stateName, type);\n    }\n");
        }
        if (win != null) {
            String expr = StStyles.expr(win.style);
            extra.add("org.apache.flink.api.common.typeinfo.TypeInformation");
            if (win.kind.equals("AGGREGATING")) {
                c.append("\n    @Override\n    public TypeInformation<").append(javaType(win.type)).append("> windowAccumulator() {\n")
                        .append("        return ").append(info(win.type, expr)).append(";\n    }\n");
            } else {
                extra.add("org.apache.flink.api.java.tuple.Tuple2");
                String pair = "Tuple2<Long, " + javaType(win.type) + ">";
                String e;
                if (expr.equals("hint")) {
                    importsFor(win.type);
                    imports.add("org.apache.flink.api.common.typeinfo.TypeHint");
                    e = "TypeInformation.of(new TypeHint<" + pair + ">() {})";
                } else {
                    imports.add("org.apache.flink.api.common.typeinfo.Types");
                    e = "Types.TUPLE(Types.LONG, " + info(win.type, expr) + ")";
                }
                c.append("\n    @Override\n    public TypeInformation<").append(pair).append("> windowPairs() {\n")
                        .append("        return ").append(e).append(";\n    }\n");
            }
        }
        c.append("}\n");
        return header("The job: its main(), and the parts of it that declare state (the broadcast state's descriptor,"
                + " the window state's type) or hold it.", extra) + c;
    }

    private String stateDecls() {
        imports.clear();
        Set<String> extra = new java.util.TreeSet<>();
        StringBuilder c = new StringBuilder("public final class StateDecls {\n    private StateDecls() {}\n");
        for (String h : helpers) {
            boolean cls = h.contains("Class");
            boolean ttl = h.endsWith("Ttl");
            String kind = h.substring(0, h.indexOf(cls ? "Class" : "Info")).toUpperCase(Locale.ROOT);
            String d = descriptorClass(kind);
            extra.add("org.apache.flink.api.common.state." + d);
            String param = cls ? "Class<T> type" : "TypeInformation<T> type";
            if (!cls) {
                extra.add("org.apache.flink.api.common.typeinfo.TypeInformation");
            }
            String dt;
            String created;
            switch (kind) {
                case "MAP":
                    dt = d + "<String, T>";
                    if (!cls) {
                        extra.add("org.apache.flink.api.common.typeinfo.Types");
                    }
                    created = "new " + d + "<>(name, " + (cls ? "String.class" : "Types.STRING") + ", type)";
                    break;
                case "REDUCING":
                    dt = d + "<T>";
                    created = "new " + d + "<>(name, new StateFns.Latest<>(), type)";
                    break;
                case "AGGREGATING":
                    dt = d + "<T, T, T>";
                    created = "new " + d + "<>(name, new StateFns.Keep<>(), type)";
                    break;
                default:
                    dt = d + "<T>";
                    created = "new " + d + "<>(name, type)";
            }
            c.append("\n    static <T> ").append(dt).append(' ').append(kind.toLowerCase(Locale.ROOT)).append("(String name, ")
                    .append(param).append(ttl ? ", StateTtlConfig ttl" : "").append(") {\n");
            if (ttl) {
                extra.add("org.apache.flink.api.common.state.StateTtlConfig");
                c.append("        ").append(dt).append(" d = ").append(created).append(";\n")
                        .append("        d.enableTimeToLive(ttl);\n        return d;\n    }\n");
            } else {
                c.append("        return ").append(created).append(";\n    }\n");
            }
        }
        c.append("}\n");
        return header("Helpers that build the states' descriptors from the name and type they are given.", extra) + c;
    }

    static Map<String, Object> describe(StPlan.St s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("style", s.style == null ? null : StStyles.style(s.style));
        m.put("type_expr", s.style == null ? null : StStyles.expr(s.style));
        return m;
    }
}
