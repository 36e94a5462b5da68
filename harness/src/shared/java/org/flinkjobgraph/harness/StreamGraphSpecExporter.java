package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.graph.StreamEdge;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.jar.Manifest;

/**
 * Exports a Flink {@link StreamGraph} as a stream-graph spec (SPEC.md section 1), the input
 * format of flink-jobgraph.
 *
 * <p>Usable from a user's own job: build the job as usual, then instead of (or before)
 * {@code env.execute()} call
 *
 * <pre>
 *   String json = StreamGraphSpecExporter.exportJson(env.getStreamGraph(), "my-job@v1");
 * </pre>
 *
 * <p>Note that {@code env.getStreamGraph()} clears the environment's transformations by default;
 * use {@code env.getStreamGraph(false)} (1.x) if the job is executed afterwards.
 */
public final class StreamGraphSpecExporter {
    private StreamGraphSpecExporter() {}

    /** The spec JSON of {@code streamGraph} (one line, no trailing newline). */
    public static String exportJson(StreamGraph streamGraph, String graphId) {
        return Json.write(export(streamGraph, graphId));
    }

    /**
     * What a capture knows beyond the StreamGraph itself: the configuration the job was given
     * (flink run's {@code -D} / {@code --config}, which Flink 1.9's environments never see), the
     * facts of the job jar's classes ({@link UserClassFacts}; null: not scanned) and which optional
     * serializer modules its class path can load ({@link SerializerModules}; null: not probed).
     */
    public static final class Context {
        public final org.apache.flink.configuration.Configuration configuration;
        public final UserClassFacts.Result userClasses;
        public final Map<String, Object> serializerModules;
        /** The node field {@code declared_states} ({@link DeclaredStates}); null: not written. */
        public final DeclaredStates declaredStates;

        public Context(org.apache.flink.configuration.Configuration configuration, UserClassFacts.Result userClasses) {
            this(configuration, userClasses, null);
        }

        public Context(
                org.apache.flink.configuration.Configuration configuration,
                UserClassFacts.Result userClasses,
                Map<String, Object> serializerModules) {
            this(configuration, userClasses, serializerModules, null);
        }

        public Context(
                org.apache.flink.configuration.Configuration configuration,
                UserClassFacts.Result userClasses,
                Map<String, Object> serializerModules,
                DeclaredStates declaredStates) {
            this.configuration = configuration;
            this.userClasses = userClasses;
            this.serializerModules = serializerModules;
            this.declaredStates = declaredStates;
        }
    }

    /** The spec as an ordered map (graph fields, nodes, edges). */
    public static Map<String, Object> export(StreamGraph sg, String graphId) {
        return export(sg, graphId, null);
    }

    /**
     * The spec as an ordered map, with the graph fields {@code state_backend} (always), {@code
     * serializer_modules} (when {@code ctx} probed them) and {@code user_classes} / {@code
     * user_classes_skipped} (when {@code ctx} has scanned classes), and per node {@code
     * declared_states} (when {@code ctx} has a {@link DeclaredStates} and the line supports it).
     */
    public static Map<String, Object> export(StreamGraph sg, String graphId, Context ctx) {
        Map<String, Object> g = new LinkedHashMap<>();
        g.put("graph_id", graphId);
        g.put("job_name", sg.getJobName());
        g.put("flink_version", flinkLine());
        g.put("chaining_enabled", sg.isChainingEnabled());
        g.put(
                "chain_operators_with_different_max_parallelism",
                Refl.call(sg, "isChainingOfOperatorsWithDifferentMaxParallelismEnabled", true));
        // StreamGraph.isDynamic() from 1.17 on; 1.15/1.16 keep the flag in the ExecutionConfig
        boolean dynamic =
                Refl.has(sg, "isDynamic", 0)
                        ? Boolean.TRUE.equals(Refl.call(sg, "isDynamic", false))
                        : Boolean.TRUE.equals(
                                Refl.call(sg.getExecutionConfig(), "isDynamicGraph", false));
        g.put("dynamic", dynamic);
        if (dynamic) {
            // only read by createJobGraph for dynamic graphs (setVertexParallelismsForDynamicGraph-
            // IfNecessary); left out otherwise so that streaming specs stay as they were
            g.put("auto_parallelism_enabled", Refl.call(sg, "isAutoParallelismEnabled", true));
        }
        Object jobType = Refl.call(sg, "getJobType", null);
        g.put("job_type", jobType == null ? "STREAMING" : jobType.toString());
        // Iteration order of getSourceIDs() (a HashSet filled in translation order, which
        // the graph itself does not show): Flink 1.9 starts its chains in this order, and
        // 1.12-1.17.1 name chained sources in an order derived from it.
        g.put("source_id_order", new ArrayList<Object>(sg.getSourceIDs()));
        g.put("state_backend", stateBackend(sg, ctx == null ? null : ctx.configuration));
        if (ctx != null && ctx.serializerModules != null) {
            g.put("serializer_modules", ctx.serializerModules);
        }
        if (ctx != null && ctx.userClasses != null) {
            g.put("user_classes", ctx.userClasses.classes);
            g.put("user_classes_skipped", ctx.userClasses.skipped);
        }

        List<StreamNode> nodes = new ArrayList<>(sg.getStreamNodes());
        nodes.sort(Comparator.comparingInt(StreamNode::getId));
        Collection<Integer> sourceIds = sg.getSourceIDs();
        Map<Integer, List<Map<String, Object>>> declared =
                ctx != null && ctx.declaredStates != null && DeclaredStates.supported() ? ctx.declaredStates.of(sg) : null;
        List<Object> outNodes = new ArrayList<>();
        for (StreamNode n : nodes) {
            Map<String, Object> m = node(n, sourceIds);
            if (declared != null) {
                List<Map<String, Object>> d = declared.get(n.getId());
                m.put("declared_states", d == null ? new ArrayList<>() : d);
            }
            if (dynamic) {
                m.put("parallelism_configured", Refl.call(n, "isParallelismConfigured", false));
            }
            outNodes.add(m);
        }
        g.put("nodes", outNodes);

        List<Object> outEdges = new ArrayList<>();
        for (StreamEdge e : orderedEdges(nodes)) {
            outEdges.add(edge(e));
        }
        g.put("edges", outEdges);
        return g;
    }

