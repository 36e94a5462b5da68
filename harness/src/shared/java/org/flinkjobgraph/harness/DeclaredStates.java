package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The node field {@code declared_states} (docs/spec-extensions.md): per stream node, every state
 * its operator and user functions declare, with the serializer snapshot Flink's backend will write
 * for it, built in this JVM as Flink builds it (the descriptor's {@code
 * initializeSerializerUnlessSet(ExecutionConfig)} with the job's own ExecutionConfig, the job's
 * class loader as context loader, then {@code snapshotConfiguration()} written by {@code
 * TypeSerializerSnapshotSerializationUtil.writeSerializerSnapshot}, as the key serializer is).
 *
 * <p>Where the declarations come from ({@code basis}): {@code descriptor_object} - a StateDescriptor
 * object main() built, held in a field of a user function (or the broadcast operator's
 * descriptors); {@code bytecode} - a descriptor built in a user function's code ({@link StateCode}:
 * abstract interpretation, no user method runs); {@code state_declaration} - a DataStream V2
 * process function's {@code usesStates()} (the one user method called: it only declares);
 * {@code flink_operator} - Flink's own operators' states (window contents, a source's split
 * state, timers), read from their code the same way. What cannot be resolved is an entry with
 * {@code unresolved} naming class, method and why.
 */
public final class DeclaredStates {
    private final ClassLoader loader;
    private final Map<StreamGraph, Map<Integer, List<Map<String, Object>>>> byGraph = new IdentityHashMap<>();
    private final Map<StreamGraph, List<Object>> typeObjects = new IdentityHashMap<>();

    /** {@code loader}: the job's class loader (the one main() ran with). */
    public DeclaredStates(ClassLoader loader) {
        this.loader = loader;
    }

    /** Whether this line's Flink lets the harness read declarations (Flink's shaded ASM 9 present). */
    public static boolean supported() {
        try {
            Class.forName("org.apache.flink.shaded.asm9.org.objectweb.asm.tree.analysis.Analyzer");
            return true;
        } catch (Throwable e) {
            return false;
        }
    }

    /** Per node id, its declared states (computed once per graph). */
    public synchronized Map<Integer, List<Map<String, Object>>> of(StreamGraph sg) {
        Map<Integer, List<Map<String, Object>>> m = byGraph.get(sg);
        if (m == null) {
            m = compute(sg);
            byGraph.put(sg, m);
        }
        return m;
    }

    /**
     * The serializers and type informations of the graph's declared states: what {@code
     * user_classes} must describe besides what the graph names ({@link UserClassFacts.Scope#name}).
     */
    public synchronized List<Object> typeObjects(StreamGraph sg) {
        of(sg);
        List<Object> l = typeObjects.get(sg);
        return l == null ? new ArrayList<>() : l;
    }

    private Map<Integer, List<Map<String, Object>>> compute(StreamGraph sg) {
        Map<Integer, List<Map<String, Object>>> out = new TreeMap<>();
        List<Object> types = new ArrayList<>();
        typeObjects.put(sg, types);
        if (!supported()) {
            return out;
        }
        Thread t = Thread.currentThread();
        ClassLoader before = t.getContextClassLoader();
        t.setContextClassLoader(loader);
        try {
            Object config = Refl.call(sg, "getExecutionConfig", null);
            StateCode code = new StateCode(loader, config);
            List<StreamNode> nodes = new ArrayList<>(sg.getStreamNodes());
            nodes.sort(Comparator.comparingInt(StreamNode::getId));
            for (StreamNode n : nodes) {
                List<Map<String, Object>> l;
                try {
                    l = new Node(code, n, config, types).entries();
                } catch (Throwable e) {
                    l = new ArrayList<>();
                    Map<String, Object> m = entry(null, null, null, null, "flink_operator", n.getOperatorName(),
                            "the exporter could not read this operator's states: " + e);
                    l.add(m);
                    if (System.getenv("HARNESS_DEBUG") != null) {
                        e.printStackTrace();
                    }
                }
                out.put(n.getId(), l);
            }
        } finally {
            t.setContextClassLoader(before);
        }
        return out;
    }

