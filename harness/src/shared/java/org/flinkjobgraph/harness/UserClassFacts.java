package org.flinkjobgraph.harness;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.EnumTypeInfo;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.flink.api.java.typeutils.TypeExtractor;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Deque;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The graph field {@code user_classes}: what Flink's type extraction makes of every class of the
 * job's own jar, so that the restore check can compare a savepoint's POJO / enum / Kryo / Avro
 * types with the new job's classes without loading them (docs/spec-extensions.md).
 *
 * <p>Per class: {@code kind} from {@code TypeExtractor.createTypeInfo(cls)} - {@code PojoTypeInfo}
 * "pojo", {@code EnumTypeInfo} "enum", {@code GenericTypeInfo} "generic" (Kryo), flink-avro's
 * {@code AvroTypeInfo} (or, without flink-avro on the class path, a subclass of Avro's
 * {@code SpecificRecordBase}) "avro"; other type infos (a Tuple subclass, a {@code Value}, a
 * {@code @TypeInfo} factory's own type) are not one of these kinds and are left out. {@code
 * fields}: the serialized fields as {@code {"name", "type"}}, the type being {@code
 * Field.getGenericType().getTypeName()} (fully qualified: {@code long}, {@code java.lang.String},
 * {@code java.util.List<java.lang.String>}, {@code a.B$C}), sorted by name, the order in which
 * Flink's PojoSerializer (and Kryo's FieldSerializer) write them: for a POJO the PojoTypeInfo's
 * fields, else {@code TypeExtractor.getAllDeclaredFields} (non-static, non-transient, superclasses
 * included). {@code enum_constants}: the enum's constants in declaration order (read from the
 * fields, so the class is never initialised).
 *
 * <p>Which classes ({@link Scope}): the {@code .class} entries of the given jars that belong to the
 * job's own packages (by default the first two package names of its main class, e.g. {@code
 * com.acme.} for {@code com.acme.orders.OrdersJob}; more with {@code --user-classes-package}), or
 * that the StreamGraph's operators name in their types (input, output and key serializers, state
 * descriptors they hold), then the classes the described ones name in their fields' types
 * (closure), never a class Flink's distribution ships ({@link #flinkShips}: decided by where the
 * class is found, not by its package: a job's {@code org.apache.flink.training} classes are the
 * job's own), {@code module-info} /
 * {@code package-info}, multi-release copies under {@code META-INF/versions}, interfaces,
 * annotations, anonymous, local, synthetic and non-static inner classes (none of which a
 * savepoint can name as a state type). A savepoint names classes of other packages only when the
 * job keeps them in state; their facts are then missing and the restore check says it took them
 * as unchanged. Classes are loaded with {@code initialize=false}. A class that fails to load or
 * to extract is counted in {@link Result#skipped} and left out. The scan stops after {@code
 * limit} classes examined; the ones not examined count as skipped too.
 */
public final class UserClassFacts {
    private UserClassFacts() {}

    /** Candidate classes examined at most per export (in jar entry order); the rest are skipped. */
    public static final int DEFAULT_LIMIT = 20000;

    /** The facts by class name (sorted) and how many candidate classes were left out. */
    public static final class Result {
        public final Map<String, Object> classes = new TreeMap<>();
        public int skipped;
        public int examined;
    }

    /** Every class of the jars (the scope before it was bounded; {@code --user-classes-package ''}). */
    public static Result scan(List<File> jars, ClassLoader loader, int limit) {
        return scan(jars, loader, limit, Scope.everything());
    }

    /**
     * Scans the jars (files; folders are skipped) with {@code loader}: the classes {@code scope}
     * selects, then the ones their fields name, at most {@code limit} classes examined.
     */
    public static Result scan(List<File> jars, ClassLoader loader, int limit, Scope scope) {
        Result r = new Result();
        Set<String> inJars = new HashSet<>();
        Deque<String> todo = new ArrayDeque<>();
        for (File jar : jars) {
            if (!jar.isFile()) {
                continue;
            }
            try (JarFile jf = new JarFile(jar)) {
                Enumeration<JarEntry> en = jf.entries();
                while (en.hasMoreElements()) {
                    String n = candidate(en.nextElement());
                    if (n != null && inJars.add(n) && scope.selects(n) && !flinkShips(n)) {
                        todo.add(n);
                    }
                }
            } catch (IOException e) {
                // not a jar: nothing to scan
            }
        }
        Set<String> queued = new HashSet<>(todo);
        while (!todo.isEmpty()) {
            String name = todo.poll();
            if (r.examined >= limit) {
                r.skipped++;
                continue;
            }
            r.examined++;
            try {
                Class<?> c = Class.forName(name, false, loader);
                if (!eligible(c)) {
                    continue;
                }
                Map<String, Object> f = facts(c);
                if (f == null) {
                    continue;
                }
                r.classes.put(c.getName(), f);
                for (String used : fieldClasses(f)) {
                    if (inJars.contains(used) && !flinkShips(used) && queued.add(used)) {
                        todo.add(used);
                    }
                }
            } catch (Throwable e) {
                r.skipped++;
                if (System.getenv("HARNESS_DEBUG") != null) {
                    System.err.println("user class skipped: " + name + ": " + e);
                }
            }
        }
        return r;
    }

