package org.flinkjobgraph.restore;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.flinkjobgraph.harness.Refl;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What Flink itself reads from a `_metadata` file (Checkpoints.loadCheckpointMetadata), per
 * operator state: the facts the restore decision uses, the handle types, and the registered
 * keyed/operator state names (read from the state streams themselves, where reachable).
 */
public final class MetadataInfo {
    private MetadataInfo() {}

    public static Map<String, Object> read(byte[] bytes, String pointer, Map<String, Object> out) throws Exception {
        ClassLoader cl = MetadataInfo.class.getClassLoader();
        header(bytes, out);
        CheckpointMetadata md =
                Checkpoints.loadCheckpointMetadata(new DataInputStream(new ByteArrayInputStream(bytes)), cl, pointer);
        out.put("checkpoint_id", md.getCheckpointId());
        out.put("master_states", md.getMasterStates().size());
        List<Object> ops = new ArrayList<>();
        Map<String, Integer> handleTypes = new TreeMap<>();
        for (OperatorState os : md.getOperatorStates()) {
            Map<String, Object> o = operatorHead(os);
            boolean subtaskState = false;
            for (OperatorSubtaskState s : os.getStates()) {
                subtaskState |= s.hasState();
            }
            boolean coord = os.getCoordinatorState() != null;
            o.put("has_state", subtaskState || coord);
            o.put("has_subtask_state", subtaskState);
            o.put("has_coordinator_state", coord);
            o.put("subtask_states", os.getSubtaskStates().size());
            o.put("fully_finished", os.isFullyFinished());
            Map<String, TreeSet<String>> handles = new LinkedHashMap<>();
            Map<String, Object> keyedInfo = null;
            Map<String, Object> opStates = new TreeMap<>();
            for (OperatorSubtaskState s : os.getStates()) {
                add(handles, "managed_keyed", s.getManagedKeyedState());
                add(handles, "raw_keyed", s.getRawKeyedState());
                add(handles, "managed_operator", s.getManagedOperatorState());
                add(handles, "raw_operator", s.getRawOperatorState());
                add(handles, "input_channel", s.getInputChannelState());
                add(handles, "result_subpartition", s.getResultSubpartitionState());
                for (KeyedStateHandle k : s.getManagedKeyedState()) {
                    if (keyedInfo == null) {
                        keyedInfo = keyedStates(k, cl);
                    }
                }
                for (OperatorStateHandle h : s.getManagedOperatorState()) {
                    for (Map.Entry<String, OperatorStateHandle.StateMetaInfo> e :
                            h.getStateNameToPartitionOffsets().entrySet()) {
                        opStates.put(e.getKey(), e.getValue().getDistributionMode().toString());
                    }
                }
            }
            if (coord) {
                handles.computeIfAbsent("coordinator", k -> new TreeSet<>()).add(describe(os.getCoordinatorState()));
            }
            Map<String, Object> h = new LinkedHashMap<>();
            for (Map.Entry<String, TreeSet<String>> e : handles.entrySet()) {
                if (!e.getValue().isEmpty()) {
                    h.put(e.getKey(), new ArrayList<>(e.getValue()));
                    for (String t : e.getValue()) {
                        handleTypes.merge(e.getKey() + ":" + t, 1, Integer::sum);
                    }
                }
            }
            o.put("handles", h);
            if (keyedInfo != null) {
                o.put("keyed_state", keyedInfo);
            }
            if (!opStates.isEmpty()) {
                o.put("operator_states", opStates);
            }
            ops.add(o);
        }
        out.put("operators", ops);
        out.put("handle_types", handleTypes);
        return out;
    }

    /** The first facts of a {@code _metadata} file: its magic number, format version and size. */
    static void header(byte[] bytes, Map<String, Object> out) {
        ByteBuffer bb = ByteBuffer.wrap(bytes);
        out.put("magic_number", String.format("0x%08x", bb.getInt(0)));
        out.put("metadata_version", bb.getInt(4));
        out.put("metadata_bytes", bytes.length);
    }