    /** One node's declarations. */
    private static final class Node {
        final StateCode code;
        final StreamNode n;
        final Object config;
        final List<Object> types;
        final List<Object> userObjects = new ArrayList<>();
        final List<Object> triggers = new ArrayList<>();
        /** Descriptor objects in fields: object -> {path, holder is a user object, broadcast list}. */
        final Map<Object, Object[]> fieldDescriptors = new IdentityHashMap<>();
        /** The same descriptors in the order the walk met them (an identity map's order changes from run to run). */
        final List<Object> fieldDescriptorOrder = new ArrayList<>();
        final Map<Object, Boolean> seen = new IdentityHashMap<>();
        int budget = 20000;

        Node(StateCode code, StreamNode n, Object config, List<Object> types) {
            this.code = code;
            this.n = n;
            this.config = config;
            this.types = types;
        }

        List<Map<String, Object>> entries() {
            List<Map<String, Object>> out = new ArrayList<>();
            Object factory = n.getOperatorFactory();
            if (factory == null) {
                return out;
            }
            Object op = Refl.isA(factory, "SimpleOperatorFactory") ? Refl.call(factory, "getOperator", null) : null;
            walk(op != null ? op : factory, op != null ? op.getClass().getSimpleName() : factory.getClass().getSimpleName(),
                    false, 0);
            code.beginNode();
            List<StateCode.Decl> flink = new ArrayList<>();
            if (op != null && !code.isJob(op.getClass())) {
                flink.addAll(code.analyseObject(op, true));
            } else if (op == null) {
                flink.addAll(runtimeOperator(factory));
            }
            for (Object trig : triggers) {
                flink.addAll(code.analyseObject(trig, true, true));
            }
            List<StateCode.Decl> user = new ArrayList<>();
            if (op != null && code.isJob(op.getClass())) {
                user.addAll(code.analyseObject(op, false));
            }
            for (Object u : userObjects) {
                if (u != op) {
                    user.addAll(code.analyseObject(u, false));
                }
            }
            user.addAll(code.unreachedSites());

            Map<Object, Map<String, Object>> byDescriptor = new IdentityHashMap<>();
            List<Map<String, Object>> timers = new ArrayList<>();
            for (StateCode.Decl d : flink) {
                if (d.kind != null && d.kind.equals("TIMERS")) {
                    if (d.timerName != null) {
                        Map<String, Object> e = timerEntry(d.timerName, d.timerNamespaceSerializer, "flink_operator", d.site);
                        if (!containsTimer(timers, d.timerName)) {
                            timers.add(e);
                            out.add(e);
                        }
                    }
                    continue;
                }
                if (d.descriptor == null) {
                    continue; // Flink's own code over run-time values (the broadcast descriptors it holds,
                              // names restored from a savepoint): listed from the objects, see below
                }
                add(out, byDescriptor, d, "flink_operator", d.site);
            }
            List<String> timerSites = new ArrayList<>();
            for (StateCode.Decl d : user) {
                if (d.registersTimer != null) {
                    if (!timerSites.contains(d.site)) {
                        timerSites.add(d.site);
                    }
                    continue;
                }
                if (d.kind != null && d.kind.equals("TIMERS")) {
                    if (d.timerName != null && !containsTimer(timers, d.timerName)) {
                        Map<String, Object> e = timerEntry(d.timerName, d.timerNamespaceSerializer, "bytecode", d.site);
                        timers.add(e);
                        out.add(e);
                    } else if (d.timerName == null && d.unresolved != null) {
                        out.add(entry(null, "TIMERS", null, null, "bytecode", d.site, d.unresolved));
                    }
                    continue;
                }
                if (d.descriptor == null) {
                    Map<String, Object> e = entry(d.hintName, d.kind, null, null, "bytecode", d.site, d.unresolved);
                    calledFrom(e, d);
                    if (d.conditional) {
                        e.put("conditional", true);
                    }
                    out.add(e);
                    continue;
                }
                Object[] field = fieldDescriptors.get(d.descriptor);
                if (field != null || d.origin != null) {
                    String path = field != null ? (String) field[0] : d.origin.replaceFirst("^field ", "");
                    add(out, byDescriptor, d, "descriptor_object", path);
                } else {
                    add(out, byDescriptor, d, "bytecode", d.site);
                }
            }
            if (!timerSites.isEmpty()) {
                if (timers.isEmpty()) {
                    out.add(entry(null, "TIMERS", null, null, "bytecode", timerSites.get(0),
                            "the function registers timers (" + String.join(", ", timerSites)
                                    + "), but the operator's timer service was not found"));
                } else {
                    timers.get(0).put("timers_registered_in", timerSites);
                }
            }
            // descriptors held in fields and not registered by any code read above
            for (Object descriptor : fieldDescriptorOrder) {
                if (byDescriptor.containsKey(descriptor)) {
                    continue;
                }
                Object[] how = fieldDescriptors.get(descriptor);
                boolean broadcastList = (Boolean) how[2];
                boolean inUserObject = (Boolean) how[1];
                if (broadcastList) {
                    StateCode.Decl d = new StateCode.Decl();
                    d.kind = "BROADCAST";
                    d.descriptor = descriptor;
                    add(out, byDescriptor, d, "descriptor_object", (String) how[0]);
                } else if (inUserObject) {
                    StateCode.Decl d = new StateCode.Decl();
                    d.descriptor = descriptor;
                    d.unresolved = "a descriptor held in field " + how[0] + ", but no registration of it was found"
                            + " in the code Flink calls (whether and as which kind of state it is used is not known)";
                    add(out, byDescriptor, d, "descriptor_object", (String) how[0]);
                }
            }
            for (Map<String, Object> e : declarationsV2()) {
                out.add(e);
            }
            return out;
        }