    private static final Pattern TYPE_NAME = Pattern.compile("[A-Za-z_$][A-Za-z0-9_$]*(?:\\.[A-Za-z_$][A-Za-z0-9_$]*)*");

    /** The class names the described fields' types mention ({@code a.B}, {@code java.util.List<a.C>}). */
    static Set<String> fieldClasses(Map<String, Object> facts) {
        Set<String> out = new TreeSet<>();
        Object fields = facts.get("fields");
        if (fields instanceof List) {
            for (Object f : (List<?>) fields) {
                Matcher m = TYPE_NAME.matcher(String.valueOf(((Map<?, ?>) f).get("type")));
                while (m.find()) {
                    out.add(m.group());
                }
            }
        }
        return out;
    }

    /**
     * Which classes of the job's jars {@code user_classes} describes: those under one of the
     * package prefixes ({@code ""}: every class) or named by the StreamGraph ({@link #namedBy}).
     */
    public static final class Scope {
        /** The job's own packages: this many leading package names of the main class. */
        public static final int PACKAGE_DEPTH = 2;

        final List<String> prefixes = new ArrayList<>();
        final Set<String> named = new HashSet<>();
        boolean defaultPackage;

        public static Scope everything() {
            Scope s = new Scope();
            s.prefixes.add("");
            return s;
        }

        /**
         * The main class's first {@link #PACKAGE_DEPTH} package names (Java's package naming puts the
         * owner's reversed domain first: {@code com.acme.orders.OrdersJob} -> {@code com.acme.}, its
         * sibling packages' model and generated classes included, third-party libraries a fat jar
         * bundles left out), plus {@code extra} prefixes, plus the classes {@code graphs} name.
         */
        public static Scope of(String mainClass, List<String> extra, Collection<?> graphs) {
            Scope s = new Scope();
            if (mainClass != null) {
                String[] parts = mainClass.split("\\.");
                if (parts.length == 1) {
                    s.defaultPackage = true;
                } else {
                    int depth = Math.min(PACKAGE_DEPTH, parts.length - 1);
                    s.prefixes.add(String.join(".", java.util.Arrays.asList(parts).subList(0, depth)) + ".");
                }
            }
            for (String p : extra) {
                String t = p.trim();
                if (t.isEmpty() || t.equals("*")) {
                    s.prefixes.add(""); // every class of the jars
                } else {
                    s.prefixes.add(t.endsWith(".") ? t : t + ".");
                }
            }
            for (Object g : graphs) {
                s.named.addAll(namedBy(g));
            }
            return s;
        }

        boolean selects(String className) {
            if (named.contains(className) || (defaultPackage && className.indexOf('.') < 0)) {
                return true;
            }
            for (String p : prefixes) {
                if (className.startsWith(p)) {
                    return true;
                }
            }
            return false;
        }

        /** The prefixes, for the export's report ({@code "<default package>"} for a main class without one). */
        public List<String> describe() {
            List<String> out = new ArrayList<>(prefixes);
            if (defaultPackage) {
                out.add("<default package>");
            }
            return out;
        }

        public int namedCount() {
            return named.size();
        }

        /**
         * Adds the classes Flink's type objects name (serializers, type informations: the ones of
         * the states a job declares in its functions, {@link DeclaredStates#typeObjects}).
         */
        public void name(Collection<?> typeObjects) {
            named.addAll(walkTypes(new ArrayList<Object>(typeObjects)));
        }
    }