    static Map<String, Object> node(StreamNode n, Collection<Integer> sourceIds) {
        Map<String, Object> m = new LinkedHashMap<>();
        Object factory = n.getOperatorFactory();
        m.put("id", n.getId());
        m.put("name", n.getOperatorName());
        m.put("uid", n.getTransformationUID());
        m.put("uid_hash", n.getUserHash());
        m.put("parallelism", n.getParallelism());
        m.put("max_parallelism", Refl.call(n, "getMaxParallelism", -1)); // package-private in 1.x
        Object cs = factory == null ? null : Refl.call(factory, "getChainingStrategy", null);
        m.put("chaining_strategy", cs == null ? null : cs.toString());
        m.put("slot_sharing_group", n.getSlotSharingGroup());
        m.put("is_source", sourceIds.contains(n.getId()));
        m.put("source_kind", sourceKind(factory));
        m.put("yielding", factory != null && Refl.isA(factory, "YieldingOperatorFactory"));
        m.put("has_operator", factory != null);
        String keySnapshot = keySerializerSnapshot(n);
        if (keySnapshot != null) {
            m.put("state_key_serializer_snapshot", keySnapshot);
        }
        return m;
    }

    /**
     * Optional node field {@code state_key_serializer_snapshot}: for a node with a state key serializer
     * (a keyed operator), base64 of exactly the bytes
     * {@code TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot} writes for
     * {@code serializer.snapshotConfiguration()}: the bytes Flink writes for the key serializer
     * inside a savepoint's keyed backend proxy (the proxy version int, then the versioned
     * snapshot). Flink 1.9 - 1.18 have writeSerializerSnapshot(out, snapshot, serializer), 1.19+
     * writeSerializerSnapshot(out, snapshot): whichever the classpath has is called. Null (field
     * left out) for nodes without a key serializer, or when the serializer cannot snapshot itself.
     */
    static String keySerializerSnapshot(StreamNode n) {
        return serializerSnapshot(Refl.call(n, "getStateKeySerializer", null));
    }