        /**
         * The states of an operator a factory creates when the job starts (the graph holds no
         * object of it): the FLIP-27 source, async I/O, the sink V2 writer and committer. Their
         * code is read with the operator itself unknown; what depends on it comes from the factory.
         */
        List<StateCode.Decl> runtimeOperator(Object factory) {
            List<StateCode.Decl> out = new ArrayList<>();
            String pkg = "org.apache.flink.streaming.runtime.operators.sink.";
            String f = factory.getClass().getSimpleName();
            if (Refl.isA(factory, "SourceOperatorFactory")) {
                out.addAll(code.analyseClass("org.apache.flink.streaming.api.operators.SourceOperator"));
            } else if (f.equals("AsyncWaitOperatorFactory")) {
                // AsyncWaitOperator.initializeState: new ListStateDescriptor<>(STATE_NAME,
                // new StreamElementSerializer<>(input serializer)), built in setup() at run time
                String op = "org.apache.flink.streaming.api.operators.async.AsyncWaitOperator";
                Object in = inputSerializer();
                Object name = staticField(op, "STATE_NAME");
                if (in != null && name != null) {
                    Object ses = construct("org.apache.flink.streaming.runtime.streamrecord.StreamElementSerializer", in);
                    Object desc = construct("org.apache.flink.api.common.state.ListStateDescriptor", name, ses);
                    out.add(decl("OPERATOR_LIST", desc, op + "#initializeState"));
                }
            } else if (f.equals("SinkWriterOperatorFactory")) {
                out.addAll(code.analyseClass(pkg + "SinkWriterOperator"));
                Object sink = Refl.call(factory, "getSink", null);
                if (Refl.isA(sink, "SupportsWriterState") || Refl.isA(sink, "StatefulSink")) {
                    Object desc = staticField(pkg + "StatefulSinkWriterStateHandler", "WRITER_RAW_STATES_DESC");
                    if (desc != null) {
                        out.add(decl("OPERATOR_LIST", desc, pkg + "StatefulSinkWriterStateHandler#initializeState"));
                    }
                }
            } else if (f.equals("CommitterOperatorFactory")) {
                out.addAll(code.analyseClass(pkg + "CommitterOperator"));
            }
            return out;
        }

        Object inputSerializer() {
            Object ins = Refl.has(n, "getTypeSerializersIn", 0) ? Refl.call(n, "getTypeSerializersIn", null) : null;
            if (ins instanceof Object[] && ((Object[]) ins).length > 0) {
                return ((Object[]) ins)[0];
            }
            return Refl.call(n, "getTypeSerializerIn1", null);
        }

        static StateCode.Decl decl(String kind, Object desc, String site) {
            StateCode.Decl d = new StateCode.Decl();
            d.kind = kind;
            d.descriptor = desc;
            d.site = site;
            d.flinkCode = true;
            return d;
        }

        static Object staticField(String cls, String name) {
            try {
                Field fl = StateCode.field(Class.forName(cls, false, StateCode.FLINK_LOADER), name);
                if (fl == null) {
                    return null;
                }
                fl.setAccessible(true);
                return fl.get(null);
            } catch (Throwable e) {
                return null;
            }
        }