    /**
     * The classes a StreamGraph's operators name in their types: every class reachable from each
     * node's input, output and state key serializers and from the state descriptors its operator
     * holds (a window's contents, a broadcast state), through Flink's type machinery (serializers,
     * type information, their fields, arrays and collections). Array classes count as their
     * component class. At most {@link #WALK_LIMIT} objects are visited per graph.
     */
    static Set<String> namedBy(Object streamGraph) {
        List<Object> todo = new ArrayList<>(); // a stack; nulls are skipped when taken
        Object nodes = Refl.call(streamGraph, "getStreamNodes", null);
        if (nodes instanceof Collection) {
            for (Object n : (Collection<?>) nodes) {
                if (Refl.has(n, "getTypeSerializersIn", 0)) {
                    todo.add(Refl.call(n, "getTypeSerializersIn", null));
                } else { // Flink 1.9 - 1.10
                    todo.add(Refl.call(n, "getTypeSerializerIn1", null));
                    todo.add(Refl.call(n, "getTypeSerializerIn2", null));
                }
                todo.add(Refl.call(n, "getTypeSerializerOut", null));
                todo.add(Refl.call(n, "getStateKeySerializer", null));
                Object factory = Refl.call(n, "getOperatorFactory", null);
                if (factory != null && Refl.isA(factory, "SimpleOperatorFactory")) {
                    for (Object v : fieldValues(Refl.call(factory, "getOperator", null))) {
                        if (Refl.isA(v, "StateDescriptor") || v instanceof Collection) {
                            todo.add(v);
                        }
                    }
                }
            }
        }
        return walkTypes(todo);
    }

    /** The classes reachable from Flink's type objects (serializers, type information, descriptors). */
    static Set<String> walkTypes(List<Object> todo) {
        Set<String> out = new TreeSet<>();
        Map<Object, Boolean> seen = new IdentityHashMap<>();
        for (int budget = WALK_LIMIT; !todo.isEmpty() && budget > 0; ) {
            Object o = todo.remove(todo.size() - 1);
            if (o == null || seen.put(o, Boolean.TRUE) != null) {
                continue;
            }
            budget--;
            if (o instanceof Class) {
                Class<?> c = (Class<?>) o;
                while (c.isArray()) {
                    c = c.getComponentType();
                }
                if (!c.isPrimitive()) {
                    out.add(c.getName());
                }
            } else if (o instanceof Object[]) {
                todo.addAll(java.util.Arrays.asList((Object[]) o));
            } else if (o instanceof Collection) {
                todo.addAll((Collection<?>) o);
            } else if (o instanceof Map) {
                todo.addAll(((Map<?, ?>) o).keySet());
                todo.addAll(((Map<?, ?>) o).values());
            } else if (o instanceof java.util.concurrent.atomic.AtomicReference) {
                todo.add(((java.util.concurrent.atomic.AtomicReference<?>) o).get()); // a StateDescriptor's serializer
            } else if (typeMachinery(o)) {
                todo.add(o.getClass());
                for (Object v : fieldValues(o)) {
                    if (v instanceof Class || v instanceof Object[] || v instanceof Collection || v instanceof Map
                            || v instanceof java.util.concurrent.atomic.AtomicReference || typeMachinery(v)) {
                        todo.add(v);
                    }
                }
            }
        }
        return out;
    }

    /** Objects visited at most per StreamGraph when collecting the classes its types name. */
    static final int WALK_LIMIT = 50000;

    /** Serializers, type information, state descriptors and Flink's other type objects. */
    static boolean typeMachinery(Object o) {
        return o != null
                && (Refl.isA(o, "TypeSerializer") || Refl.isA(o, "TypeInformation") || Refl.isA(o, "StateDescriptor")
                        || o.getClass().getName().startsWith("org.apache.flink.api."));
    }

