package org.flinkjobgraph.restore;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.OperatorBackendSerializationProxy;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.flinkjobgraph.harness.Json;

import java.io.BufferedReader;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code value-check}: a test tool, never in the product path. Reads saved state values with
 * Flink's own serializers, restored from the state's saved serializer snapshot with a job's
 * classes, exactly as a restoring task does; udfs/savepoint's value reader (its emulation of
 * Flink's and Kryo's serializers) is checked against what this prints (scripts/value_reader_check.py).
 *
 * <pre>
 *   value-check --jars A.jar:B.jar --stream F --kind managed_keyed|managed_operator
 *       then one request per stdin line: {"state": NAME, "role": "VALUE_SERIALIZER", "at": OFFSET, "count": N}
 *       or {"state": NAME, "role": ..., "registrations": true}
 * </pre>
 *
 * {@code F} holds one state stream (its serialization proxy at byte 0). Per request one JSON line:
 * for each value read from {@code at} one after the other, {@code {"end": offset after it,
 * "value": toString}} or {@code {"error": [the exception chain, outermost first]}} (and it stops);
 * with {@code registrations}, the Kryo registrations (id -> class) of the restored KryoSerializer.
 */
final class ValueCheck {
    private ValueCheck() {}

    static void run(String[] args) throws Exception {
        String jars = "";
        Path stream = null;
        String kind = "managed_keyed";
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--jars": jars = args[++i]; break;
                case "--stream": stream = Path.of(args[++i]); break;
                case "--kind": kind = args[++i]; break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        List<URL> urls = new ArrayList<>();
        for (String j : jars.split(java.io.File.pathSeparator)) {
            if (!j.isEmpty()) {
                urls.add(Path.of(j).toUri().toURL());
            }
        }
        URLClassLoader cl = new URLClassLoader(urls.toArray(new URL[0]), ValueCheck.class.getClassLoader());
        Thread.currentThread().setContextClassLoader(cl);
        Map<String, StateMetaInfoSnapshot> states = proxyStates(stream, kind, cl);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> req = Json.readObject(line);
            Map<String, Object> out = new LinkedHashMap<>();
            try {
                StateMetaInfoSnapshot meta = states.get((String) req.get("state"));
                TypeSerializerSnapshot<?> snap = meta.getTypeSerializerSnapshot((String) req.get("role"));
                TypeSerializer<?> ser = snap.restoreSerializer();
                out.put("serializer", ser.getClass().getName());
                if (Boolean.TRUE.equals(req.get("registrations"))) {
                    out.put("registrations", registrations(ser));
                } else if (req.containsKey("list_values")) {
                    out.put("values", readLists(ser, stream, (List<Object>) req.get("list_values")));
                } else {
                    out.put("values", read(ser, stream, ((Number) req.get("at")).longValue(),
                            ((Number) req.getOrDefault("count", 1)).intValue()));
                }
            } catch (Throwable t) {
                out.put("error", chain(t));
            }
            System.out.println(Json.write(out));
            System.out.flush();
        }
    }

    static Map<String, StateMetaInfoSnapshot> proxyStates(Path stream, String kind, ClassLoader cl) throws IOException {
        Map<String, StateMetaInfoSnapshot> out = new LinkedHashMap<>();
        try (InputStream in = Files.newInputStream(stream)) {
            DataInputViewStreamWrapper view = new DataInputViewStreamWrapper(in);
            List<StateMetaInfoSnapshot> all = new ArrayList<>();
            if (kind.equals("managed_keyed")) {
                KeyedBackendSerializationProxy<?> p = new KeyedBackendSerializationProxy<>(cl);
                p.read(view);
                all.addAll(p.getStateMetaInfoSnapshots());
            } else {
                OperatorBackendSerializationProxy p = new OperatorBackendSerializationProxy(cl);
                p.read(view);
                all.addAll(p.getOperatorStateMetaInfoSnapshots());
                all.addAll(p.getBroadcastStateMetaInfoSnapshots());
            }
            for (StateMetaInfoSnapshot s : all) {
                out.put(s.getName(), s);
            }
        }
        return out;
    }

    static List<Object> read(TypeSerializer<?> ser, Path stream, long at, int count) throws IOException {
        List<Object> out = new ArrayList<>();
        try (Counting in = new Counting(Files.newInputStream(stream))) {
            in.skipNBytes(at);
            in.count = at;
            DataInputViewStreamWrapper view = new DataInputViewStreamWrapper(in);
            for (int i = 0; i < count; i++) {
                Map<String, Object> v = new LinkedHashMap<>();
                try {
                    Object value = ser.deserialize(view);
                    v.put("end", in.count);
                    v.put("value", String.valueOf(value));
                } catch (Throwable t) {
                    v.put("error", chain(t));
                    v.put("end", in.count);
                    out.add(v);
                    break;
                }
                out.add(v);
            }
        }
        return out;
    }

    /**
     * Full-snapshot LIST values (each [offset, length] of its bytes in the stream), read one after
     * the other as a restore reads them: one ListDelimitedSerializer (one input view) and the
     * state's element serializer, so Kryo's input and its buffers carry from value to value.
     */
    @SuppressWarnings("unchecked")
    static List<Object> readLists(TypeSerializer<?> ser, Path stream, List<Object> values) throws Exception {
        byte[] all = Files.readAllBytes(stream);
        TypeSerializer<Object> element = (TypeSerializer<Object>)
                ((org.apache.flink.api.common.typeutils.base.ListSerializer<?>) ser).getElementSerializer();
        org.apache.flink.runtime.state.ListDelimitedSerializer lists = new org.apache.flink.runtime.state.ListDelimitedSerializer();
        List<Object> out = new ArrayList<>();
        for (Object o : values) {
            List<Object> at = (List<Object>) o;
            int from = ((Number) at.get(0)).intValue();
            byte[] bytes = java.util.Arrays.copyOfRange(all, from, from + ((Number) at.get(1)).intValue());
            Map<String, Object> v = new LinkedHashMap<>();
            try {
                v.put("value", String.valueOf(lists.deserializeList(bytes, element)));
            } catch (Throwable t) {
                v.put("error", chain(t));
                out.add(v);
                break;
            }
            out.add(v);
        }
        return out;
    }

    /** The Kryo registrations (id -> class name) of a KryoSerializer, through its getKryo(). */
    static Map<String, Object> registrations(TypeSerializer<?> ser) throws Exception {
        Method m = ser.getClass().getMethod("getKryo");
        com.esotericsoftware.kryo.Kryo kryo = (com.esotericsoftware.kryo.Kryo) m.invoke(ser);
        Map<String, Object> out = new LinkedHashMap<>();
        for (int id = 0; id < 400; id++) {
            com.esotericsoftware.kryo.Registration r = kryo.getRegistration(id);
            if (r != null) {
                out.put(String.valueOf(id), r.getType().getName() + " " + r.getSerializer().getClass().getName());
            }
        }
        return out;
    }

    static List<Object> chain(Throwable t) {
        List<Object> out = new ArrayList<>();
        for (Throwable x = t; x != null; x = x.getCause() == x ? null : x.getCause()) {
            out.add(x.getClass().getName() + ": " + x.getMessage());
        }
        return out;
    }

    /** Counts the bytes read: where a value ended. */
    static final class Counting extends FilterInputStream {
        long count;

        Counting(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                count++;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            if (n > 0) {
                count += n;
            }
            return n;
        }

        @Override
        public long skip(long n) throws IOException {
            long k = super.skip(n);
            count += k;
            return k;
        }
    }
}