        static Object construct(String cls, Object... args) {
            try {
                for (java.lang.reflect.Constructor<?> k : Class.forName(cls, false, StateCode.FLINK_LOADER).getConstructors()) {
                    Class<?>[] p = k.getParameterTypes();
                    if (p.length == args.length) {
                        boolean ok = true;
                        for (int i = 0; i < p.length; i++) {
                            ok &= p[i].isInstance(args[i]);
                        }
                        if (ok) {
                            return k.newInstance(args);
                        }
                    }
                }
            } catch (Throwable e) {
                return null;
            }
            return null;
        }

        static boolean containsTimer(List<Map<String, Object>> timers, String name) {
            for (Map<String, Object> t : timers) {
                if (name.equals(t.get("name"))) {
                    return true;
                }
            }
            return false;
        }

        /**
         * {@code called_from}: the method Flink calls (open, initializeState, processElement...) a
         * declaring call in a helper of the job is reached from, which says when the state is
         * registered: while the task restores, or once it processes records.
         */
        static void calledFrom(Map<String, Object> e, StateCode.Decl d) {
            if (d.entry != null && d.site != null && !d.entry.equals(d.site)) {
                e.put("called_from", d.entry);
            }
        }

        /** Adds (or merges into an existing entry of the same descriptor and kind) one declaration. */
        void add(List<Map<String, Object>> out, Map<Object, Map<String, Object>> byDescriptor, StateCode.Decl d,
                String basis, String declaredIn) {
            String kind = d.kind != null ? d.kind : descriptorKind(d.descriptor);
            Map<String, Object> known = byDescriptor.get(d.descriptor);
            if (known != null && eq(known.get("kind"), kind)) {
                return;
            }
            String unresolved = d.unresolved;
            if (unresolved == null && code.uncertain.containsKey(d.descriptor)) {
                unresolved = "the descriptor is " + code.uncertain.get(d.descriptor);
            }
            Map<String, Object> e = describe(d.descriptor, kind, basis, declaredIn, unresolved);
            if (d.site != null && !d.site.equals(declaredIn)) {
                e.put("registered_in", d.site);
            }
            calledFrom(e, d);
            if (d.conditional) {
                e.put("conditional", true);
            }
            byDescriptor.put(d.descriptor, e);
            out.add(e);
        }

        /** The entry of a resolved descriptor. */
        Map<String, Object> describe(Object desc, String kind, String basis, String declaredIn, String unresolved) {
            final Object declared = desc;
            String name = (String) (Refl.has(desc, "getName", 0) ? Refl.call(desc, "getName", null)
                    : Refl.call(desc, "getStateId", null));
            String snapshot = null;
            String keySnapshot = null;
            String serializerClass = null;
            String why = unresolved;
            try {
                // a copy (as the task's is: Flink deserializes the function with its descriptors),
                // so that the job's own objects stay as main() left them
                desc = copy(desc);
                initialise(desc, config);
                Object v1 = v2ToV1(desc);
                if (v1 != null) {
                    // a v2 (async API / DataStream V2) descriptor: Flink's keyed backends register
                    // it as this v1 one (AsyncKeyedStateBackendAdaptor): a list state's ListSerializer ...
                    desc = v1;
                }
                Object ser;
                if (kind.equals("OPERATOR_LIST") || kind.equals("OPERATOR_UNION_LIST")) {
                    ser = Refl.has(desc, "getElementSerializer", 0) ? Refl.call(desc, "getElementSerializer", null)
                            : Refl.call(desc, "getSerializer", null);
                } else if (kind.equals("BROADCAST")) {
                    ser = Refl.call(desc, "getValueSerializer", null);
                    Object ks = Refl.call(desc, "getKeySerializer", null);
                    keySnapshot = StreamGraphSpecExporter.serializerSnapshot(ks);
                    types.add(ks);
                } else {
                    ser = Refl.call(desc, "getSerializer", null);
                }
                if (ser != null) {
                    types.add(ser);
                    serializerClass = ser.getClass().getName();
                    snapshot = StreamGraphSpecExporter.serializerSnapshot(ser);
                    if (snapshot == null && why == null) {
                        why = "the serializer " + serializerClass + " could not write its snapshot";
                    }
                }
            } catch (RuntimeException | LinkageError e) {
                if (why == null) {
                    why = "building the state's serializer failed as it would in Flink: " + rootCause(e);
                }
            }
            Object ti = typeInfo(declared);
            if (ti != null) {
                types.add(ti);
            }
            Map<String, Object> e = entry(name, kind, snapshot, keySnapshot, basis, declaredIn, why);
            e.put("type_info", ti == null ? null : ti.toString());
            e.put("ttl", ttl(Refl.call(declared, "getTtlConfig", null)));
            if (serializerClass != null) {
                e.put("serializer", serializerClass);
            }
            // keep the agreed order: the added fields after the agreed ones
            return reorder(e);
        }