    /**
     * Base64 of {@code TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot} of {@code
     * serializer.snapshotConfiguration()} (the framing a backend writes for each serializer of a
     * state's meta info, and for the key serializer); null when there is no serializer or it cannot
     * snapshot itself.
     */
    public static String serializerSnapshot(Object serializer) {
        if (serializer == null) {
            return null;
        }
        try {
            Object snapshot = serializer.getClass().getMethod("snapshotConfiguration").invoke(serializer);
            Class<?> util = Class.forName("org.apache.flink.api.common.typeutils.TypeSerializerSnapshotSerializationUtil");
            java.lang.reflect.Method two = null;
            java.lang.reflect.Method three = null;
            for (java.lang.reflect.Method m : util.getMethods()) {
                if (m.getName().equals("writeSerializerSnapshot")) {
                    if (m.getParameterCount() == 2) {
                        two = m;
                    } else if (m.getParameterCount() == 3) {
                        three = m;
                    }
                }
            }
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            org.apache.flink.core.memory.DataOutputViewStreamWrapper out =
                    new org.apache.flink.core.memory.DataOutputViewStreamWrapper(bytes);
            if (two != null) {
                two.invoke(null, out, snapshot);
            } else if (three != null) {
                three.invoke(null, out, snapshot, serializer);
            } else {
                return null;
            }
            out.flush();
            return java.util.Base64.getEncoder().encodeToString(bytes.toByteArray());
        } catch (Throwable e) {
            return null;
        }
    }

    // ------------------------------------------------------------------ state backend

    /**
     * Graph field {@code state_backend}: the state backend the job runs with, as Flink decides
     * it when the job starts ({@code StateBackendLoader.fromApplicationOrConfigOrDefault}): a
     * backend set on the environment ({@code env.setStateBackend}, 1.x; also what 1.15 - 1.18
     * environments load from {@code state.backend} in their configuration) wins, by its name;
     * then {@code state.backend.type} (1.x: {@code state.backend}) of the job's configuration
     * ({@code StreamGraph.getJobConfiguration()}, 1.19+: what {@code -D}, {@code --config} and
     * the job's own {@code env.configure(...)} set), then of the configuration the capture was
     * given ({@code outer}: the only place 1.9 keeps it), else Flink's default: {@code hashmap}
     * (1.13+; 1.9: {@code jobmanager}, the MemoryStateBackend). A backend configured only on the
     * cluster (its own config file, not given to the export) is not seen.
     */
    static String stateBackend(StreamGraph sg, Object outer) {
        String fromEnv = backendName(Refl.call(sg, "getStateBackend", null));
        if (fromEnv != null) {
            return fromEnv;
        }
        String fromJob = configuredBackend(Refl.call(sg, "getJobConfiguration", null));
        if (fromJob != null) {
            return fromJob;
        }
        String fromOuter = configuredBackend(outer);
        if (fromOuter != null) {
            return fromOuter;
        }
        return flinkLine().equals("1.9") ? "jobmanager" : "hashmap";
    }

    /** A class's simple name -> the name a spec gives it. */
    private static final Map<String, String> BACKENDS = table(
            "HashMapStateBackend", "hashmap",
            "EmbeddedRocksDBStateBackend", "rocksdb",
            "RocksDBStateBackend", "rocksdb",
            "ForStStateBackend", "forst",
            "MemoryStateBackend", "jobmanager",
            "FsStateBackend", "filesystem");