    /**
     * An operator state's identity and size, the first entries of both readings' operators: its
     * ID, the name and uid Flink 1.16+ keep in the metadata (when set), parallelism, max
     * parallelism, state size.
     */
    static Map<String, Object> operatorHead(OperatorState os) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("operator_id", os.getOperatorID().toHexString());
        Object name = Refl.call(os, "getOperatorName", null);
        if (name instanceof Optional && ((Optional<?>) name).isPresent()) {
            o.put("operator_name", ((Optional<?>) name).get());
        }
        Object uid = Refl.call(os, "getOperatorUid", null);
        if (uid instanceof Optional && ((Optional<?>) uid).isPresent() && !"".equals(((Optional<?>) uid).get())) {
            o.put("operator_uid", ((Optional<?>) uid).get());
        }
        o.put("parallelism", os.getParallelism());
        o.put("max_parallelism", os.getMaxParallelism());
        o.put("state_size", os.getStateSize());
        return o;
    }

    private static void add(Map<String, TreeSet<String>> handles, String kind, Collection<?> objs) {
        TreeSet<String> set = handles.computeIfAbsent(kind, k -> new TreeSet<>());
        for (Object x : objs) {
            if (x != null) {
                set.add(describe(x));
            }
        }
    }

    /** "Type(delegate)" recursively; incremental handles list meta, shared and private handles. */
    static String describe(Object h) {
        if (h == null) {
            return "null";
        }
        String n = h.getClass().getSimpleName();
        String metaGetter = metaGetter(h);
        if (metaGetter != null) {
            Object meta = Refl.call(h, metaGetter, null);
            return n + "(meta=" + describe(meta) + ", shared=" + handleList(Refl.call(h, "getSharedState", null))
                    + ", private=" + handleList(Refl.call(h, "getPrivateState", null)) + ")";
        }
        if (Refl.has(h, "getDelegateStateHandle", 0)) {
            return n + "(" + describe(Refl.call(h, "getDelegateStateHandle", null)) + ")";
        }
        return n;
    }

    /** Incremental handles: getMetaDataStateHandle() since 1.16, getMetaStateHandle() before. */
    static String metaGetter(Object h) {
        if (Refl.has(h, "getMetaDataStateHandle", 0)) {
            return "getMetaDataStateHandle";
        }
        if (Refl.has(h, "getMetaStateHandle", 0) && Refl.has(h, "getSharedState", 0)) {
            return "getMetaStateHandle";
        }
        return null;
    }

    private static String handleList(Object c) {
        TreeSet<String> set = new TreeSet<>();
        Collection<?> items = c instanceof Map ? ((Map<?, ?>) c).values() : c instanceof Collection ? (Collection<?>) c
                : java.util.Collections.emptyList();
        for (Object x : items) {
            Object handle = Refl.has(x, "getHandle", 0) ? Refl.call(x, "getHandle", null) : x;
            set.add(describe(handle));
        }
        return set.toString();
    }

    /**
     * The stream that starts with a state handle's serialization proxy: an incremental handle's
     * meta data handle, a stream handle itself, else its delegate (a key-groups or operator
     * handle's file).
     */
    static StreamStateHandle metaStream(Object k) {
        Object stream = null;
        String getter = metaGetter(k);
        if (getter != null) {
            stream = Refl.call(k, getter, null);
        } else if (k instanceof StreamStateHandle) {
            stream = k;
        } else if (Refl.has(k, "getDelegateStateHandle", 0)) {
            stream = Refl.call(k, "getDelegateStateHandle", null);
        }
        if (!(stream instanceof StreamStateHandle)) {
            throw new IllegalStateException("no meta stream in " + k.getClass().getName());
        }
        return (StreamStateHandle) stream;
    }

    /** Key serializer snapshot and registered state names, from the keyed state's meta stream (null: unreadable). */
    static Map<String, Object> keyedStates(KeyedStateHandle k, ClassLoader cl) {
        try (FSDataInputStream in = metaStream(k).openInputStream()) {
            KeyedBackendSerializationProxy<?> p = new KeyedBackendSerializationProxy<>(cl);
            p.read(new DataInputViewStreamWrapper(in));
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("key_serializer", p.getKeySerializerSnapshot().getClass().getName());
            Map<String, Object> states = new TreeMap<>();
            for (StateMetaInfoSnapshot s : p.getStateMetaInfoSnapshots()) {
                states.put(s.getName(), s.getBackendStateType().toString());
            }
            m.put("states", states);
            return m;
        } catch (Exception e) {
            return null;
        }
    }
}