        Map<String, Object> timerEntry(String name, Object namespaceSerializer, String basis, String site) {
            Object keySer = Refl.call(n, "getStateKeySerializer", null);
            String snapshot = null;
            String why = null;
            String serClass = null;
            try {
                Class<?> ts = Class.forName("org.apache.flink.streaming.api.operators.TimerSerializer", false,
                        StateCode.FLINK_LOADER);
                Object ser = null;
                for (java.lang.reflect.Constructor<?> k : ts.getDeclaredConstructors()) {
                    if (k.getParameterCount() == 2) {
                        k.setAccessible(true);
                        ser = k.newInstance(keySer, namespaceSerializer);
                    }
                }
                if (keySer == null) {
                    why = "timers of an operator without a key serializer";
                } else if (ser != null) {
                    serClass = ser.getClass().getName();
                    snapshot = StreamGraphSpecExporter.serializerSnapshot(ser);
                }
            } catch (Throwable e) {
                why = "the timer serializer could not be built: " + rootCause(e);
            }
            Map<String, Object> e = entry(name, "TIMERS", snapshot, null, basis, site, why);
            e.put("type_info", null);
            e.put("ttl", null);
            if (serClass != null) {
                e.put("serializer", serClass);
            }
            List<Object> saved = new ArrayList<>();
            saved.add("_timer_state/processing_" + name);
            saved.add("_timer_state/event_" + name);
            e.put("saved_as", saved);
            return reorder(e);
        }

        /** DataStream V2 (Flink 2.x): the process functions' usesStates(), converted as Flink's DefaultStateManager does. */
        List<Map<String, Object>> declarationsV2() {
            List<Map<String, Object>> out = new ArrayList<>();
            for (Object u : userObjects) {
                if (!StateCode.isA(u.getClass(), "org.apache.flink.datastream.api.function.ProcessFunction")) {
                    continue;
                }
                String where = u.getClass().getName() + "#usesStates";
                Object decls;
                try {
                    Method m = u.getClass().getMethod("usesStates");
                    m.setAccessible(true);
                    decls = m.invoke(u);
                } catch (Throwable e) {
                    out.add(entry(null, null, null, null, "state_declaration", where,
                            where + " failed: " + rootCause(e)));
                    continue;
                }
                if (!(decls instanceof Collection)) {
                    continue;
                }
                List<Object> sorted = new ArrayList<>((Collection<?>) decls);
                sorted.sort(Comparator.comparing(d -> String.valueOf(Refl.call(d, "getName", null))));
                for (Object d : sorted) { // usesStates() is usually a HashSet: by name, for a stable spec
                    out.add(declarationV2(d, where));
                }
            }
            return out;
        }