    /** The values of an object's instance fields (its class and superclasses); unreadable ones left out. */
    static List<Object> fieldValues(Object o) {
        List<Object> out = new ArrayList<>();
        if (o == null) {
            return out;
        }
        for (Class<?> k = o.getClass(); k != null && k != Object.class; k = k.getSuperclass()) {
            for (Field f : k.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) || f.getType().isPrimitive()) {
                    continue;
                }
                try {
                    f.setAccessible(true);
                    out.add(f.get(o));
                } catch (RuntimeException | IllegalAccessException e) {
                    // a field of a module that does not open it: not a type Flink's machinery holds
                }
            }
        }
        return out;
    }

    /** The class name of a jar entry that may be a user class, or null. */
    static String candidate(JarEntry e) {
        String p = e.getName();
        if (e.isDirectory() || !p.endsWith(".class") || p.startsWith("META-INF/")) {
            return null;
        }
        if (p.endsWith("module-info.class") || p.endsWith("package-info.class")) {
            return null;
        }
        String n = p.substring(0, p.length() - ".class".length()).replace('/', '.');
        int dollar = n.lastIndexOf('$');
        if (dollar >= 0 && dollar + 1 < n.length() && Character.isDigit(n.charAt(dollar + 1))) {
            return null; // anonymous (Outer$1) or local (Outer$1Local) class: known from the name alone
        }
        return n;
    }

    /**
     * Whether Flink's distribution (the class path the harness runs Flink from) has the class: a
     * copy of Flink's own classes bundled in a fat jar is Flink's, whatever the jar; a job's class
     * is the job's, whatever its package (Flink's training jobs live in {@code
     * org.apache.flink.training}). Decided by where the class is found, not by its name.
     */
    static boolean flinkShips(String className) {
        ClassLoader flink = org.apache.flink.api.common.typeinfo.TypeInformation.class.getClassLoader();
        return flink != null && flink.getResource(className.replace('.', '/') + ".class") != null;
    }

    static boolean eligible(Class<?> c) {
        if (c.isInterface() || c.isAnnotation() || c.isAnonymousClass() || c.isLocalClass() || c.isSynthetic()) {
            return false;
        }
        return !(c.isMemberClass() && !Modifier.isStatic(c.getModifiers()));
    }

    /** The facts of one class, or null when Flink's type extraction gives it none of the four kinds. */
    static Map<String, Object> facts(Class<?> c) {
        TypeInformation<?> ti;
        try {
            ti = TypeExtractor.createTypeInfo(c);
        } catch (RuntimeException e) {
            if (isAvroSpecific(c)) {
                return avro(c); // flink-avro not on the class path: Flink would need it for this type
            }
            throw e;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        if (isAvroTypeInfo(ti)) {
            return avro(c); // AvroTypeInfo extends PojoTypeInfo: tested first
        } else if (ti instanceof PojoTypeInfo) {
            PojoTypeInfo<?> pojo = (PojoTypeInfo<?>) ti;
            List<Field> fs = new ArrayList<>();
            for (int i = 0; i < pojo.getArity(); i++) {
                fs.add(pojo.getPojoFieldAt(i).getField());
            }
            m.put("kind", "pojo");
            m.put("fields", fields(fs));
        } else if (ti instanceof EnumTypeInfo) {
            m.put("kind", "enum");
            List<Object> consts = new ArrayList<>();
            for (Field f : c.getDeclaredFields()) {
                if (f.isEnumConstant()) {
                    consts.add(f.getName());
                }
            }
            m.put("enum_constants", consts);
        } else if (ti instanceof GenericTypeInfo) {
            m.put("kind", "generic");
            m.put("fields", fields(TypeExtractor.getAllDeclaredFields(c, true)));
            m.put("no_arg_constructor", noArgConstructor(c));
        } else {
            return null;
        }
        return m;
    }

    /**
     * Whether Flink's PojoSerializer could create an instance ({@code Class.newInstance()}, from
     * another package): {@code public} (a public class with a public no-argument constructor),
     * {@code other} (a no-argument constructor it may not call), {@code none}. A class that was a
     * POJO when a savepoint was written and is no longer one is rebuilt with it when the values are
     * read back.
     */
    static String noArgConstructor(Class<?> c) {
        for (java.lang.reflect.Constructor<?> k : c.getDeclaredConstructors()) {
            if (k.getParameterCount() == 0) {
                return Modifier.isPublic(k.getModifiers()) && Modifier.isPublic(c.getModifiers()) ? "public" : "other";
            }
        }
        return "none";
    }

    private static Map<String, Object> avro(Class<?> c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "avro");
        m.put("fields", fields(TypeExtractor.getAllDeclaredFields(c, true)));
        return m;
    }

    static List<Object> fields(List<Field> fs) {
        List<Field> sorted = new ArrayList<>(fs);
        sorted.sort(Comparator.comparing(Field::getName));
        List<Object> out = new ArrayList<>();
        for (Field f : sorted) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", f.getName());
            m.put("type", f.getGenericType().getTypeName());
            out.add(m);
        }
        return out;
    }

    static boolean isAvroTypeInfo(TypeInformation<?> ti) {
        for (Class<?> k = ti.getClass(); k != null; k = k.getSuperclass()) {
            if (k.getName().equals("org.apache.flink.formats.avro.typeutils.AvroTypeInfo")) {
                return true;
            }
        }
        return false;
    }

    static boolean isAvroSpecific(Class<?> c) {
        for (Class<?> k = c.getSuperclass(); k != null; k = k.getSuperclass()) {
            if (k.getName().equals("org.apache.avro.specific.SpecificRecordBase")) {
                return true;
            }
        }
        return false;
    }
}