    /** A map of the given key / value pairs. */
    static Map<String, String> table(String... pairs) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            m.put(pairs[i], pairs[i + 1]);
        }
        return m;
    }

    /** Flink's name of a state backend object (StateBackendLoader's shortcuts), else its class. */
    static String backendName(Object backend) {
        if (backend == null) {
            return null;
        }
        for (Class<?> c = backend.getClass(); c != null; c = c.getSuperclass()) {
            String n = BACKENDS.get(c.getSimpleName());
            if (n != null) {
                return n;
            }
            if (c.getSimpleName().equals("BatchExecutionStateBackend")) {
                return null; // BATCH execution's own backend: the configured one is what a restore sees
            }
        }
        return backend.getClass().getName();
    }

    /**
     * {@code state.backend.type} (or its 1.x key {@code state.backend}) when the configuration
     * sets it (not its default): Flink's own ConfigOption, so deprecated keys count as Flink
     * counts them. Shortcut names are lower-cased as StateBackendLoader compares them.
     */
    static String configuredBackend(Object conf) {
        if (conf == null) {
            return null;
        }
        Object option = null;
        for (String holder :
                new String[] {
                    "org.apache.flink.configuration.StateBackendOptions",
                    "org.apache.flink.configuration.CheckpointingOptions"
                }) {
            try {
                option = Class.forName(holder).getField("STATE_BACKEND").get(null);
                break;
            } catch (ReflectiveOperationException | LinkageError e) {
                // not in this line
            }
        }
        if (option == null || !Boolean.TRUE.equals(Refl.call(conf, "contains", false, option))) {
            return null;
        }
        Object v = Refl.has(conf, "get", 1) ? Refl.call(conf, "get", null, option) : Refl.call(conf, "getString", null, option);
        if (v == null || v.toString().trim().isEmpty()) {
            return null;
        }
        String s = v.toString().trim();
        String lower = s.toLowerCase(java.util.Locale.ROOT);
        return BACKENDS.containsValue(lower) ? lower : s;
    }

    static String sourceKind(Object factory) {
        if (factory == null) {
            return null;
        }
        if (Refl.isA(factory, "SourceOperatorFactory")) {
            return "FLIP27";
        }
        if (Refl.has(factory, "isLegacySource", 0)) {
            if (Boolean.TRUE.equals(Refl.call(factory, "isLegacySource", false))) {
                return "LEGACY";
            }
            return null;
        }
        if (Boolean.TRUE.equals(Refl.call(factory, "isStreamSource", false))) {
            return "LEGACY";
        }
        Object op = Refl.call(factory, "getOperator", null);
        if (op != null && Refl.isA(op, "StreamSource")) {
            return "LEGACY";
        }
        return null;
    }

    static Map<String, Object> edge(StreamEdge e) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("source", e.getSourceId());
        m.put("target", e.getTargetId());
        m.put("partitioner", partitionerName(e.getPartitioner()));
        Object mode = Refl.call(e, "getExchangeMode", null);
        if (mode == null) {
            mode = Refl.call(e, "getShuffleMode", null); // Flink 1.9-1.12
        }
        m.put("exchange_mode", mode == null ? "UNDEFINED" : mode.toString());
        m.put("type_number", e.getTypeNumber());
        m.put("output_tag", e.getOutputTag() == null ? null : e.getOutputTag().getId());
        return m;
    }

    private static final Map<String, String> PARTITIONERS = table(
            "ForwardPartitioner", "FORWARD",
            "RebalancePartitioner", "REBALANCE",
            "RescalePartitioner", "RESCALE",
            "KeyGroupStreamPartitioner", "HASH",
            "BroadcastPartitioner", "BROADCAST",
            "ShufflePartitioner", "SHUFFLE",
            "GlobalPartitioner", "GLOBAL",
            "CustomPartitionerWrapper", "CUSTOM",
            "ForwardForConsecutiveHashPartitioner", "FORWARD_FOR_CONSECUTIVE_HASH",
            "ForwardForUnspecifiedPartitioner", "FORWARD_FOR_UNSPECIFIED");

    static String partitionerName(Object p) {
        if (p == null) {
            return "FORWARD";
        }
        if (p.getClass().getSimpleName().equals("ForwardForConsecutiveHashPartitioner")) {
            // Where it becomes a job edge, createJobGraph replaces it by the hash partitioner it
            // wraps and the edge shows that one's name: a table runtime BinaryHashPartitioner's
            // "HASH[field,...]" is kept as FORWARD_FOR_CONSECUTIVE_HASH[field,...] (SPEC
            // extension, see docs/spec-extensions.md).
            String inner = partitionerName(Refl.call(p, "getHashPartitioner", null));
            return inner.startsWith("HASH[") ? "FORWARD_FOR_CONSECUTIVE_" + inner : "FORWARD_FOR_CONSECUTIVE_HASH";
        }
        for (Class<?> c = p.getClass(); c != null; c = c.getSuperclass()) {
            String n = PARTITIONERS.get(c.getSimpleName());
            if (n != null) {
                return n;
            }
            if (c.getSimpleName().equals("BinaryHashPartitioner")) {
                // The table runtime's keyed exchange: its toString() "HASH[field,...]" is the
                // job edge's ship strategy name, kept as written (SPEC extension, see
                // docs/spec-extensions.md).
                return p.toString();
            }
        }
        return p.toString().toUpperCase();
    }

    /**
     * All edges, in an order consistent with every node's out-edge list and in-edge list (Kahn's
     * algorithm over "comes before" constraints; ties broken by target id, then the edge's
     * position among the target's in-edges, which reproduces Flink's creation order).
     */
    static List<StreamEdge> orderedEdges(List<StreamNode> nodes) {
        Map<StreamEdge, int[]> key = new IdentityHashMap<>(); // {targetId, inIndex, seq}
        Map<StreamEdge, List<StreamEdge>> succ = new IdentityHashMap<>();
        Map<StreamEdge, Integer> indeg = new IdentityHashMap<>();
        Map<StreamEdge, StreamEdge> canon = new IdentityHashMap<>();
        int seq = 0;
        for (StreamNode n : nodes) {
            List<StreamEdge> in = n.getInEdges();
            for (int i = 0; i < in.size(); i++) {
                StreamEdge e = in.get(i);
                key.put(e, new int[] {n.getId(), i, seq++});
                canon.put(e, e);
                succ.put(e, new ArrayList<>());
                indeg.put(e, 0);
            }
        }
        for (StreamNode n : nodes) {
            for (StreamEdge e : n.getOutEdges()) {
                if (!key.containsKey(e)) {
                    // not the same object as in the target's in-list: match by equality
                    StreamEdge match = null;
                    for (StreamEdge k : key.keySet()) {
                        if (k.equals(e)) {
                            match = k;
                            break;
                        }
                    }
                    if (match == null) {
                        throw new IllegalStateException("out-edge without in-edge: " + e);
                    }
                    canon.put(e, match);
                }
            }
        }
        for (StreamNode n : nodes) {
            chain(n.getInEdges(), canon, succ, indeg);
            chain(n.getOutEdges(), canon, succ, indeg);
        }
        PriorityQueue<StreamEdge> ready =
                new PriorityQueue<>(
                        (a, b) -> {
                            int[] x = key.get(a);
                            int[] y = key.get(b);
                            if (x[0] != y[0]) {
                                return Integer.compare(x[0], y[0]);
                            }
                            if (x[1] != y[1]) {
                                return Integer.compare(x[1], y[1]);
                            }
                            return Integer.compare(x[2], y[2]);
                        });
        for (Map.Entry<StreamEdge, Integer> e : indeg.entrySet()) {
            if (e.getValue() == 0) {
                ready.add(e.getKey());
            }
        }
        List<StreamEdge> out = new ArrayList<>();
        while (!ready.isEmpty()) {
            StreamEdge e = ready.poll();
            out.add(e);
            for (StreamEdge s : succ.get(e)) {
                int d = indeg.get(s) - 1;
                indeg.put(s, d);
                if (d == 0) {
                    ready.add(s);
                }
            }
        }
        if (out.size() != key.size()) {
            throw new IllegalStateException(
                    "per-node in/out edge orders are inconsistent; cannot order edges");
        }
        return out;
    }

    private static void chain(
            List<StreamEdge> list,
            Map<StreamEdge, StreamEdge> canon,
            Map<StreamEdge, List<StreamEdge>> succ,
            Map<StreamEdge, Integer> indeg) {
        for (int i = 0; i + 1 < list.size(); i++) {
            StreamEdge a = canon.get(list.get(i));
            StreamEdge b = canon.get(list.get(i + 1));
            if (a == null || b == null || a == b) {
                continue;
            }
            succ.get(a).add(b);
            indeg.put(b, indeg.get(b) + 1);
        }
    }

    // ------------------------------------------------------------------ version

    private static String fullVersion;

    /** Full Flink version of the runtime on the classpath, e.g. "2.3.0". */
    public static synchronized String flinkVersionFull() {
        if (fullVersion != null) {
            return fullVersion;
        }
        String v = null;
        try {
            Class<?> c = Class.forName("org.apache.flink.runtime.util.EnvironmentInformation");
            Object r = c.getMethod("getVersion").invoke(null);
            if (r != null && r.toString().matches("\\d+\\.\\d+.*")) {
                v = r.toString();
            }
        } catch (Throwable ignored) {
            // fall through
        }
        if (v == null) {
            v = versionFromJarName();
        }
        fullVersion = v == null ? "unknown" : v;
        return fullVersion;
    }

    private static String versionFromJarName() {
        try {
            String loc =
                    StreamGraph.class.getProtectionDomain().getCodeSource().getLocation().getPath();
            java.util.regex.Matcher m =
                    java.util.regex.Pattern.compile("-(\\d+\\.\\d+\\.\\d+)\\.jar$").matcher(loc);
            if (m.find()) {
                return m.group(1);
            }
        } catch (Throwable ignored) {
            // fall through
        }
        try (InputStream in =
                StreamGraphSpecExporter.class.getResourceAsStream("/META-INF/MANIFEST.MF")) {
            if (in != null) {
                return new Manifest(in).getMainAttributes().getValue("Flink-Version");
            }
        } catch (IOException ignored) {
            // fall through
        }
        return null;
    }

    /** "major.minor" of the Flink on the classpath. */
    public static String flinkLine() {
        String v = flinkVersionFull();
        String[] p = v.split("\\.");
        return p.length >= 2 ? p[0] + "." + p[1] : v;
    }

    static Set<Integer> ids(Collection<StreamNode> nodes) {
        java.util.TreeSet<Integer> s = new java.util.TreeSet<>();
        for (StreamNode n : nodes) {
            s.add(n.getId());
        }
        return s;
    }
}
