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
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

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
 * <p>Which classes: every {@code .class} entry of the given jars except Flink's own packages
 * ({@code org.apache.flink.}), {@code module-info} / {@code package-info}, multi-release copies
 * under {@code META-INF/versions}, interfaces, annotations, anonymous, local, synthetic and
 * non-static inner classes (none of which a savepoint can name as a state type). Classes are
 * loaded with {@code initialize=false}. A class that fails to load or to extract is counted in
 * {@link Result#skipped} and left out. The scan stops after {@link #DEFAULT_LIMIT} candidate classes
 * (a fat jar's dependencies); the ones not examined count as skipped too.
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

    /** Scans the jars (files; folders are skipped) with {@code loader}, at most {@code limit} classes. */
    public static Result scan(List<File> jars, ClassLoader loader, int limit) {
        Result r = new Result();
        TreeSet<String> names = new TreeSet<>();
        List<String> ordered = new ArrayList<>();
        for (File jar : jars) {
            if (!jar.isFile()) {
                continue;
            }
            try (JarFile jf = new JarFile(jar)) {
                Enumeration<JarEntry> en = jf.entries();
                while (en.hasMoreElements()) {
                    String n = candidate(en.nextElement());
                    if (n != null && names.add(n)) {
                        ordered.add(n);
                    }
                }
            } catch (IOException e) {
                // not a jar: nothing to scan
            }
        }
        for (String name : ordered) {
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
                if (f != null) {
                    r.classes.put(c.getName(), f);
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

    /** The class name of a jar entry that may be a user class, or null. */
    static String candidate(JarEntry e) {
        String p = e.getName();
        if (e.isDirectory() || !p.endsWith(".class") || p.startsWith("META-INF/")) {
            return null;
        }
        if (p.startsWith("org/apache/flink/") || p.endsWith("module-info.class") || p.endsWith("package-info.class")) {
            return null;
        }
        String n = p.substring(0, p.length() - ".class".length()).replace('/', '.');
        int dollar = n.lastIndexOf('$');
        if (dollar >= 0 && dollar + 1 < n.length() && Character.isDigit(n.charAt(dollar + 1))) {
            return null; // anonymous (Outer$1) or local (Outer$1Local) class: known from the name alone
        }
        return n;
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
        } else {
            return null;
        }
        return m;
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
