package org.flinkjobgraph.restore;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The user classes of the statetypes jobs and the variants users make of them between v1 and v2
 * (a field added, removed, renamed or retyped; a POJO that becomes a Kryo type or the reverse; a
 * {@code @TypeInfo} factory; enum constants added, reordered or removed). Each variant is
 * generated as Java source from its definition, so the jar's classes and the catalogue that
 * describes them cannot disagree. A jar variant ("base", "PojoV-add", ...) is the base set of
 * classes with one class replaced.
 */
final class StClasses {
    private StClasses() {}

    static final String PACKAGE = "statetypes.user";

    /** One field: Java type, name, how it is made from the record number v, lenient = may be default. */
    static final class Field {
        final String type;
        final String name;
        final String prefix;
        final boolean origin;
        final boolean lenient;

        Field(String type, String name, String prefix, boolean origin, boolean lenient) {
            this.type = type;
            this.name = name;
            this.prefix = prefix;
            this.origin = origin;
            this.lenient = lenient;
        }
    }

    /** One class variant. kind: pojo | generic (Kryo) | typeinfo (@TypeInfo POJO) | enum. */
    static final class Def {
        final String simple;
        final String variant;
        final String kind;
        final String doc;
        final List<Field> fields;
        final List<String> constants;

        Def(String simple, String variant, String kind, String doc, List<Field> fields, List<String> constants) {
            this.simple = simple;
            this.variant = variant;
            this.kind = kind;
            this.doc = doc;
            this.fields = fields;
            this.constants = constants;
        }

        String name() {
            return PACKAGE + "." + simple;
        }
    }

    static Field origin(String name) {
        return new Field("long", name, null, true, false);
    }

    static Field f(String type, String name, String prefix) {
        return new Field(type, name, prefix, false, false);
    }

    static Field added(String type, String name, String prefix) {
        return new Field(type, name, prefix, false, true);
    }

    /** class simple name -> variant -> definition; "base" first. */
    static final Map<String, Map<String, Def>> CLASSES = new LinkedHashMap<>();

    private static void add(Def d) {
        CLASSES.computeIfAbsent(d.simple, k -> new LinkedHashMap<>()).put(d.variant, d);
    }

    static {
        Field a = origin("a");
        Field b = f("String", "b", "b");
        Field c = f("double", "c", null);
        add(new Def("PojoV", "base", "pojo", "Value POJO", List.of(a, b, c), null));
        add(new Def("PojoV", "add", "pojo", "Value POJO, a field added", List.of(a, b, c, added("int", "d", null)), null));
        add(new Def("PojoV", "remove", "pojo", "Value POJO, field c removed", List.of(a, b), null));
        add(new Def("PojoV", "rename", "pojo", "Value POJO, field c renamed to c2", List.of(a, b, f("double", "c2", null)), null));
        add(new Def("PojoV", "retype", "pojo", "Value POJO, field c now a String", List.of(a, b, f("String", "c", "c")), null));
        add(new Def("PojoV", "kryo", "generic",
                "Not a POJO any more (no default constructor, private final fields): a Kryo GenericType", List.of(a, b, c), null));

        Field id = origin("id");
        Field tags = f("List<String>", "tags", null);
        Field counts = f("Map<String, Long>", "counts", null);
        add(new Def("PojoColl", "base", "pojo", "POJO with collection fields", List.of(id, tags, counts), null));
        add(new Def("PojoColl", "add", "pojo", "POJO with collection fields, a field added",
                List.of(id, tags, counts, added("String", "note", "n")), null));
        add(new Def("PojoColl", "remove", "pojo", "POJO with collection fields, field counts removed", List.of(id, tags), null));

        Field x = origin("x");
        Field y = f("String", "y", "y");
        add(new Def("Gen", "base", "generic", "Not a POJO (no default constructor): a Kryo GenericType", List.of(x, y), null));
        add(new Def("Gen", "add", "generic", "Kryo GenericType, a field added", List.of(x, y, added("double", "z", null)), null));
        add(new Def("Gen", "pojo", "pojo", "Now a POJO (public fields, default constructor)", List.of(x, y), null));
        add(new Def("Gen", "typeinfo", "typeinfo",
                "Private fields, but a @TypeInfo factory that declares it a POJO", List.of(x, y), null));

        add(new Def("Color", "base", "enum", "Enum", null, List.of("RED", "GREEN", "BLUE")));
        add(new Def("Color", "add", "enum", "Enum, a constant added", null, List.of("RED", "GREEN", "BLUE", "YELLOW")));
        add(new Def("Color", "reorder", "enum", "Enum, constants reordered", null, List.of("BLUE", "RED", "GREEN")));
        add(new Def("Color", "remove", "enum", "Enum, constant BLUE removed", null, List.of("RED", "GREEN")));

        Field rid = origin("id");
        Field rname = f("String", "name", "n");
        add(new Def("AvroRec", "base", "avro", "Avro record schema of the AVRO values (GenericRecord)", List.of(rid, rname), null));
        add(new Def("AvroRec", "add", "avro", "Avro schema, a field with a default added",
                List.of(rid, rname, added("double", "score", null)), null));
        add(new Def("AvroRec", "remove", "avro", "Avro schema, field name removed", List.of(rid), null));
        add(new Def("AvroRec", "retype", "avro", "Avro schema, field name now an int", List.of(rid, f("int", "name", null)), null));
        add(new Def("AvroRec", "nodefault", "avro", "Avro schema, a field without a default added",
                List.of(rid, rname, f("double", "score", null)), null));

        Field kid = origin("id");
        Field tag = f("String", "tag", "k");
        add(new Def("PojoK", "base", "pojo", "Key POJO", List.of(kid, tag), null));
        add(new Def("PojoK", "add", "pojo", "Key POJO, a field added", List.of(kid, tag, added("int", "extra", null)), null));
    }

