package statetypes.user;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.types.Row;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The key types of the jobs (the states' types are declared in each job's own code), the values
 * the states hold (each made from the record's number v) and how a restored value is checked: a
 * value made from v carries v, so a restored value must be internally consistent, belong to the
 * key it is stored under (v % keys) and, in a map, to its user key.
 */
public final class Vals {
    private Vals() {}

    public static final String PRESENT = "present";
    public static final String ABSENT = "absent";
    public static final String INCONSISTENT = "inconsistent";

    public static Object make(String type, long v) {
        switch (type) {
            case "LONG": return v;
            case "STRING": return "s" + v;
            case "POJO": return PojoV.of(v);
            case "POJO_COLL": return PojoColl.of(v);
            case "GENERIC": return Gen.of(v);
            case "ENUM": return Color.of(v);
            case "TUPLE2": return Tuple2.of(v, "t" + v);
            case "ROW": return Row.of(v, "r" + v, v * 0.5);
            case "LIST_HINT": return new ArrayList<>(Arrays.asList("l" + v, "m" + (v % 3)));
            case "MAP_HINT": return new HashMap<>(Collections.singletonMap("m" + (v % 3), v));
            case "AVRO": return AvroRec.of(v);
            default: throw new IllegalArgumentException("unknown value type " + type);
        }
    }

    /**
     * The number a value was made from; -1 when the type does not carry it (an enum constant);
     * null when the value is not one this job writes (a field lost or changed on restore).
     */
    @SuppressWarnings("unchecked")
    public static Long origin(String type, Object o) {
        try {
            switch (type) {
                case "LONG": return (Long) o;
                case "STRING": {
                    String s = (String) o;
                    return s.startsWith("s") ? Long.parseLong(s.substring(1)) : null;
                }
                case "POJO": return PojoV.origin(o);
                case "POJO_COLL": return PojoColl.origin(o);
                case "GENERIC": return Gen.origin(o);
                case "AVRO": return AvroRec.origin(o);
                case "ENUM": return o instanceof Color ? -1L : null;
                case "TUPLE2": {
                    Tuple2<Long, String> t = (Tuple2<Long, String>) o;
                    return ("t" + t.f0).equals(t.f1) ? t.f0 : null;
                }
                case "ROW": {
                    Row r = (Row) o;
                    if (r.getArity() != 3) {
                        return null;
                    }
                    long v = (Long) r.getField(0);
                    return ("r" + v).equals(r.getField(1)) && Double.valueOf(v * 0.5).equals(r.getField(2)) ? v : null;
                }
                case "LIST_HINT": {
                    List<String> l = (List<String>) o;
                    if (l.size() != 2 || !l.get(0).startsWith("l")) {
                        return null;
                    }
                    long v = Long.parseLong(l.get(0).substring(1));
                    return ("m" + (v % 3)).equals(l.get(1)) ? v : null;
                }
                case "MAP_HINT": {
                    Map<String, Long> m = (Map<String, Long>) o;
                    if (m.size() != 1) {
                        return null;
                    }
                    Map.Entry<String, Long> e = m.entrySet().iterator().next();
                    long v = e.getValue();
                    return ("m" + (v % 3)).equals(e.getKey()) ? v : null;
                }
                default: return null;
            }
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** What a restored value says: absent (null), present, or inconsistent (with why). */
    public static String check(String type, Object o, long key, int keys, String userKey) {
        if (o == null) {
            return ABSENT;
        }
        Long v = origin(type, o);
        if (v == null) {
            return INCONSISTENT + ": not a " + type + " value this job writes: " + o;
        }
        if (v >= 0 && key >= 0 && keys > 0 && v % keys != key) {
            return INCONSISTENT + ": the value of key " + (v % keys) + " is stored under key " + key;
        }
        if (userKey != null && v >= 0 && !userKey.equals(userKey(v, keys))) {
            return INCONSISTENT + ": the value of user key " + userKey(v, keys) + " is stored under " + userKey;
        }
        List<String> d = defaulted(type, o);
        return d.isEmpty() ? PRESENT : PRESENT + ": fields at their default " + d + " in " + o;
    }

    /** Fields of a user-class value at their Java default (new in this version, or their data dropped). */
    static List<String> defaulted(String type, Object o) {
        switch (type) {
            case "POJO": return PojoV.defaulted(o);
            case "POJO_COLL": return PojoColl.defaulted(o);
            case "GENERIC": return Gen.defaulted(o);
            case "AVRO": return AvroRec.defaulted(o);
            default: return Collections.emptyList();
        }
    }

    /** The worse of two outcomes: inconsistent, present with defaulted fields, present, absent. */
    public static String worst(String a, String b) {
        return rank(b) > rank(a) ? b : a;
    }

    private static int rank(String s) {
        return s.startsWith(INCONSISTENT) ? 3 : s.startsWith(PRESENT + ":") ? 2 : s.equals(PRESENT) ? 1 : 0;
    }

    /** The map states' user key for a record number. */
    public static String userKey(long v, int keys) {
        return "u" + ((v / Math.max(1, keys)) % 3);
    }

    // ------------------------------------------------------------------ keys

    @SuppressWarnings("unchecked")
    public static TypeInformation<Object> keyInfo(String type) {
        switch (type) {
            case "LONG": return (TypeInformation<Object>) (TypeInformation<?>) Types.LONG;
            case "STRING": return (TypeInformation<Object>) (TypeInformation<?>) Types.STRING;
            case "TUPLE2": return (TypeInformation<Object>) (TypeInformation<?>) Types.TUPLE(Types.LONG, Types.STRING);
            case "POJO": return (TypeInformation<Object>) (TypeInformation<?>) TypeInformation.of(PojoK.class);
            default: throw new IllegalArgumentException("unknown key type " + type);
        }
    }

    public static Object key(String type, long k) {
        switch (type) {
            case "LONG": return k;
            case "STRING": return "k" + k;
            case "TUPLE2": return Tuple2.of(k, "k" + k);
            case "POJO": return PojoK.of(k);
            default: throw new IllegalArgumentException("unknown key type " + type);
        }
    }

    /** The key number k of a key made by {@link #key}. */
    @SuppressWarnings("unchecked")
    public static long keyNumber(Object key) {
        if (key instanceof Long) {
            return (Long) key;
        }
        if (key instanceof String) {
            return Long.parseLong(((String) key).substring(1));
        }
        if (key instanceof Tuple2) {
            return ((Tuple2<Long, String>) key).f0;
        }
        return PojoK.number(key);
    }
}