        Map<String, Object> declarationV2(Object d, String where) {
            String name = String.valueOf(Refl.call(d, "getName", null));
            String mode = String.valueOf(Refl.call(d, "getRedistributionMode", null));
            try {
                String pkg = "org.apache.flink.api.common.state.v2.";
                Object desc;
                String kind;
                if (StateCode.isA(d.getClass(), "org.apache.flink.api.common.state.ValueStateDeclaration")) {
                    desc = newDescriptor(pkg + "ValueStateDescriptor", name, typeInfoOf(Refl.call(d, "getTypeDescriptor", null)));
                    kind = "VALUE";
                } else if (StateCode.isA(d.getClass(), "org.apache.flink.api.common.state.ListStateDeclaration")) {
                    desc = newDescriptor(pkg + "ListStateDescriptor", name, typeInfoOf(Refl.call(d, "getTypeDescriptor", null)));
                    String strategy = String.valueOf(Refl.call(d, "getRedistributionStrategy", null));
                    kind = mode.equals("REDISTRIBUTABLE")
                            ? (strategy.equals("UNION") ? "OPERATOR_UNION_LIST" : "OPERATOR_LIST") : "LIST";
                } else if (StateCode.isA(d.getClass(), "org.apache.flink.api.common.state.MapStateDeclaration")) {
                    desc = newDescriptor(pkg + "MapStateDescriptor", name,
                            typeInfoOf(Refl.call(d, "getKeyTypeDescriptor", null)),
                            typeInfoOf(Refl.call(d, "getValueTypeDescriptor", null)));
                    kind = "MAP";
                } else if (StateCode.isA(d.getClass(), "org.apache.flink.api.common.state.BroadcastStateDeclaration")) {
                    desc = newDescriptor(pkg + "MapStateDescriptor", name,
                            typeInfoOf(Refl.call(d, "getKeyTypeDescriptor", null)),
                            typeInfoOf(Refl.call(d, "getValueTypeDescriptor", null)));
                    kind = "BROADCAST";
                } else if (StateCode.isA(d.getClass(), "org.apache.flink.api.common.state.ReducingStateDeclaration")) {
                    desc = newDescriptor(pkg + "ReducingStateDescriptor", name, Refl.call(d, "getReduceFunction", null),
                            typeInfoOf(Refl.call(d, "getTypeDescriptor", null)));
                    kind = "REDUCING";
                } else if (StateCode.isA(d.getClass(), "org.apache.flink.api.common.state.AggregatingStateDeclaration")) {
                    desc = newDescriptor(pkg + "AggregatingStateDescriptor", name,
                            Refl.call(d, "getAggregateFunction", null), typeInfoOf(Refl.call(d, "getTypeDescriptor", null)));
                    kind = "AGGREGATING";
                } else {
                    return entry(name, null, null, null, "state_declaration", where,
                            "a state declaration of an unknown kind: " + d.getClass().getName());
                }
                Map<String, Object> e = describe(desc, kind, "state_declaration", where, null);
                if (kind.equals("BROADCAST") && e.get("key_serializer_snapshot") == null) {
                    Object ks = Refl.call(desc, "getUserKeySerializer", null);
                    if (ks != null) {
                        e.put("key_serializer_snapshot", StreamGraphSpecExporter.serializerSnapshot(ks));
                    }
                }
                return reorder(e);
            } catch (Throwable e) {
                return entry(name, null, null, null, "state_declaration", where,
                        "converting the declaration as Flink does failed: " + rootCause(e));
            }
        }

        Object typeInfoOf(Object typeDescriptor) throws Exception {
            Object cls = Refl.call(typeDescriptor, "getTypeClass", null);
            Class<?> te = Class.forName("org.apache.flink.api.java.typeutils.TypeExtractor", false, StateCode.FLINK_LOADER);
            return te.getMethod("createTypeInfo", Class.class).invoke(null, cls);
        }

        Object newDescriptor(String cls, Object... args) throws Exception {
            Class<?> c = Class.forName(cls, false, StateCode.FLINK_LOADER);
            for (java.lang.reflect.Constructor<?> k : c.getConstructors()) {
                Class<?>[] p = k.getParameterTypes();
                if (p.length != args.length) {
                    continue;
                }
                boolean ok = true;
                for (int i = 0; i < p.length; i++) {
                    if (args[i] != null && !p[i].isInstance(args[i])) {
                        ok = false;
                    }
                }
                if (ok) {
                    return k.newInstance(args);
                }
            }
            throw new IllegalStateException("no constructor of " + cls + " for the declaration");
        }