    /** Every jar variant: "base" and "<Class>-<variant>". */
    static List<String> jarVariants() {
        List<String> out = new ArrayList<>();
        out.add("base");
        for (Map.Entry<String, Map<String, Def>> e : CLASSES.entrySet()) {
            for (String v : e.getValue().keySet()) {
                if (!v.equals("base")) {
                    out.add(e.getKey() + "-" + v);
                }
            }
        }
        return out;
    }

    /** The classes of a jar variant, by simple name. */
    static Map<String, Def> jar(String jarVariant) {
        Map<String, Def> out = new LinkedHashMap<>();
        for (Map.Entry<String, Map<String, Def>> e : CLASSES.entrySet()) {
            out.put(e.getKey(), e.getValue().get("base"));
        }
        if (!jarVariant.equals("base")) {
            int dash = jarVariant.indexOf('-');
            String cls = jarVariant.substring(0, dash);
            Def d = CLASSES.get(cls).get(jarVariant.substring(dash + 1));
            if (d == null) {
                throw new IllegalArgumentException("unknown jar variant " + jarVariant);
            }
            out.put(cls, d);
        }
        return out;
    }

    /** The catalogue entry of a class (the shape of the vectors' jars/catalogue.json). */
    static Map<String, Object> describe(Def d) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", d.kind.equals("typeinfo") ? "pojo" : d.kind);
        if (d.fields != null) {
            List<Object> fs = new ArrayList<>();
            for (Field x : d.fields) {
                fs.add(Arrays.asList(x.type, x.name));
            }
            m.put("fields", fs);
        }
        if (d.constants != null) {
            m.put("constants", new ArrayList<>(d.constants));
        }
        m.put("variant", d.variant);
        if (d.kind.equals("typeinfo")) {
            m.put("type_info_factory", d.name() + "$Factory");
        }
        if (d.kind.equals("avro")) {
            m.put("schema", avroSchema(d));
        }
        return m;
    }

    /** The class definition as the states list shows it (value_class_def / key_class_def). */
    static Map<String, Object> classDef(Def d) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", d.name());
        m.put("variant", d.variant);
        m.put("kind", d.kind.equals("typeinfo") ? "pojo" : d.kind);
        List<Object> fs = null;
        if (d.fields != null) {
            fs = new ArrayList<>();
            for (Field x : d.fields) {
                fs.add(Arrays.asList(x.type, x.name));
            }
        }
        m.put("fields", fs);
        m.put("constants", d.constants == null ? null : new ArrayList<>(d.constants));
        return m;
    }

    /** Catalogue of a set of jar variants: jar -> class -> description. */
    static Map<String, Object> catalogue(List<String> jarVariants) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String j : jarVariants) {
            Map<String, Object> classes = new LinkedHashMap<>();
            for (Map.Entry<String, Def> e : jar(j).entrySet()) {
                classes.put(e.getKey(), describe(e.getValue()));
            }
            out.put(j, classes);
        }
        return out;
    }

    // ------------------------------------------------------------------ sources

    static String source(Def d) {
        return d.kind.equals("enum") ? enumSource(d) : d.kind.equals("avro") ? avroSource(d) : classSource(d);
    }

    private static String avroType(Field x) {
        switch (x.type) {
            case "long": return "long";
            case "int": return "int";
            case "double": return "double";
            case "String": return "string";
            default: throw new IllegalArgumentException("no Avro type for " + x.type);
        }
    }

    /** The schema (record statetypes.user.avro.Rec); a lenient (added) field gets its Java default. */
    static String avroSchema(Def d) {
        StringBuilder s = new StringBuilder("{\"type\":\"record\",\"name\":\"Rec\",\"namespace\":\"statetypes.user.avro\",\"fields\":[");
        for (int i = 0; i < d.fields.size(); i++) {
            Field x = d.fields.get(i);
            s.append(i == 0 ? "" : ",").append("{\"name\":\"").append(x.name).append("\",\"type\":\"")
                    .append(avroType(x)).append('"');
            if (x.lenient) {
                s.append(",\"default\":").append(x.type.equals("double") ? "0.0" : "0");
            }
            s.append('}');
        }
        return s.append("]}").toString();
    }

    private static String avroSource(Def d) {
        String n = d.simple;
        StringBuilder s = new StringBuilder();
        s.append("package ").append(PACKAGE).append(";\n\n");
        s.append("import org.apache.avro.Schema;\nimport org.apache.avro.generic.GenericData;\nimport org.apache.avro.generic.GenericRecord;\n\n");
        s.append("import java.util.*;\n\n");
        s.append("/** ").append(d.doc).append(", variant ").append(d.variant).append(". */\n");
        s.append("public final class ").append(n).append(" {\n");
        s.append("    private ").append(n).append("() {}\n\n");
        s.append("    public static final String SCHEMA =\n            \"")
                .append(avroSchema(d).replace("\"", "\\\"")).append("\";\n\n");
        s.append("    private static Schema schema;\n\n");
        s.append("    public static synchronized Schema schema() {\n        if (schema == null) {\n"
                + "            schema = new Schema.Parser().parse(SCHEMA);\n        }\n        return schema;\n    }\n\n");
        s.append("    public static GenericRecord of(long v) {\n        GenericData.Record r = new GenericData.Record(schema());\n");
        for (Field x : d.fields) {
            s.append("        r.put(\"").append(x.name).append("\", ").append(make(x)).append(");\n");
        }
        s.append("        return r;\n    }\n\n");
        s.append("    static Object get(GenericRecord p, String f) {\n"
                + "        return p.getSchema().getField(f) == null ? null : p.get(f);\n    }\n\n");
        s.append("    static String str(Object o) {\n        return o == null ? null : o.toString();\n    }\n\n");
        List<String> checks = new ArrayList<>();
        List<String> defaults = new ArrayList<>();
        Field origin = null;
        for (Field x : d.fields) {
            if (x.origin) {
                origin = x;
                continue;
            }
            String g = "get(p, \"" + x.name + "\")";
            String ok;
            String dflt;
            switch (x.type) {
                case "String": ok = "Objects.equals(str(" + g + "), \"" + x.prefix + "\" + v)"; dflt = g + " == null"; break;
                case "double": ok = "Objects.equals(" + g + ", v * 0.25)"; dflt = "(" + g + " == null || Objects.equals(" + g + ", 0.0))"; break;
                case "int": ok = "Objects.equals(" + g + ", (int) (v % 7))"; dflt = "(" + g + " == null || Objects.equals(" + g + ", 0))"; break;
                default: throw new IllegalArgumentException(x.type);
            }
            checks.add("(" + ok + " || " + dflt + ")");
            defaults.add("        if (!(" + ok + ") && " + dflt + ") {\n            out.add(\"" + x.name + "\");\n        }\n");
        }
        s.append("    /** The number a record was made from, or null (fields at their default are accepted). */\n");
        s.append("    public static Long origin(Object o) {\n");
        s.append("        if (!(o instanceof GenericRecord) || get((GenericRecord) o, \"").append(origin.name)
                .append("\") == null) {\n            return null;\n        }\n");
        s.append("        GenericRecord p = (GenericRecord) o;\n");
        s.append("        long v = ((Number) p.get(\"").append(origin.name).append("\")).longValue();\n");
        s.append("        return ").append(checks.isEmpty() ? "true" : String.join("\n                && ", checks))
                .append(" ? v : null;\n    }\n\n");
        s.append("    /** Fields at their default although the record's number makes them otherwise. */\n");
        s.append("    public static List<String> defaulted(Object o) {\n        List<String> out = new ArrayList<>();\n");
        s.append("        if (origin(o) == null) {\n            return out;\n        }\n");
        s.append("        GenericRecord p = (GenericRecord) o;\n");
        s.append("        long v = ((Number) p.get(\"").append(origin.name).append("\")).longValue();\n");
        for (String x : defaults) {
            s.append(x);
        }
        s.append("        return out;\n    }\n}\n");
        return s.toString();
    }

    private static String enumSource(Def d) {
        return "package " + PACKAGE + ";\n\n"
                + "/** " + d.doc + ", variant " + d.variant + ". */\n"
                + "public enum " + d.simple + " {\n"
                + "    " + String.join(", ", d.constants) + ";\n\n"
                + "    public static " + d.simple + " of(long v) {\n"
                + "        " + d.simple + "[] c = values();\n"
                + "        return c[(int) Math.floorMod(v, (long) c.length)];\n"
                + "    }\n"
                + "}\n";
    }

    private static String make(Field x) {
        switch (x.type) {
            case "long": return "v";
            case "int": return "(int) (v % 7)";
            case "double": return "v * 0.25";
            case "String": return "\"" + x.prefix + "\" + v";
            case "List<String>": return "new ArrayList<>(Arrays.asList(\"t\" + v, \"u\" + (v % 3)))";
            case "Map<String, Long>": return "new HashMap<>(Collections.singletonMap(\"c\" + (v % 4), v))";
            default: throw new IllegalArgumentException(x.type);
        }
    }

    /** {expression: the field holds what v makes, expression: the field is at its Java default}. */
    private static String[] check(Field x, String var) {
        String f = var + "." + x.name;
        switch (x.type) {
            case "int": return new String[] {f + " == (int) (v % 7)", f + " == 0"};
            case "double": return new String[] {f + " == v * 0.25", f + " == 0.0"};
            case "String": return new String[] {"Objects.equals(" + f + ", \"" + x.prefix + "\" + v)", f + " == null"};
            case "List<String>": return new String[] {"Objects.equals(" + f + ", Arrays.asList(\"t\" + v, \"u\" + (v % 3)))", f + " == null"};
            case "Map<String, Long>": return new String[] {"Objects.equals(" + f + ", Collections.singletonMap(\"c\" + (v % 4), v))", f + " == null"};
            default: throw new IllegalArgumentException(x.type);
        }
    }

    private static String flinkType(Field x) {
        switch (x.type) {
            case "long": return "Types.LONG";
            case "int": return "Types.INT";
            case "double": return "Types.DOUBLE";
            case "String": return "Types.STRING";
            default: throw new IllegalArgumentException("no @TypeInfo field type for " + x.type);
        }
    }

    private static String classSource(Def d) {
        String n = d.simple;
        boolean generic = d.kind.equals("generic");
        boolean typeinfo = d.kind.equals("typeinfo");
        Field origin = null;
        for (Field x : d.fields) {
            if (x.origin) {
                origin = x;
            }
        }
        StringBuilder s = new StringBuilder();
        s.append("package ").append(PACKAGE).append(";\n\n");
        if (typeinfo) {
            s.append("import org.apache.flink.api.common.typeinfo.TypeInfo;\n");
            s.append("import org.apache.flink.api.common.typeinfo.TypeInfoFactory;\n");
            s.append("import org.apache.flink.api.common.typeinfo.TypeInformation;\n");
            s.append("import org.apache.flink.api.common.typeinfo.Types;\n\n");
            s.append("import java.lang.reflect.Type;\n");
        }
        s.append("import java.util.*;\n\n");
        s.append("/** ").append(d.doc).append(", variant ").append(d.variant).append(". */\n");
        if (typeinfo) {
            s.append("@TypeInfo(").append(n).append(".Factory.class)\n");
        }
        s.append("public class ").append(n).append(" {\n");
        for (Field x : d.fields) {
            s.append("    ").append(generic ? "private final " : typeinfo ? "private " : "public ")
                    .append(x.type).append(' ').append(x.name).append(";\n");
        }
        s.append('\n');
        if (generic) {
            List<String> params = new ArrayList<>();
            List<String> args = new ArrayList<>();
            for (Field x : d.fields) {
                params.add(x.type + " " + x.name);
                args.add(make(x));
            }
            s.append("    public ").append(n).append('(').append(String.join(", ", params)).append(") {\n");
            for (Field x : d.fields) {
                s.append("        this.").append(x.name).append(" = ").append(x.name).append(";\n");
            }
            s.append("    }\n\n");
            s.append("    public static ").append(n).append(" of(long v) {\n");
            s.append("        return new ").append(n).append('(').append(String.join(", ", args)).append(");\n");
            s.append("    }\n\n");
        } else {
            s.append("    public ").append(n).append("() {}\n\n");
            s.append("    public static ").append(n).append(" of(long v) {\n");
            s.append("        ").append(n).append(" p = new ").append(n).append("();\n");
            for (Field x : d.fields) {
                s.append("        p.").append(x.name).append(" = ").append(make(x)).append(";\n");
            }
            s.append("        return p;\n");
            s.append("    }\n\n");
        }
        s.append("    /**\n     * The number this value was made from, or null when a field holds something else than what\n"
                + "     * that number makes (a field at its Java default is accepted: new in this version, or\n"
                + "     * one whose data was dropped; see defaulted).\n     */\n");
        s.append("    public static Long origin(Object o) {\n");
        s.append("        if (!(o instanceof ").append(n).append(")) {\n            return null;\n        }\n");
        s.append("        ").append(n).append(" p = (").append(n).append(") o;\n");
        s.append("        long v = p.").append(origin.name).append(";\n");
        List<String> checks = new ArrayList<>();
        List<String> defaults = new ArrayList<>();
        for (Field x : d.fields) {
            if (!x.origin) {
                String[] c = check(x, "p");
                checks.add("(" + c[0] + " || " + c[1] + ")");
                defaults.add("        if (!(" + c[0] + ") && " + c[1] + ") {\n            out.add(\"" + x.name + "\");\n        }\n");
            }
        }
        s.append("        return ").append(checks.isEmpty() ? "true" : String.join("\n                && ", checks))
                .append(" ? v : null;\n    }\n\n");
        s.append("    /** The fields of a value (made from v) at their Java default although v makes them otherwise. */\n");
        s.append("    public static List<String> defaulted(Object o) {\n");
        s.append("        List<String> out = new ArrayList<>();\n");
        s.append("        if (!(o instanceof ").append(n).append(")) {\n            return out;\n        }\n");
        s.append("        ").append(n).append(" p = (").append(n).append(") o;\n");
        s.append("        long v = p.").append(origin.name).append(";\n");
        for (String x : defaults) {
            s.append(x);
        }
        s.append("        return out;\n    }\n\n");
        s.append("    /** The key number of a key of this class. */\n");
        s.append("    public static long number(Object o) {\n        return ((").append(n).append(") o).")
                .append(origin.name).append(";\n    }\n\n");
        List<String> parts = new ArrayList<>();
        List<String> names = new ArrayList<>();
        List<String> eq = new ArrayList<>();
        for (Field x : d.fields) {
            parts.add(x.name);
            names.add(x.name);
            eq.add("Objects.equals(" + x.name + ", q." + x.name + ")");
        }
        s.append("    @Override\n    public String toString() {\n        return \"").append(n).append("(\" + ")
                .append(String.join(" + \",\" + ", parts)).append(" + \")\";\n    }\n\n");
        s.append("    @Override\n    public boolean equals(Object o) {\n");
        s.append("        if (!(o instanceof ").append(n).append(")) {\n            return false;\n        }\n");
        s.append("        ").append(n).append(" q = (").append(n).append(") o;\n");
        s.append("        return ").append(String.join(" && ", eq)).append(";\n    }\n\n");
        s.append("    @Override\n    public int hashCode() {\n        return Objects.hash(")
                .append(String.join(", ", names)).append(");\n    }\n");
        if (typeinfo) {
            s.append("\n    /** Declares the class a POJO of its private fields. */\n");
            s.append("    public static final class Factory extends TypeInfoFactory<").append(n).append("> {\n");
            s.append("        @Override\n        public TypeInformation<").append(n)
                    .append("> createTypeInfo(Type t, Map<String, TypeInformation<?>> genericParameters) {\n");
            s.append("            Map<String, TypeInformation<?>> fields = new LinkedHashMap<>();\n");
            for (Field x : d.fields) {
                s.append("            fields.put(\"").append(x.name).append("\", ").append(flinkType(x)).append(");\n");
            }
            s.append("            return Types.POJO(").append(n).append(".class, fields);\n");
            s.append("        }\n    }\n");
        }
        s.append("}\n");
        return s.toString();
    }

    static List<String> simpleNames() {
        return Collections.unmodifiableList(new ArrayList<>(CLASSES.keySet()));
    }
}
