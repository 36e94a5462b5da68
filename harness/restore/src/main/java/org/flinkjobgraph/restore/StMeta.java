package org.flinkjobgraph.restore;

import org.apache.flink.api.common.typeutils.CompositeTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.OperatorBackendSerializationProxy;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.flinkjobgraph.harness.Refl;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What Flink itself reads from a savepoint's state streams, with a given job's classes: per
 * operator the keyed and operator serialization proxies (Flink's KeyedBackendSerializationProxy
 * and OperatorBackendSerializationProxy, read from the first subtask's stream) and every
 * serializer snapshot tree, in the shape of the statetypes vectors' meta_read_by_*_flink. Facts
 * the vectors' shape leaves out (Kryo registrations and default serializers, POJO subclass
 * registrations) go to a separate list, so the shape stays the vectors'.
 */
final class StMeta {
    private StMeta() {}

    static Map<String, Object> read(byte[] bytes, String pointer, ClassLoader cl, List<Object> facts) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        MetadataInfo.header(bytes, out);
        Thread t = Thread.currentThread();
        ClassLoader prev = t.getContextClassLoader();
        t.setContextClassLoader(cl);
        try {
            CheckpointMetadata md = Checkpoints.loadCheckpointMetadata(
                    new DataInputStream(new ByteArrayInputStream(bytes)), cl, pointer);
            out.put("checkpoint_id", md.getCheckpointId());
            List<Object> ops = new ArrayList<>();
            for (OperatorState os : md.getOperatorStates()) {
                ops.add(operator(os, cl, facts));
            }
            out.put("operators", ops);
        } finally {
            t.setContextClassLoader(prev);
        }
        return out;
    }

    static Map<String, Object> operator(OperatorState os, ClassLoader cl, List<Object> facts) {
        Map<String, Object> o = MetadataInfo.operatorHead(os);
        String id = os.getOperatorID().toHexString();
        o.put("has_coordinator_state", os.getCoordinatorState() != null);
        Map<String, Integer> handles = new TreeMap<>();
        KeyedStateHandle firstKeyed = null;
        OperatorStateHandle firstOperator = null;
        for (Map.Entry<Integer, OperatorSubtaskState> e : new TreeMap<>(os.getSubtaskStates()).entrySet()) {
            OperatorSubtaskState s = e.getValue();
            count(handles, "managed_keyed", s.getManagedKeyedState());
            count(handles, "raw_keyed", s.getRawKeyedState());
            count(handles, "managed_operator", s.getManagedOperatorState());
            count(handles, "raw_operator", s.getRawOperatorState());
            for (KeyedStateHandle k : s.getManagedKeyedState()) {
                if (firstKeyed == null && k != null) {
                    firstKeyed = k;
                }
            }
            for (OperatorStateHandle h : s.getManagedOperatorState()) {
                if (firstOperator == null && h != null) {
                    firstOperator = h;
                }
            }
        }
        o.put("handles", new LinkedHashMap<>(handles));
        if (firstKeyed != null) {
            o.put("keyed", keyed(firstKeyed, cl, facts, id));
        }
        if (firstOperator != null) {
            o.put("operator", operatorProxy(firstOperator, cl, facts, id));
        }
        return o;
    }

    private static void count(Map<String, Integer> handles, String kind, Collection<?> objs) {
        for (Object x : objs) {
            if (x != null) {
                handles.merge(kind + ":" + MetadataInfo.describe(x), 1, Integer::sum);
            }
        }
    }

    static Map<String, Object> keyed(KeyedStateHandle k, ClassLoader cl, List<Object> facts, String opId) {
        return proxy(k, in -> {
            KeyedBackendSerializationProxy<?> p = new KeyedBackendSerializationProxy<>(cl);
            p.read(in);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("proxy_version", p.getReadVersion());
            m.put("compression", p.isUsingKeyGroupCompression());
            m.put("key_serializer", tree(p.getKeySerializerSnapshot(), facts, opId + "/keyed/key_serializer"));
            m.put("states", states(p.getStateMetaInfoSnapshots(), facts, opId + "/keyed"));
            return m;
        });
    }

    static Map<String, Object> operatorProxy(OperatorStateHandle h, ClassLoader cl, List<Object> facts, String opId) {
        return proxy(h, in -> {
            OperatorBackendSerializationProxy p = new OperatorBackendSerializationProxy(cl);
            p.read(in);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("proxy_version", p.getReadVersion());
            m.put("states", states(p.getOperatorStateMetaInfoSnapshots(), facts, opId + "/operator"));
            if (!p.getBroadcastStateMetaInfoSnapshots().isEmpty()) {
                m.put("broadcast_states", states(p.getBroadcastStateMetaInfoSnapshots(), facts, opId + "/broadcast"));
            }
            return m;
        });
    }

    /** Reads one serialization proxy from a handle's meta stream. */
    interface ProxyReader {
        Map<String, Object> read(DataInputViewStreamWrapper in) throws Exception;
    }

    /** A handle's proxy as {@code reader} makes it, or the root cause Flink's reading threw. */
    static Map<String, Object> proxy(Object handle, ProxyReader reader) {
        try (FSDataInputStream in = MetadataInfo.metaStream(handle).openInputStream()) {
            return reader.read(new DataInputViewStreamWrapper(in));
        } catch (Throwable e) {
            return error(e);
        }
    }

    static List<Object> states(Collection<StateMetaInfoSnapshot> snapshots, List<Object> facts, String where) {
        List<Object> out = new ArrayList<>();
        for (StateMetaInfoSnapshot s : snapshots) {
            out.add(state(s, facts, where));
        }
        return out;
    }

    /** A proxy Flink cannot read with these classes: the root cause, as the vectors record it. */
    static Map<String, Object> error(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        List<Object> l = new ArrayList<>();
        l.add(Runner.clean(root.toString(), "\u0000", null));
        m.put("error", l);
        return m;
    }

    static Map<String, Object> state(StateMetaInfoSnapshot s, List<Object> facts, String where) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", s.getName());
        m.put("backend_state_type", s.getBackendStateType().toString());
        m.put("options", new LinkedHashMap<>(s.getOptionsImmutable()));
        Map<String, Object> ser = new LinkedHashMap<>();
        for (Map.Entry<String, TypeSerializerSnapshot<?>> e : s.getSerializerSnapshotsImmutable().entrySet()) {
            ser.put(e.getKey(), e.getValue() == null ? null : tree(e.getValue(), facts, where + "/" + s.getName() + "/" + e.getKey()));
        }
        m.put("serializers", ser);
        return m;
    }

    // ------------------------------------------------------------------ snapshot trees

    /**
     * One snapshot as the vectors show it: class, type_class (the class the snapshot is about:
     * tuple, POJO, Kryo, enum, array component, value class...), nested (composite snapshots),
     * POJO fields (name + snapshot; a field the reading classes lack has none and is listed in
     * absent_fields) and enum constants. Other facts go to {@code facts} with the node's path
     * and its pre-order index below {@code root} (nested, then POJO fields, then subclasses).
     */
    static Map<String, Object> tree(TypeSerializerSnapshot<?> s, List<Object> facts, String root) {
        int[] counter = {0};
        return tree(s, facts, root, counter);
    }

    private static Map<String, Object> tree(TypeSerializerSnapshot<?> s, List<Object> facts, String root, int[] counter) {
        int index = counter[0]++;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("class", s.getClass().getName());
        Map<String, Object> fact = new LinkedHashMap<>();
        Object data = field(s, "snapshotData");
        String cls = s.getClass().getName();
        Class<?> typeClass = null;
        if (data != null && cls.endsWith("PojoSerializerSnapshot")) {
            typeClass = (Class<?>) Refl.call(data, "getPojoClass", null);
        } else if (data != null && cls.endsWith("KryoSerializerSnapshot")) {
            typeClass = (Class<?>) Refl.call(data, "getTypeClass", null);
        } else {
            typeClass = classField(s);
        }
        if (typeClass != null) {
            m.put("type_class", typeClass.getName());
        }
        List<TypeSerializerSnapshot<?>> nested = null;
        if (s instanceof CompositeTypeSerializerSnapshot) {
            nested = new ArrayList<>();
            for (TypeSerializerSnapshot<?> n : ((CompositeTypeSerializerSnapshot<?, ?>) s).getNestedSerializerSnapshots()) {
                nested.add(n);
            }
        } else {
            nested = snapshotFields(s);
        }
        if (nested != null) {
            List<Object> l = new ArrayList<>();
            for (TypeSerializerSnapshot<?> n : nested) {
                l.add(n == null ? null : tree(n, facts, root, counter));
            }
            m.put("nested", l);
        }
        if (data != null && cls.endsWith("PojoSerializerSnapshot")) {
            List<Object> fields = new ArrayList<>();
            List<Object> absent = new ArrayList<>();
            for (Object[] kv : entries(Refl.call(data, "getFieldSerializerSnapshots", null))) {
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("name", kv[0]);
                boolean keyPresent = kv[1] != null;
                f.put("serializer", keyPresent && kv[2] != null
                        ? tree((TypeSerializerSnapshot<?>) kv[2], facts, root, counter) : null);
                if (!keyPresent) {
                    absent.add(kv[0]);
                }
                fields.add(f);
            }
            m.put("fields", fields);
            if (!absent.isEmpty()) {
                m.put("absent_fields", absent);
            }
            for (String which : new String[] {"registered_subclasses", "non_registered_subclasses"}) {
                String getter = which.equals("registered_subclasses")
                        ? "getRegisteredSubclassSerializerSnapshots" : "getNonRegisteredSubclassSerializerSnapshots";
                List<Object> subs = new ArrayList<>();
                for (Object[] kv : entries(Refl.call(data, getter, null))) {
                    subs.add(kv[0]);
                    if (kv[2] != null) {
                        tree((TypeSerializerSnapshot<?>) kv[2], facts, root, counter);
                    }
                }
                if (!subs.isEmpty()) {
                    fact.put(which, subs);
                }
            }
        }
        Object[] enums = enumConstants(s);
        if (enums != null) {
            List<Object> c = new ArrayList<>();
            for (Object e : enums) {
                c.add(((Enum<?>) e).name());
            }
            m.put("enum_constants", c);
        }
        if (data != null && cls.endsWith("KryoSerializerSnapshot")) {
            List<Object> regs = new ArrayList<>();
            for (Object[] kv : entries(Refl.call(data, "getKryoRegistrations", null))) {
                Map<String, Object> r = new LinkedHashMap<>();
                Object reg = kv[2];
                if (reg == null) {
                    r.put("name", kv[0]);
                    r.put("type", null);
                } else {
                    Class<?> rc = (Class<?>) Refl.call(reg, "getRegisteredClass", null);
                    if (rc == null || !rc.getName().equals(kv[0])) {
                        r.put("name", kv[0]);
                    }
                    r.put("class", rc == null ? null : rc.getName());
                    Object type = Refl.call(reg, "getSerializerDefinitionType", null);
                    r.put("type", String.valueOf(type));
                    if ("CLASS".equals(String.valueOf(type))) {
                        Class<?> sc = (Class<?>) Refl.call(reg, "getSerializerClass", null);
                        r.put("serializer", sc == null ? null : sc.getName());
                    } else if ("INSTANCE".equals(String.valueOf(type))) {
                        // written Java-serialized: the object is Flink's SerializableSerializer wrapper
                        Object inst = Refl.call(reg, "getSerializableSerializerInstance", null);
                        Object ser = inst == null ? null : Refl.call(inst, "getSerializer", null);
                        r.put("serializer", inst == null ? null : inst.getClass().getName());
                        r.put("serializer_instance", ser == null ? null : ser.getClass().getName());
                    }
                }
                regs.add(r);
            }
            fact.put("kryo_registrations", regs);
            List<Object> defaults = new ArrayList<>();
            for (Object[] kv : entries(Refl.call(data, "getDefaultKryoSerializers", null))) {
                Object inst = kv[2]; // a SerializableSerializer wrapper, written Java-serialized
                defaults.add(java.util.Arrays.asList(kv[0], inst == null ? null : inst.getClass().getName()));
            }
            fact.put("kryo_default_serializers", defaults);
            List<Object> classes = new ArrayList<>();
            for (Object[] kv : entries(Refl.call(data, "getDefaultKryoSerializerClasses", null))) {
                classes.add(java.util.Arrays.asList(kv[0], kv[2] == null ? null : ((Class<?>) kv[2]).getName()));
            }
            fact.put("kryo_default_serializer_classes", classes);
        }
        Object schema = field(s, "schema");
        if (schema != null && cls.contains("Avro")) {
            fact.put("schema", schema.toString());
        }
        if (!fact.isEmpty()) {
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("root", root);
            f.put("index", index);
            f.put("class", cls);
            f.putAll(fact);
            facts.add(f);
        }
        return m;
    }

    /** (key name, key or null when absent, value or null when absent) of a LinkedOptionalMap. */
    @SuppressWarnings("unchecked")
    static List<Object[]> entries(Object optionalMap) {
        List<Object[]> out = new ArrayList<>();
        if (optionalMap == null) {
            return out;
        }
        Map<String, Object> m = (Map<String, Object>) field(optionalMap, "underlyingMap");
        for (Map.Entry<String, Object> e : m.entrySet()) {
            Object kv = e.getValue();
            out.add(new Object[] {e.getKey(), Refl.call(kv, "getKey", null), Refl.call(kv, "getValue", null)});
        }
        return out;
    }

    static Object field(Object o, String name) {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // up
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }
        return null;
    }

    /** The snapshot's own Class-typed field (tupleClass, enumClass, typeClass, componentClass...). */
    static Class<?> classField(TypeSerializerSnapshot<?> s) {
        for (Class<?> c = s.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            if (c == CompositeTypeSerializerSnapshot.class) {
                break;
            }
            for (Field f : c.getDeclaredFields()) {
                if (f.getType() == Class.class && !Modifier.isStatic(f.getModifiers())) {
                    try {
                        f.setAccessible(true);
                        Object v = f.get(s);
                        if (v instanceof Class) {
                            return (Class<?>) v;
                        }
                    } catch (ReflectiveOperationException | RuntimeException e) {
                        return null;
                    }
                }
            }
        }
        return null;
    }

    /** Nested snapshots of a non-composite snapshot (fields holding snapshots, e.g. a TTL wrapper). */
    static List<TypeSerializerSnapshot<?>> snapshotFields(TypeSerializerSnapshot<?> s) {
        List<TypeSerializerSnapshot<?>> out = null;
        for (Class<?> c = s.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers())) {
                    continue;
                }
                try {
                    if (TypeSerializerSnapshot.class.isAssignableFrom(f.getType())) {
                        f.setAccessible(true);
                        if (out == null) {
                            out = new ArrayList<>();
                        }
                        out.add((TypeSerializerSnapshot<?>) f.get(s));
                    } else if (f.getType().isArray() && TypeSerializerSnapshot.class.isAssignableFrom(f.getType().getComponentType())) {
                        f.setAccessible(true);
                        Object[] a = (Object[]) f.get(s);
                        if (out == null) {
                            out = new ArrayList<>();
                        }
                        if (a != null) {
                            for (Object x : a) {
                                out.add((TypeSerializerSnapshot<?>) x);
                            }
                        }
                    }
                } catch (ReflectiveOperationException | RuntimeException e) {
                    // not readable: left out
                }
            }
        }
        return out;
    }

    static Object[] enumConstants(TypeSerializerSnapshot<?> s) {
        if (!s.getClass().getName().contains("EnumSerializer")) {
            return null;
        }
        for (Class<?> c = s.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (f.getType().isArray() && Enum.class.isAssignableFrom(f.getType().getComponentType())
                        && !Modifier.isStatic(f.getModifiers())) {
                    try {
                        f.setAccessible(true);
                        return (Object[]) f.get(s);
                    } catch (ReflectiveOperationException | RuntimeException e) {
                        return null;
                    }
                }
            }
        }
        return null;
    }
}