        /**
         * Walks the operator (or factory) object: user objects (job classes), StateDescriptors in
         * fields, window triggers. Flink's wrapper objects are walked through; serializers and type
         * informations are not (they hold no functions).
         */
        void walk(Object o, String path, boolean inUser, int depth) {
            if (o == null || depth > 8 || budget-- <= 0 || seen.put(o, Boolean.TRUE) != null) {
                return;
            }
            Class<?> c = o.getClass();
            if (StateCode.isA(c, "org.apache.flink.api.common.state.StateDescriptor")
                    || StateCode.isA(c, "org.apache.flink.api.common.state.v2.StateDescriptor")) {
                boolean bcast = path.contains("broadcastStateDescriptors");
                if (fieldDescriptors.put(o, new Object[] {path, inUser, bcast}) == null) {
                    fieldDescriptorOrder.add(o);
                }
                return;
            }
            if (o instanceof Collection) {
                int i = 0;
                for (Object e : (Collection<?>) o) {
                    walk(e, path + "[" + i++ + "]", inUser, depth + 1);
                }
                return;
            }
            if (o instanceof Map) {
                for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                    walk(e.getKey(), path + "{key}", inUser, depth + 1);
                    walk(e.getValue(), path + "[" + e.getKey() + "]", inUser, depth + 1);
                }
                return;
            }
            if (c.isArray()) {
                if (!c.getComponentType().isPrimitive()) {
                    Object[] a = (Object[]) o;
                    for (int i = 0; i < a.length; i++) {
                        walk(a[i], path + "[" + i + "]", inUser, depth + 1);
                    }
                }
                return;
            }
            boolean job = code.isJob(c);
            String cn = c.getName();
            if (!job && (!cn.startsWith("org.apache.flink.") || Refl.isA(o, "TypeSerializer")
                    || Refl.isA(o, "TypeInformation") || Refl.isA(o, "ExecutionConfig") || cn.startsWith("org.apache.flink.core.")
                    || cn.startsWith("org.apache.flink.configuration."))) {
                return;
            }
            if (job) {
                if (!userObjects.contains(o)) {
                    userObjects.add(o);
                }
            } else if (StateCode.isA(c, "org.apache.flink.streaming.api.windowing.triggers.Trigger")) {
                triggers.add(o);
            }
            for (Class<?> k = c; k != null && k != Object.class; k = k.getSuperclass()) {
                for (Field f : k.getDeclaredFields()) {
                    if (Modifier.isStatic(f.getModifiers()) || f.getType().isPrimitive()) {
                        continue;
                    }
                    Object v;
                    try {
                        f.setAccessible(true);
                        v = f.get(o);
                    } catch (RuntimeException | IllegalAccessException e) {
                        continue;
                    }
                    String p = job ? k.getName() + "." + f.getName() : path + "." + f.getName();
                    walk(v, p, inUser || job, depth + 1);
                }
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    static boolean eq(Object a, Object b) {
        return a == null ? b == null : a.equals(b);
    }

    /** The kind a descriptor's own type says (keyed state kinds). */
    static String descriptorKind(Object desc) {
        Object t = Refl.call(desc, "getType", null);
        String s = t == null ? null : t.toString();
        if (s == null || s.equals("UNKNOWN")) {
            return null;
        }
        return s;
    }

    /** Flink's initializeSerializerUnlessSet(ExecutionConfig): what the runtime context does with the job's config. */
    static void initialise(Object desc, Object config) {
        if (config == null) {
            return;
        }
        for (Class<?> k = desc.getClass(); k != null; k = k.getSuperclass()) {
            for (Method m : k.getDeclaredMethods()) {
                if (m.getName().equals("initializeSerializerUnlessSet") && m.getParameterCount() == 1
                        && m.getParameterTypes()[0].getName().equals("org.apache.flink.api.common.ExecutionConfig")) {
                    try {
                        m.setAccessible(true);
                        m.invoke(desc, config);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        Throwable c = e.getCause();
                        throw c instanceof RuntimeException ? (RuntimeException) c : new RuntimeException(c);
                    } catch (IllegalAccessException e) {
                        throw new RuntimeException(e);
                    }
                    return;
                }
            }
        }
    }

    /** A serialized copy of a descriptor (InstantiationUtil.clone with the context loader), else itself. */
    static Object copy(Object desc) {
        try {
            Class<?> u = Class.forName("org.apache.flink.util.InstantiationUtil", false, StateCode.FLINK_LOADER);
            Object c = u.getMethod("clone", java.io.Serializable.class, ClassLoader.class)
                    .invoke(null, desc, Thread.currentThread().getContextClassLoader());
            return c != null ? c : desc;
        } catch (Throwable e) {
            return desc;
        }
    }

    /**
     * A v2 StateDescriptor as Flink's keyed backends register it
     * ({@code StateDescriptorUtils.transformFromV2ToV1}, Flink 2.x), or null (a v1 one, or no such method).
     */
    static Object v2ToV1(Object desc) {
        if (!StateCode.isA(desc.getClass(), "org.apache.flink.api.common.state.v2.StateDescriptor")) {
            return null;
        }
        try {
            Class<?> u = Class.forName("org.apache.flink.runtime.state.v2.StateDescriptorUtils", false, StateCode.FLINK_LOADER);
            Class<?> v2 = Class.forName("org.apache.flink.api.common.state.v2.StateDescriptor", false, StateCode.FLINK_LOADER);
            return u.getMethod("transformFromV2ToV1", v2).invoke(null, desc);
        } catch (Throwable e) {
            return null;
        }
    }

    /** The descriptor's TypeInformation (v1: its typeInfo field; v2: getTypeInformation()), or null. */
    static Object typeInfo(Object desc) {
        if (Refl.has(desc, "getTypeInformation", 0)) {
            return Refl.call(desc, "getTypeInformation", null);
        }
        Field f = StateCode.field(desc.getClass(), "typeInfo");
        if (f == null) {
            return null;
        }
        try {
            f.setAccessible(true);
            return f.get(desc);
        } catch (RuntimeException | IllegalAccessException e) {
            return null;
        }
    }

    /** The StateTtlConfig as Flink holds it, or null when TTL is off. */
    static Map<String, Object> ttl(Object cfg) {
        if (cfg == null || !Boolean.TRUE.equals(Refl.call(cfg, "isEnabled", false))) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        Object d = Refl.has(cfg, "getTimeToLive", 0) ? Refl.call(cfg, "getTimeToLive", null) : null;
        if (d instanceof java.time.Duration) {
            m.put("ttl_ms", ((java.time.Duration) d).toMillis());
        } else {
            m.put("ttl_ms", Refl.call(Refl.call(cfg, "getTtl", null), "toMilliseconds", null));
        }
        m.put("update_type", String.valueOf(Refl.call(cfg, "getUpdateType", null)));
        m.put("state_visibility", String.valueOf(Refl.call(cfg, "getStateVisibility", null)));
        Object tc = Refl.call(cfg, "getTtlTimeCharacteristic", null);
        m.put("time_characteristic", tc == null ? null : tc.toString());
        Object cs = Refl.call(cfg, "getCleanupStrategies", null);
        List<Object> cleanup = new ArrayList<>();
        Field f = cs == null ? null : StateCode.field(cs.getClass(), "strategies");
        if (f != null) {
            try {
                f.setAccessible(true);
                Object strategies = f.get(cs);
                if (strategies instanceof Map) {
                    for (Map.Entry<?, ?> s : ((Map<?, ?>) strategies).entrySet()) {
                        Map<String, Object> one = new LinkedHashMap<>();
                        one.put("strategy", String.valueOf(s.getKey()));
                        Object v = s.getValue();
                        if (Refl.has(v, "getCleanupSize", 0)) {
                            one.put("cleanup_size", Refl.call(v, "getCleanupSize", null));
                            one.put("run_cleanup_for_every_record", Refl.call(v, "runCleanupForEveryRecord", null));
                        }
                        if (Refl.has(v, "getQueryTimeAfterNumEntries", 0)) {
                            one.put("query_time_after_num_entries", Refl.call(v, "getQueryTimeAfterNumEntries", null));
                            Object p = Refl.has(v, "getPeriodicCompactionTime", 0)
                                    ? Refl.call(v, "getPeriodicCompactionTime", null) : null;
                            if (p instanceof java.time.Duration) {
                                one.put("periodic_compaction_time_ms", ((java.time.Duration) p).toMillis());
                            } else if (p != null) {
                                one.put("periodic_compaction_time_ms", Refl.call(p, "toMilliseconds", null));
                            }
                        }
                        cleanup.add(one);
                    }
                }
            } catch (RuntimeException | IllegalAccessException e) {
                // left empty
            }
        }
        m.put("cleanup", cleanup);
        m.put("cleanup_in_background", Refl.call(cs, "isCleanupInBackground", null));
        return m;
    }

    /** An entry with the agreed fields, in the agreed order. */
    static Map<String, Object> entry(String name, String kind, String snapshot, String keySnapshot, String basis,
            String declaredIn, String unresolved) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("name", name);
        e.put("kind", kind);
        e.put("serializer_snapshot", snapshot);
        if (keySnapshot != null || "BROADCAST".equals(kind)) {
            e.put("key_serializer_snapshot", keySnapshot);
        }
        e.put("type_info", null);
        e.put("ttl", null);
        e.put("basis", basis);
        e.put("declared_in", declaredIn);
        e.put("unresolved", unresolved);
        return e;
    }

    static final List<String> ORDER = java.util.Arrays.asList(
            "name", "kind", "serializer_snapshot", "key_serializer_snapshot", "type_info", "ttl", "basis",
            "declared_in", "unresolved");

    static Map<String, Object> reorder(Map<String, Object> e) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String k : ORDER) {
            if (e.containsKey(k)) {
                out.put(k, e.get(k));
            }
        }
        for (Map.Entry<String, Object> x : e.entrySet()) {
            if (!out.containsKey(x.getKey())) {
                out.put(x.getKey(), x.getValue());
            }
        }
        return out;
    }

    static String rootCause(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t.getClass().getName() + ": " + t.getMessage();
    }

    static <K, V> Map<K, V> hashMap() {
        return new HashMap<>();
    }
}
