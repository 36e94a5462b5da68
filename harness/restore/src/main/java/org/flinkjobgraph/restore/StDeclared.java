package org.flinkjobgraph.restore;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.functions.Function;
import org.apache.flink.api.common.functions.RichFunction;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.KeyedStateStore;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.typeutils.ListTypeInfo;
import org.apache.flink.api.java.typeutils.MapTypeInfo;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.util.Collector;
import org.apache.flink.util.InstantiationUtil;
import org.flinkjobgraph.harness.Refl;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * {@code declared_types_v1} / {@code _v2}: the states a job declares, read from the job itself. The
 * <b>declaration run</b>: each state function of the StreamGraph (a copy of it, deserialized with
 * the job's class loader) runs the code that declares its states against a recording runtime
 * context / initialization context, which takes every descriptor the code registers, initializes
 * its serializer with the job's ExecutionConfig as Flink does at registration
 * ({@code initializeSerializerUnlessSet}) and hands back an inert state: {@code open()} (also for
 * states declared in a hook open() calls), {@code initializeState} (operator state, keyed state
 * through the keyed state store) or, for states declared on the first record, {@code
 * processElement} with no context (the base class's record step does nothing then). The window
 * state's and the broadcast state's descriptors are the ones Flink's operators hold in the
 * StreamGraph (built in main()). Nothing else of the job runs; the result does not depend on
 * what the restore does.
 */
final class StDeclared {
    private StDeclared() {}

    /** One registered descriptor, and how it was registered (the store's method). */
    static final class Reg {
        final StateDescriptor<?, ?> d;
        final String method;
        /** The descriptor's TypeInformation (a window's: the type main() gave the window). */
        final TypeInformation<?> info;

        Reg(StateDescriptor<?, ?> d, String method, TypeInformation<?> info) {
            this.d = d;
            this.method = method;
            this.info = info;
        }
    }

    /** Per operator key: "key" (as before: the key's TypeInformation and serializer) and "states". */
    @SuppressWarnings("unchecked")
    static Map<String, Object> read(StreamGraph sg, StPlan.Prog p, ClassLoader cl) throws Exception {
        ExecutionConfig ec = sg.getExecutionConfig();
        Map<String, Object> out = new LinkedHashMap<>();
        Thread t = Thread.currentThread();
        ClassLoader prev = t.getContextClassLoader();
        t.setContextClassLoader(cl);
        Object events = System.getProperties().remove("statetypes.probe.events"); // the declaration run reports nowhere
        try {
            Map<String, List<Reg>> bySeg = new LinkedHashMap<>();
            for (StreamNode n : sg.getStreamNodes()) {
                Object factory = n.getOperatorFactory();
                Object op = Refl.call(factory, "getOperator", null);
                Object fn = Refl.call(factory, "getUserFunction", null);
                String fnClass = fn == null ? "" : fn.getClass().getName();
                if (fnClass.equals(StClasses.PACKAGE + ".KeyedFn")) {
                    bySeg.put("keyed", run((Function) fn, p.seg("keyed").f.get("reg"), cl, ec));
                } else if (fnClass.equals(StClasses.PACKAGE + ".BufferFn")) {
                    bySeg.put("ost", run((Function) fn, "init", cl, ec));
                } else if (op != null && hasField(op, "windowStateDescriptor")) {
                    // built with a serializer: its type is the one main() gave the window (StJob's part)
                    Object parts = Class.forName(StRunner.MAIN_CLASS, true, cl).getConstructor().newInstance();
                    boolean reduce = "reduce".equals(p.seg("win").f.get("fn"));
                    TypeInformation<?> info = (TypeInformation<?>) parts.getClass()
                            .getMethod(reduce ? "windowPairs" : "windowAccumulator").invoke(parts);
                    StateDescriptor<?, ?> d = initialized((StateDescriptor<?, ?>) field(op, "windowStateDescriptor"), cl, ec);
                    bySeg.put("win", List.of(new Reg(d, "window operator", info)));
                } else if (op != null && hasField(op, "broadcastStateDescriptors")) {
                    List<Reg> l = new ArrayList<>();
                    for (Object x : (Collection<?>) field(op, "broadcastStateDescriptors")) {
                        StateDescriptor<?, ?> d = initialized((StateDescriptor<?, ?>) x, cl, ec);
                        l.add(new Reg(d, "broadcast(...)", (TypeInformation<?>) field(d, "typeInfo")));
                    }
                    bySeg.put("bc", l);
                }
            }
            for (StPlan.Seg s : p.segs) {
                List<Reg> regs = bySeg.get(s.kind);
                for (StPlan.St st : p.states()) {
                    if (st.seg != s) {
                        continue;
                    }
                    Map<String, Object> op = (Map<String, Object>) out.get(s.key());
                    if (op == null) {
                        op = new LinkedHashMap<>();
                        if (st.keyType != null) {
                            op.put("key", StRunner.declared(StRunner.userInfo(cl, "keyInfo", st.keyType)));
                        }
                        op.put("states", new LinkedHashMap<String, Object>());
                        out.put(s.key(), op);
                    }
                    Reg reg = null;
                    for (Reg r : regs == null ? List.<Reg>of() : regs) {
                        if (r.d.getName().equals(st.name)) {
                            reg = r;
                        }
                    }
                    ((Map<String, Object>) op.get("states")).put(st.name, entry(st, reg, s.kind));
                }
            }
        } finally {
            if (events != null) {
                System.getProperties().put("statetypes.probe.events", events);
            }
            t.setContextClassLoader(prev);
        }
        return out;
    }

    private static Map<String, Object> entry(StPlan.St st, Reg reg, String segKind) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (reg == null) {
            m.put("error", "the declaration run registered no state named " + st.name);
            m.put("state_kind", st.kind);
            return m;
        }
        StateDescriptor<?, ?> d = reg.d;
        TypeInformation<?> info = reg.info;
        TypeSerializer<?> ser = d.getSerializer();
        TypeInformation<?> valueInfo = info;
        TypeSerializer<?> valueSer = ser;
        if (info instanceof ListTypeInfo && !segKind.equals("ost")) {
            valueInfo = ((ListTypeInfo<?>) info).getElementTypeInfo();
            valueSer = (TypeSerializer<?>) Refl.call(ser, "getElementSerializer", null);
        } else if (info instanceof MapTypeInfo) {
            valueInfo = ((MapTypeInfo<?, ?>) info).getValueTypeInfo();
            valueSer = (TypeSerializer<?>) Refl.call(ser, "getValueSerializer", null);
        } else if (segKind.equals("ost") && info instanceof ListTypeInfo) {
            // operator list state: the descriptor's type is the list's, its state holds the elements
            valueInfo = ((ListTypeInfo<?>) info).getElementTypeInfo();
            valueSer = (TypeSerializer<?>) Refl.call(ser, "getElementSerializer", null);
        }
        m.put("type_info", valueInfo == null ? null : valueInfo.toString());
        m.put("type_info_class", valueInfo == null ? null : valueInfo.getClass().getName());
        m.put("serializer", tree(valueSer));
        m.put("state_kind", st.kind);
        if (valueSer != ser) {
            m.put("state_serializer", tree(ser));
        }
        m.put("descriptor_class", d.getClass().getName());
        m.put("descriptor_type", String.valueOf(d.getType()));
        m.put("registered_with", reg.method);
        m.put("registration", st.registration);
        m.put("style", st.style == null ? null : StStyles.style(st.style));
        m.put("type_expr", st.style == null ? null : StStyles.expr(st.style));
        m.put("holder", st.style == null || segKind.equals("win") ? null : StCode.holder(st));
        m.put("ttl", ttl(d.getTtlConfig()));
        m.put("source", segKind.equals("win") || segKind.equals("bc") ? "stream graph" : "declaration run");
        return m;
    }

    static Map<String, Object> tree(TypeSerializer<?> s) {
        try {
            return StMeta.tree(s.snapshotConfiguration(), new ArrayList<>(), "declared");
        } catch (Throwable e) {
            return StMeta.error(e);
        }
    }

    /** The TTL configuration as Flink's getters give it; null when TTL is not enabled. */
    static Map<String, Object> ttl(StateTtlConfig c) {
        if (c == null || !c.isEnabled()) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        Object d = Refl.call(c, "getTimeToLive", null);
        m.put("ttl_ms", d instanceof java.time.Duration ? ((java.time.Duration) d).toMillis()
                : ((Number) Refl.call(Refl.call(c, "getTtl", null), "toMilliseconds", null)).longValue());
        m.put("update_type", String.valueOf(c.getUpdateType()));
        m.put("state_visibility", String.valueOf(c.getStateVisibility()));
        m.put("ttl_time_characteristic", String.valueOf(c.getTtlTimeCharacteristic()));
        StateTtlConfig.CleanupStrategies cs = c.getCleanupStrategies();
        Map<String, Object> cl = new LinkedHashMap<>();
        cl.put("in_background", cs.isCleanupInBackground());
        cl.put("full_snapshot", cs.inFullSnapshot());
        StateTtlConfig.IncrementalCleanupStrategy inc = cs.getIncrementalCleanupStrategy();
        if (inc != null) {
            Map<String, Object> i = new LinkedHashMap<>();
            i.put("cleanup_size", inc.getCleanupSize());
            i.put("run_for_every_record", inc.runCleanupForEveryRecord());
            cl.put("incremental", i);
        }
        StateTtlConfig.RocksdbCompactFilterCleanupStrategy rc = cs.getRocksdbCompactFilterCleanupStrategy();
        if (rc != null) {
            Map<String, Object> i = new LinkedHashMap<>();
            i.put("query_time_after_num_entries", rc.getQueryTimeAfterNumEntries());
            cl.put("rocksdb_compaction_filter", i);
        }
        m.put("cleanup", cl);
        return m;
    }

    // ------------------------------------------------------------------ the declaration run

    private static StateDescriptor<?, ?> initialized(StateDescriptor<?, ?> live, ClassLoader cl, ExecutionConfig ec)
            throws Exception {
        StateDescriptor<?, ?> d = InstantiationUtil.clone(live, cl);
        d.initializeSerializerUnlessSet(ec);
        return d;
    }

    /** Runs the code of {@code live} (a copy) that declares its states; returns what it registered. */
    private static List<Reg> run(Function live, String registration, ClassLoader cl, ExecutionConfig ec) throws Exception {
        Function fn = InstantiationUtil.clone(live, cl);
        List<Reg> regs = new ArrayList<>();
        KeyedStateStore keyed = recording(KeyedStateStore.class, regs, ec);
        OperatorStateStore operator = recording(OperatorStateStore.class, regs, ec);
        ((RichFunction) fn).setRuntimeContext(recording(RuntimeContext.class, regs, ec));
        try {
            switch (registration) {
                case "init":
                    ((CheckpointedFunction) fn).initializeState(initContext(keyed, operator));
                    break;
                case "lazy": {
                    Method m = fn.getClass().getMethod("processElement", Object.class,
                            Class.forName("org.apache.flink.streaming.api.functions.KeyedProcessFunction$Context", false, cl),
                            Collector.class);
                    m.invoke(fn, 0L, null, inert(Collector.class));
                    break;
                }
                default:
                    open(fn);
            }
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw new IllegalStateException("the declaration run of " + fn.getClass().getName() + " failed", e.getCause());
        }
        return regs;
    }

    private static void open(Function fn) throws Exception {
        Class<?> openContext = null;
        try {
            openContext = Class.forName("org.apache.flink.api.common.functions.OpenContext");
        } catch (ClassNotFoundException e) {
            // Flink before 1.19: open(Configuration)
        }
        if (openContext != null) {
            Object ctx = Class.forName("org.apache.flink.api.common.functions.DefaultOpenContext").getField("INSTANCE").get(null);
            fn.getClass().getMethod("open", openContext).invoke(fn, ctx);
        } else {
            Class<?> conf = Class.forName("org.apache.flink.configuration.Configuration");
            fn.getClass().getMethod("open", conf).invoke(fn, conf.getConstructor().newInstance());
        }
    }

    private static FunctionInitializationContext initContext(KeyedStateStore keyed, OperatorStateStore operator) {
        return (FunctionInitializationContext) Proxy.newProxyInstance(StDeclared.class.getClassLoader(),
                new Class<?>[] {FunctionInitializationContext.class}, (proxy, m, args) -> {
                    switch (m.getName()) {
                        case "getKeyedStateStore": return keyed;
                        case "getOperatorStateStore": return operator;
                        case "isRestored": return false;
                        case "getRestoredCheckpointId": return OptionalLong.empty();
                        default: return basic(proxy, m, args);
                    }
                });
    }

    /** A proxy of {@code type} that records the state descriptors passed to it and returns inert states. */
    @SuppressWarnings("unchecked")
    static <T> T recording(Class<T> type, List<Reg> regs, ExecutionConfig ec) {
        InvocationHandler h = (proxy, m, args) -> {
            if (args != null && args.length == 1 && args[0] instanceof StateDescriptor && m.getName().startsWith("get")) {
                StateDescriptor<?, ?> d = (StateDescriptor<?, ?>) args[0];
                TypeInformation<?> info = (TypeInformation<?>) field(d, "typeInfo");
                d.initializeSerializerUnlessSet(ec);
                regs.add(new Reg(d, m.getName(), info));
                return m.getReturnType().isInterface() ? inert(m.getReturnType()) : null;
            }
            if (m.getName().equals("getExecutionConfig")) {
                return ec;
            }
            return basic(proxy, m, args);
        };
        return (T) Proxy.newProxyInstance(StDeclared.class.getClassLoader(), new Class<?>[] {type}, h);
    }

    /** An object of interface {@code type} whose methods do nothing and return defaults. */
    @SuppressWarnings("unchecked")
    static <T> T inert(Class<T> type) {
        return (T) Proxy.newProxyInstance(StDeclared.class.getClassLoader(), new Class<?>[] {type}, StDeclared::basic);
    }

    private static Object basic(Object proxy, Method m, Object[] args) {
        switch (m.getName()) {
            case "toString": return "declaration-run " + m.getDeclaringClass().getSimpleName();
            case "hashCode": return System.identityHashCode(proxy);
            case "equals": return proxy == args[0];
            default:
        }
        Class<?> r = m.getReturnType();
        if (r == boolean.class) {
            return false;
        }
        if (r == int.class || r == long.class || r == short.class || r == byte.class || r == char.class
                || r == double.class || r == float.class) {
            return r == long.class ? (Object) 0L : r == double.class ? (Object) 0.0 : r == float.class ? (Object) 0f
                    : r == short.class ? (Object) (short) 0 : r == byte.class ? (Object) (byte) 0 : r == char.class ? (Object) '\0' : 0;
        }
        return null;
    }

    static boolean hasField(Object o, String name) {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (f.getName().equals(name)) {
                    return true;
                }
            }
        }
        return false;
    }

    static Object field(Object o, String name) {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // superclass
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalArgumentException("no field " + name + " in " + o.getClass());
    }
}
