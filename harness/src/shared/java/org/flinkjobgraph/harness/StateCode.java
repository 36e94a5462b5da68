package org.flinkjobgraph.harness;

import org.apache.flink.shaded.asm9.org.objectweb.asm.ClassReader;
import org.apache.flink.shaded.asm9.org.objectweb.asm.Handle;
import org.apache.flink.shaded.asm9.org.objectweb.asm.Opcodes;
import org.apache.flink.shaded.asm9.org.objectweb.asm.Type;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.AbstractInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.ClassNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.FieldInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.InsnList;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.InsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.IntInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.InvokeDynamicInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.JumpInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.LabelNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.LdcInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.LookupSwitchInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.MethodInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.MethodNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.TableSwitchInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.TryCatchBlockNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.TypeInsnNode;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.analysis.Analyzer;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.analysis.AnalyzerException;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.analysis.Frame;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.analysis.Interpreter;
import org.apache.flink.shaded.asm9.org.objectweb.asm.tree.analysis.Value;

import java.io.InputStream;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Finds the state declarations in the bytecode of a job's functions (and of Flink's operators),
 * without running any of it: a small abstract interpreter over the methods Flink calls
 * ({@code open}, {@code initializeState}, {@code processElement}, ...), built on ASM's data-flow
 * {@link Analyzer} (Flink's shaded ASM 9). Values are either known objects or unknown (with the
 * reason). Known are: constants and class literals, fields of the live function object (read by
 * reflection: the object main() built), static fields of Flink's classes, and results of an
 * explicit allowlist of Flink's pure factory / builder methods ({@code Types.*},
 * {@code TypeInformation.of}, {@code StateTtlConfig.newBuilder...}, constructors of Flink's state
 * descriptors, type informations and serializers, java.time.Duration factories), which are executed
 * reflectively on known arguments. A {@code new TypeHint<...>(){}} is resolved from its class's
 * generic superclass (no constructor of it runs). Calls of the job's own methods on {@code this},
 * on a live object from a field, and static ones are followed (abstractly, bounded depth), virtual
 * ones against the runtime class of the live object. No user method is ever executed.
 *
 * <p>Declarations are the calls of RuntimeContext / KeyedStateStore {@code get*State},
 * OperatorStateStore {@code getListState / getUnionListState / getBroadcastState}, an operator's
 * {@code getPartitionedState / getOrCreateKeyedState / getInternalTimerService} and TimerService
 * {@code register*Timer}. Branches whose condition is known (a field's value, {@code instanceof} of
 * a live object) are followed one way only.
 */
final class StateCode {
    /** One declaration call site, with what was resolved. */
    static final class Decl {
        /** VALUE, LIST, ... from the call; null: from the descriptor's own type. */
        String kind;
        /** The resolved descriptor object, or null. */
        Object descriptor;
        /** Where the descriptor came from: "field a.B.f" when read from a field, else null (built in code). */
        String origin;
        /** Class#method of the call site. */
        String site;
        String unresolved;
        /** A name known even when the descriptor is not (its constructor's first argument). */
        String hintName;
        /** TIMERS: the timer service name and namespace serializer. */
        String timerName;
        Object timerNamespaceSerializer;
        /** TimerService.register*Timer ("processing" / "event"). */
        String registersTimer;
        boolean flinkCode;
        /** The call is not made on every path through the code Flink calls (a branch on a run-time value). */
        boolean conditional;
        /** Class#method of the method Flink calls (open, processElement...) the call is reached from. */
        String entry;

        Decl copy() {
            Decl d = new Decl();
            d.kind = kind;
            d.descriptor = descriptor;
            d.origin = origin;
            d.site = site;
            d.unresolved = unresolved;
            d.hintName = hintName;
            d.timerName = timerName;
            d.timerNamespaceSerializer = timerNamespaceSerializer;
            d.registersTimer = registersTimer;
            d.flinkCode = flinkCode;
            d.conditional = conditional;
            d.entry = entry;
            return d;
        }
    }

    /** Marker values. */
    private static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };

    private static final Object RUNTIME_CONTEXT = new Object() {
        @Override
        public String toString() {
            return "RuntimeContext";
        }
    };

    /** The TypeInformation a TypeHint subclass stands for. */
    static final class HintInfo {
        final Object typeInfo;

        HintInfo(Object typeInfo) {
            this.typeInfo = typeInfo;
        }
    }

    /** A StringBuilder's content so far (functional: append gives a new one). */
    static final class Chars {
        final String s;

        Chars(String s) {
            this.s = s;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Chars && ((Chars) o).s.equals(s);
        }

        @Override
        public int hashCode() {
            return s.hashCode();
        }
    }

    /** The object of a NEW instruction: resolved when its constructor call is interpreted. */
    static final class NewObj {
        final String type;
        boolean done;
        Object resolved;
        String why;
        String hintName;

        NewObj(String type) {
            this.type = type;
        }
    }

    /** An abstract value. */
    static final class V implements Value {
        static final int UNKNOWN = 0;
        static final int CONST = 1;
        static final int NEW = 2;
        static final int UNINIT = 3;

        final int tag;
        final int size;
        final Object value;
        final String why;
        final NewObj obj;
        final String origin;

        V(int tag, int size, Object value, String why, NewObj obj, String origin) {
            this.tag = tag;
            this.size = size;
            this.value = value;
            this.why = why;
            this.obj = obj;
            this.origin = origin;
        }

        static V unknown(int size, String why) {
            return new V(UNKNOWN, size, null, why, null, null);
        }

        static V of(Object value) {
            int size = value instanceof Long || value instanceof Double ? 2 : 1;
            return new V(CONST, size, value == null ? NULL : value, null, null, null);
        }

        static V of(Object value, String origin) {
            int size = value instanceof Long || value instanceof Double ? 2 : 1;
            return new V(CONST, size, value == null ? NULL : value, null, null, origin);
        }

        /** A known value in a slot of the given size (the declared type's, not the value's). */
        static V sized(Object value, int size, String origin) {
            return new V(CONST, size, value == null ? NULL : value, null, null, origin);
        }

        @Override
        public int getSize() {
            return size;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof V)) {
                return false;
            }
            V v = (V) o;
            if (v.tag != tag || v.size != size) {
                return false;
            }
            switch (tag) {
                case CONST:
                    return same(value, v.value);
                case NEW:
                    return obj == v.obj;
                default:
                    return true;
            }
        }

        @Override
        public int hashCode() {
            return tag * 31 + size;
        }

        static boolean same(Object a, Object b) {
            if (a == b) {
                return true;
            }
            if (a == null || b == null) {
                return false;
            }
            if (a instanceof String || a instanceof Number || a instanceof Boolean || a instanceof Character
                    || a instanceof Class || a instanceof Chars) {
                return a.equals(b);
            }
            return false;
        }

        @Override
        public String toString() {
            return tag == CONST ? "const " + value : tag == NEW ? "new " + obj.type : tag == UNINIT ? "uninit" : "? " + why;
        }
    }

    /** Thrown (without a stack trace) when a value is not known. */
    static final class Unres extends Exception {
        final String hintName;

        Unres(String why, String hintName) {
            super(why, null, false, false);
            this.hintName = hintName;
        }
    }

    /** What one analysed method (in one calling context) declares and returns. */
    static final class Result {
        V ret;
        final List<Decl> decls = new ArrayList<>();
    }

    // ------------------------------------------------------------------ the analysis of one job

    final ClassLoader loader;
    final Object executionConfig;
    /** Class#method#desc#index of every declaration call site in code that was analysed. */
    final Set<String> coveredSites = new HashSet<>();
    /** Classes whose methods were analysed. */
    final Set<String> analysedClasses = new java.util.LinkedHashSet<>();
    /** The runtime classes of the current node's user objects (the safety net scans their hierarchies). */
    final List<Class<?>> nodeRoots = new ArrayList<>();
    /** Descriptor objects configured only on some paths (a TTL set in a branch), with why. */
    final Map<Object, String> uncertain = new IdentityHashMap<>();

    private final Map<String, ClassNode> nodes = new HashMap<>();
    private final Map<String, Class<?>> classes = new HashMap<>();
    private final Map<Class<?>, Boolean> jobClasses = new HashMap<>();
    private final Map<String, Result> memo = new HashMap<>();
    private final Deque<String> stack = new ArrayDeque<>();
    private final Map<Object, String> tainted = new IdentityHashMap<>();
    private final Map<Object, Integer> ids = new IdentityHashMap<>();
    private int work;

    /** Analysed instructions at most per job (a bound on the cost of huge jars). */
    static final int WORK_LIMIT = 2_000_000;
    static final int USER_DEPTH = 8;
    static final int FLINK_DEPTH = 4;

    StateCode(ClassLoader loader, Object executionConfig) {
        this.loader = loader;
        this.executionConfig = executionConfig;
    }

    /** Flink's (and the harness's) class loader: a class it can load is not the job's own. */
    static final ClassLoader FLINK_LOADER = org.apache.flink.streaming.api.graph.StreamGraph.class.getClassLoader();

    /**
     * Whether a class comes from the job's jars rather than from Flink's distribution (the
     * harness's class path): decided by where it is loaded from, not by its package, so a job in
     * {@code org.apache.flink.training} is the job's own.
     */
    static boolean isJobClass(Class<?> c, Map<Class<?>, Boolean> cache) {
        while (c.isArray()) {
            c = c.getComponentType();
        }
        if (c.isPrimitive() || c.getClassLoader() == null) {
            return false;
        }
        Boolean b = cache == null ? null : cache.get(c);
        if (b == null) {
            String res = c.getName().replace('.', '/') + ".class";
            b = FLINK_LOADER == null || FLINK_LOADER.getResource(res) == null;
            if (cache != null) {
                cache.put(c, b);
            }
        }
        return b;
    }

    boolean isJob(Class<?> c) {
        return c != null && isJobClass(c, jobClasses);
    }

    Class<?> cls(String internalName) {
        if (classes.containsKey(internalName)) {
            return classes.get(internalName);
        }
        Class<?> c = null;
        try {
            Type t = internalName.startsWith("[") ? Type.getType(internalName) : Type.getObjectType(internalName);
            c = classOf(t);
        } catch (Throwable e) {
            // not loadable: stays null
        }
        classes.put(internalName, c);
        return c;
    }

    Class<?> classOf(Type t) throws ClassNotFoundException {
        switch (t.getSort()) {
            case Type.BOOLEAN:
                return boolean.class;
            case Type.BYTE:
                return byte.class;
            case Type.CHAR:
                return char.class;
            case Type.SHORT:
                return short.class;
            case Type.INT:
                return int.class;
            case Type.LONG:
                return long.class;
            case Type.FLOAT:
                return float.class;
            case Type.DOUBLE:
                return double.class;
            case Type.VOID:
                return void.class;
            case Type.ARRAY:
                Class<?> c = classOf(t.getElementType());
                for (int i = 0; i < t.getDimensions(); i++) {
                    c = Array.newInstance(c, 0).getClass();
                }
                return c;
            default:
                return Class.forName(t.getClassName(), false, loader);
        }
    }

    static boolean isA(Class<?> c, String className) {
        if (c == null) {
            return false;
        }
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            if (k.getName().equals(className)) {
                return true;
            }
            for (Class<?> i : k.getInterfaces()) {
                if (isA(i, className)) {
                    return true;
                }
            }
        }
        return false;
    }

    ClassNode node(Class<?> c) {
        String name = c.getName();
        if (nodes.containsKey(name)) {
            return nodes.get(name);
        }
        ClassNode cn = null;
        ClassLoader l = c.getClassLoader() != null ? c.getClassLoader() : loader;
        try (InputStream in = l.getResourceAsStream(name.replace('.', '/') + ".class")) {
            if (in != null) {
                cn = new ClassNode();
                new ClassReader(in).accept(cn, ClassReader.SKIP_FRAMES);
            }
        } catch (Throwable e) {
            cn = null;
        }
        nodes.put(name, cn);
        return cn;
    }

    static MethodNode method(ClassNode cn, String name, String desc) {
        if (cn == null) {
            return null;
        }
        for (MethodNode m : cn.methods) {
            if (m.name.equals(name) && m.desc.equals(desc)) {
                return m;
            }
        }
        return null;
    }

    /** The class and method a call resolves to, from {@code start} up (then default methods). */
    Object[] resolve(Class<?> start, String name, String desc) {
        for (Class<?> k = start; k != null; k = k.getSuperclass()) {
            MethodNode m = method(node(k), name, desc);
            if (m != null) {
                return new Object[] {k, m};
            }
        }
        for (Class<?> k = start; k != null; k = k.getSuperclass()) {
            for (Class<?> i : k.getInterfaces()) {
                Object[] r = resolveInterface(i, name, desc);
                if (r != null) {
                    return r;
                }
            }
        }
        return null;
    }

    private Object[] resolveInterface(Class<?> i, String name, String desc) {
        MethodNode m = method(node(i), name, desc);
        if (m != null && (m.access & Opcodes.ACC_ABSTRACT) == 0) {
            return new Object[] {i, m};
        }
        for (Class<?> j : i.getInterfaces()) {
            Object[] r = resolveInterface(j, name, desc);
            if (r != null) {
                return r;
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ entry points

    /**
     * The declarations in the methods Flink calls on {@code obj}: for a job class, every method of
     * its job-class hierarchy that overrides or implements a method of a Flink (non-job) supertype;
     * for a Flink operator ({@code flinkMode}), its {@code open()} and
     * {@code initializeState(StateInitializationContext)}.
     */
    List<Decl> analyseObject(Object obj, boolean flinkMode) {
        return analyseObject(obj, flinkMode, false);
    }

    /**
     * {@code flinkFunction}: a Flink object that Flink calls like a function (a window's trigger):
     * every method overriding its supertypes', in Flink's code, as for an operator.
     */
    List<Decl> analyseObject(Object obj, boolean flinkMode, boolean flinkFunction) {
        List<Decl> out = new ArrayList<>();
        Class<?> c = obj.getClass();
        if (!flinkMode && !nodeRoots.contains(c)) {
            nodeRoots.add(c);
        }
        Set<String> entries = new java.util.LinkedHashSet<>();
        if (flinkFunction) {
            for (Class<?> i : c.getInterfaces()) {
                collectMethods(i, entries, new HashSet<>());
            }
            collectMethods(c.getSuperclass(), entries, new HashSet<>());
        } else if (flinkMode) {
            entries.add("open()V");
            entries.add("initializeState(Lorg/apache/flink/runtime/state/StateInitializationContext;)V");
        } else {
            for (Class<?> k = c; k != null; k = k.getSuperclass()) {
                if (!isJob(k)) {
                    collectMethods(k, entries, new HashSet<>());
                }
                for (Class<?> i : k.getInterfaces()) {
                    if (!isJob(i)) {
                        collectMethods(i, entries, new HashSet<>());
                    }
                }
            }
        }
        Set<String> done = new HashSet<>();
        for (String e : entries) {
            int p = e.indexOf('(');
            String name = e.substring(0, p);
            String desc = e.substring(p);
            if (name.equals("<init>") || name.equals("<clinit>")) {
                continue;
            }
            Object[] r = resolve(c, name, desc);
            if (r == null) {
                continue;
            }
            Class<?> owner = (Class<?>) r[0];
            MethodNode m = (MethodNode) r[1];
            if ((m.access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0 || (!flinkMode && !isJob(owner))) {
                continue;
            }
            if (!done.add(owner.getName() + "#" + name + desc)) {
                continue;
            }
            V self = V.of(obj, null);
            V[] args = new V[Type.getArgumentTypes(desc).length];
            Type[] at = Type.getArgumentTypes(desc);
            for (int i = 0; i < args.length; i++) {
                args[i] = V.unknown(at[i].getSize(), "parameter " + (i + 1) + " of " + simple(owner) + "#" + name
                        + " (a value Flink passes at run time)");
            }
            Result res = analyse(owner, m, self, args, flinkMode, 0);
            if (res != null) {
                for (Decl d : res.decls) {
                    if (d.entry == null) {
                        d = d.copy(); // results are shared between the entries that reach a helper
                        d.entry = owner.getName() + "#" + name;
                    }
                    out.add(d);
                }
            }
        }
        return out;
    }

    /** Starts the analysis of another node: the safety net looks at that node's classes only. */
    void beginNode() {
        nodeRoots.clear();
    }

    /**
     * A Flink operator whose object the graph does not hold (a factory creates it at run time:
     * the FLIP-27 SourceOperator): its open() / initializeState() with the object itself unknown.
     */
    List<Decl> analyseClass(String className) {
        List<Decl> out = new ArrayList<>();
        Class<?> c;
        try {
            c = Class.forName(className, false, FLINK_LOADER);
        } catch (Throwable e) {
            return out;
        }
        for (String e : new String[] {"open()V", "initializeState(Lorg/apache/flink/runtime/state/StateInitializationContext;)V"}) {
            int p = e.indexOf('(');
            Object[] r = resolve(c, e.substring(0, p), e.substring(p));
            if (r == null) {
                continue;
            }
            MethodNode m = (MethodNode) r[1];
            Type[] at = Type.getArgumentTypes(m.desc);
            V[] args = new V[at.length];
            for (int i = 0; i < args.length; i++) {
                args[i] = V.unknown(at[i].getSize(), "a value Flink passes at run time");
            }
            Result res = analyse((Class<?>) r[0], m, V.unknown(1, "the operator Flink creates at run time"), args, true, 0);
            if (res != null) {
                out.addAll(res.decls);
            }
        }
        return out;
    }

    /** Every method (name + descriptor) a Flink class or interface declares, with its supertypes'. */
    private void collectMethods(Class<?> k, Set<String> out, Set<Class<?>> seen) {
        if (k == null || k == Object.class || !seen.add(k)) {
            return;
        }
        ClassNode cn = node(k);
        if (cn != null) {
            for (MethodNode m : cn.methods) {
                if ((m.access & (Opcodes.ACC_PRIVATE | Opcodes.ACC_STATIC)) == 0) {
                    out.add(m.name + m.desc);
                }
            }
        }
        collectMethods(k.getSuperclass(), out, seen);
        for (Class<?> i : k.getInterfaces()) {
            collectMethods(i, out, seen);
        }
    }

    /**
     * Declaration call sites in the analysed job classes that no analysis reached (a method Flink
     * never calls directly and nothing followed called it with arguments): each an unresolved
     * declaration, never dropped.
     */
    List<Decl> unreachedSites() {
        List<Decl> out = new ArrayList<>();
        Set<String> reported = new HashSet<>();
        for (Class<?> root : nodeRoots) {
            for (Class<?> c = root; c != null && isJob(c); c = c.getSuperclass()) {
                unreachedSites(root, c, reported, out);
            }
        }
        return out;
    }

    private void unreachedSites(Class<?> root, Class<?> c, Set<String> reported, List<Decl> out) {
        String cname = c.getName();
        ClassNode cn = node(c);
        if (cn == null) {
            return;
        }
        for (MethodNode m : cn.methods) {
            // a method the object's own class overrides is never run for it
            if ((m.access & Opcodes.ACC_STATIC) == 0 && !m.name.startsWith("<")) {
                Object[] r = resolve(root, m.name, m.desc);
                if (r != null && r[0] != c) {
                    continue;
                }
            }
            AbstractInsnNode[] insns = m.instructions.toArray();
            for (int i = 0; i < insns.length; i++) {
                if (!(insns[i] instanceof MethodInsnNode)) {
                    continue;
                }
                MethodInsnNode mi = (MethodInsnNode) insns[i];
                String[] k = declarationKind(mi);
                if (k == null) {
                    continue;
                }
                String site = cname + "#" + m.name + m.desc + "#" + i;
                if (coveredSites.contains(site) || !reported.add(site)) {
                    continue;
                }
                Decl d = new Decl();
                d.kind = k[0].equals("DESC") || k[0].equals("TIMER_REGISTER") ? null : k[0];
                if (k[0].equals("TIMER_REGISTER")) {
                    d.kind = "TIMERS";
                    d.registersTimer = mi.name.contains("Processing") ? "processing" : "event";
                }
                d.site = cname + "#" + m.name;
                d.unresolved = "the state declared in " + simple(c) + "#" + m.name + " (" + mi.name
                        + ") is in a method that the code Flink calls does not reach with known arguments"
                        + " (a lambda, a method of an object not in a field, or a call through an interface)";
                out.add(d);
            }
        }
    }

    /**
     * What kind of declaration a call is: {kind, descriptor argument index from the end of the
     * argument list} or null. kind DESC: from the descriptor; TIMER_SERVICE; TIMER_REGISTER.
     */
    String[] declarationKind(MethodInsnNode mi) {
        String n = mi.name;
        Type[] args = Type.getArgumentTypes(mi.desc);
        Class<?> owner = cls(mi.owner);
        if (owner == null) {
            return null;
        }
        boolean keyedStore = isA(owner, "org.apache.flink.api.common.functions.RuntimeContext")
                || isA(owner, "org.apache.flink.api.common.state.KeyedStateStore");
        boolean operatorStore = isA(owner, "org.apache.flink.api.common.state.OperatorStateStore");
        boolean operator = isA(owner, "org.apache.flink.streaming.api.operators.AbstractStreamOperator")
                || isA(owner, "org.apache.flink.streaming.api.operators.AbstractStreamOperatorV2");
        if (operatorStore && args.length == 1) {
            if (n.equals("getListState")) {
                return new String[] {"OPERATOR_LIST", "0"};
            }
            if (n.equals("getUnionListState")) {
                return new String[] {"OPERATOR_UNION_LIST", "0"};
            }
            if (n.equals("getBroadcastState")) {
                return new String[] {"BROADCAST", "0"};
            }
        }
        if (keyedStore && args.length == 1) {
            switch (n) {
                case "getState":
                case "getValueState":
                    return new String[] {"VALUE", "0"};
                case "getListState":
                    return new String[] {"LIST", "0"};
                case "getMapState":
                    return new String[] {"MAP", "0"};
                case "getReducingState":
                    return new String[] {"REDUCING", "0"};
                case "getAggregatingState":
                    return new String[] {"AGGREGATING", "0"};
                default:
                    break;
            }
        }
        if (operator) {
            if (n.equals("getPartitionedState") && (args.length == 1 || args.length == 3)) {
                return new String[] {"DESC", String.valueOf(args.length - 1)};
            }
            if (n.equals("getOrCreateKeyedState") && args.length == 2) {
                return new String[] {"DESC", "1"};
            }
            if (n.equals("getInternalTimerService") && args.length == 3) {
                return new String[] {"TIMER_SERVICE", "0"};
            }
        }
        if (n.equals("getPartitionedState") && args.length == 1
                && isA(owner, "org.apache.flink.streaming.api.windowing.triggers.Trigger$TriggerContext")) {
            return new String[] {"DESC", "0"};
        }
        if ((n.equals("registerProcessingTimeTimer") || n.equals("registerEventTimeTimer"))
                && isA(owner, "org.apache.flink.streaming.api.TimerService")) {
            return new String[] {"TIMER_REGISTER", "0"};
        }
        return null;
    }

    static String simple(Class<?> c) {
        return c.getName();
    }

    private int id(Object o) {
        Integer i = ids.get(o);
        if (i == null) {
            i = ids.size() + 1;
            ids.put(o, i);
        }
        return i;
    }

    private String key(V v) {
        switch (v.tag) {
            case V.CONST:
                Object o = v.value;
                if (o instanceof String || o instanceof Number || o instanceof Boolean || o instanceof Character) {
                    return o.getClass().getSimpleName() + ":" + o;
                }
                if (o instanceof Class) {
                    return "class:" + ((Class<?>) o).getName();
                }
                return "obj@" + id(o);
            case V.NEW:
                return "new@" + id(v.obj);
            default:
                return "?";
        }
    }

    // ------------------------------------------------------------------ one method

    /** Analyses one method in a calling context (memoised); null when it cannot be analysed. */
    Result analyse(Class<?> owner, MethodNode m, V self, V[] args, boolean flinkMode, int depth) {
        StringBuilder k = new StringBuilder(owner.getName()).append('#').append(m.name).append(m.desc).append('|');
        k.append(self == null ? "static" : key(self));
        for (V a : args) {
            k.append(',').append(key(a));
        }
        k.append(flinkMode ? "|F" : "|U");
        String mk = k.toString();
        analysedClasses.add(owner.getName());
        if (memo.containsKey(mk)) {
            return memo.get(mk);
        }
        if (stack.contains(owner.getName() + "#" + m.name + m.desc) || work > WORK_LIMIT) {
            return null; // recursion, or the budget is spent
        }
        work += m.instructions.size();
        stack.push(owner.getName() + "#" + m.name + m.desc);
        analysedClasses.add(owner.getName());
        Result r;
        try {
            r = run(owner, m, self, args, flinkMode, depth);
        } finally {
            stack.pop();
        }
        memo.put(mk, r);
        return r;
    }

    private Result run(Class<?> owner, MethodNode m, V self, V[] args, boolean flinkMode, int depth) {
        Interp interp = new Interp(owner, m, self, args, flinkMode, depth);
        Analyzer<V> analyzer = new Analyzer<>(interp);
        Frame<V>[] frames;
        try {
            frames = analyzer.analyze(Type.getInternalName(owner), m);
        } catch (AnalyzerException | RuntimeException e) {
            Result r = new Result();
            r.ret = V.unknown(1, "the code of " + owner.getName() + "#" + m.name + " could not be analysed: " + e);
            return r;
        }
        AbstractInsnNode[] insns = m.instructions.toArray();
        for (int i = 0; i < insns.length; i++) {
            if (insns[i] instanceof MethodInsnNode && declarationKind((MethodInsnNode) insns[i]) != null) {
                coveredSites.add(owner.getName() + "#" + m.name + m.desc + "#" + i);
            }
        }
        BitSet live = reachable(m, insns, frames);
        Result res = new Result();
        String site = owner.getName() + "#" + m.name;
        List<V> rets = new ArrayList<>();
        for (int i = live.nextSetBit(0); i >= 0; i = live.nextSetBit(i + 1)) {
            AbstractInsnNode in = insns[i];
            Frame<V> f = frames[i];
            int op = in.getOpcode();
            if (op >= Opcodes.IRETURN && op <= Opcodes.ARETURN) {
                rets.add(f.getStack(f.getStackSize() - 1));
            }
            if (!(in instanceof MethodInsnNode)) {
                continue;
            }
            MethodInsnNode mi = (MethodInsnNode) in;
            int nargs = Type.getArgumentTypes(mi.desc).length;
            boolean hasReceiver = op != Opcodes.INVOKESTATIC;
            V[] callArgs = new V[nargs + (hasReceiver ? 1 : 0)];
            for (int a = 0; a < callArgs.length; a++) {
                callArgs[a] = f.getStack(f.getStackSize() - callArgs.length + a);
            }
            String[] kind = declarationKind(mi);
            if (kind != null) {
                Decl d = declaration(kind, mi, callArgs, hasReceiver ? 1 : 0, site, flinkMode);
                if (d != null) {
                    d.conditional = !onEveryPath(m, insns, frames, live, i);
                    res.decls.add(d);
                }
                continue;
            }
            // a mutating builder call (TTL on a descriptor, a TTL builder's setting) that is not
            // made on every path through this method: what it configures is not known
            if (hasReceiver && interp.mutating(mi) && !onEveryPath(m, insns, frames, live, i)) {
                Object recv = interp.valueOrNull(callArgs[0]);
                if (recv != null) {
                    uncertain.put(recv, "configured by " + mi.name + " only on some paths through " + site);
                }
            }
            Result callee = interp.followed.get(in);
            if (callee != null) {
                // the callee's result for the arguments of the final frame
                Result again = interp.follow(mi, callArgs);
                if (again != null) {
                    boolean conditional = !onEveryPath(m, insns, frames, live, i);
                    for (Decl d : again.decls) {
                        if (conditional && !d.conditional) {
                            d = d.copy();
                            d.conditional = true;
                        }
                        res.decls.add(d);
                    }
                }
            }
        }
        if (rets.isEmpty()) {
            res.ret = V.unknown(1, site + " returns nothing known");
        } else {
            V first = rets.get(0);
            for (V v : rets) {
                if (!v.equals(first)) {
                    first = V.unknown(first.size, "the value " + site + " returns differs between paths");
                    break;
                }
            }
            res.ret = first;
        }
        return res;
    }

    /** Builds a Decl from a declaration call's arguments. */
    private Decl declaration(String[] kind, MethodInsnNode mi, V[] callArgs, int shift, String site, boolean flinkMode) {
        Decl d = new Decl();
        d.site = site;
        d.flinkCode = flinkMode;
        int idx = Integer.parseInt(kind[1]) + shift;
        V arg = callArgs[idx];
        switch (kind[0]) {
            case "TIMER_REGISTER":
                d.kind = "TIMERS";
                d.registersTimer = mi.name.contains("Processing") ? "processing" : "event";
                return d;
            case "TIMER_SERVICE":
                d.kind = "TIMERS";
                try {
                    d.timerName = String.valueOf(value(arg));
                    d.timerNamespaceSerializer = value(callArgs[idx + 1]);
                } catch (Unres u) {
                    d.unresolved = "timer service of " + site + ": " + u.getMessage();
                }
                return d;
            default:
                d.kind = kind[0].equals("DESC") ? null : kind[0];
                try {
                    d.descriptor = value(arg);
                    d.origin = arg.tag == V.CONST ? arg.origin : null;
                    if (!isA(d.descriptor.getClass(), "org.apache.flink.api.common.state.StateDescriptor")
                            && !isA(d.descriptor.getClass(), "org.apache.flink.api.common.state.v2.StateDescriptor")) {
                        throw new Unres("not a state descriptor: " + d.descriptor.getClass().getName(), null);
                    }
                } catch (Unres u) {
                    d.descriptor = null;
                    d.hintName = u.hintName;
                    d.unresolved = "the descriptor passed to " + mi.name + " in " + site + " is not known before the job"
                            + " runs: " + u.getMessage();
                }
                return d;
        }
    }

    /** The value of a known V; Unres with the reason otherwise. */
    /**
     * The arguments of a reflective call as its parameters take them: the JVM computes booleans,
     * chars, bytes and shorts as ints ({@code ICONST_0} for {@code false}), which
     * {@code Method.invoke} does not convert back.
     */
    static Object[] coerce(String desc, Object[] a) {
        Type[] pt = Type.getArgumentTypes(desc);
        for (int i = 0; i < a.length && i < pt.length; i++) {
            if (!(a[i] instanceof Integer)) {
                continue;
            }
            int n = (Integer) a[i];
            switch (pt[i].getSort()) {
                case Type.BOOLEAN:
                    a[i] = n != 0;
                    break;
                case Type.CHAR:
                    a[i] = (char) n;
                    break;
                case Type.BYTE:
                    a[i] = (byte) n;
                    break;
                case Type.SHORT:
                    a[i] = (short) n;
                    break;
                default:
                    break;
            }
        }
        return a;
    }

    Object value(V v) throws Unres {
        if (v == null) {
            throw new Unres("no value", null);
        }
        Object o;
        if (v.tag == V.CONST) {
            o = v.value;
        } else if (v.tag == V.NEW) {
            if (!v.obj.done || v.obj.resolved == null) {
                throw new Unres(v.obj.why != null ? v.obj.why : "new " + v.obj.type.replace('/', '.') + " not evaluated",
                        v.obj.hintName);
            }
            o = v.obj.resolved;
        } else {
            throw new Unres(v.why == null ? "unknown" : v.why, null);
        }
        if (o != null && tainted.containsKey(o)) {
            throw new Unres(tainted.get(o), null);
        }
        if (o instanceof Chars) {
            return ((Chars) o).s;
        }
        return o == NULL ? null : o;
    }

    /** Instructions reachable from the start, following only the known way of a branch on a known value. */
    private BitSet reachable(MethodNode m, AbstractInsnNode[] insns, Frame<V>[] frames) {
        BitSet live = new BitSet(insns.length);
        Deque<Integer> todo = new ArrayDeque<>();
        todo.add(0);
        while (!todo.isEmpty()) {
            int i = todo.poll();
            if (i < 0 || i >= insns.length || live.get(i) || frames[i] == null) {
                continue;
            }
            live.set(i);
            for (TryCatchBlockNode t : m.tryCatchBlocks) {
                int s = m.instructions.indexOf(t.start);
                int e = m.instructions.indexOf(t.end);
                if (i >= s && i < e) {
                    todo.add(m.instructions.indexOf(t.handler));
                }
            }
            for (int n : successors(m, insns, frames, i)) {
                todo.add(n);
            }
        }
        return live;
    }

    private List<Integer> successors(MethodNode m, AbstractInsnNode[] insns, Frame<V>[] frames, int i) {
        AbstractInsnNode in = insns[i];
        int op = in.getOpcode();
        List<Integer> out = new ArrayList<>();
        Frame<V> f = frames[i];
        if (in instanceof JumpInsnNode) {
            int target = m.instructions.indexOf(((JumpInsnNode) in).label);
            if (op == Opcodes.GOTO) {
                out.add(target);
                return out;
            }
            if (op == Opcodes.JSR) {
                out.add(target);
                out.add(i + 1);
                return out;
            }
            Boolean taken = branch(op, f);
            if (taken == null || taken) {
                out.add(target);
            }
            if (taken == null || !taken) {
                out.add(i + 1);
            }
            return out;
        }
        if (in instanceof TableSwitchInsnNode) {
            TableSwitchInsnNode t = (TableSwitchInsnNode) in;
            Integer key = intConst(f.getStack(f.getStackSize() - 1));
            if (key != null) {
                int k = key;
                LabelNode l = k >= t.min && k <= t.max ? t.labels.get(k - t.min) : t.dflt;
                out.add(m.instructions.indexOf(l));
                return out;
            }
            out.add(m.instructions.indexOf(t.dflt));
            for (LabelNode l : t.labels) {
                out.add(m.instructions.indexOf(l));
            }
            return out;
        }
        if (in instanceof LookupSwitchInsnNode) {
            LookupSwitchInsnNode t = (LookupSwitchInsnNode) in;
            Integer key = intConst(f.getStack(f.getStackSize() - 1));
            if (key != null) {
                int at = t.keys.indexOf(key);
                out.add(m.instructions.indexOf(at >= 0 ? t.labels.get(at) : t.dflt));
                return out;
            }
            out.add(m.instructions.indexOf(t.dflt));
            for (LabelNode l : t.labels) {
                out.add(m.instructions.indexOf(l));
            }
            return out;
        }
        if ((op >= Opcodes.IRETURN && op <= Opcodes.RETURN) || op == Opcodes.ATHROW || op == Opcodes.RET) {
            return out;
        }
        out.add(i + 1);
        return out;
    }

    /** Whether a conditional jump is taken, when its operands are known. */
    private Boolean branch(int op, Frame<V> f) {
        int sp = f.getStackSize();
        switch (op) {
            case Opcodes.IFNULL:
            case Opcodes.IFNONNULL: {
                V v = f.getStack(sp - 1);
                Boolean isNull = null;
                if (v.tag == V.CONST) {
                    isNull = v.value == NULL;
                } else if (v.tag == V.NEW) {
                    isNull = false;
                }
                return isNull == null ? null : (op == Opcodes.IFNULL) == isNull;
            }
            case Opcodes.IFEQ:
            case Opcodes.IFNE:
            case Opcodes.IFLT:
            case Opcodes.IFGE:
            case Opcodes.IFGT:
            case Opcodes.IFLE: {
                Integer a = intConst(f.getStack(sp - 1));
                return a == null ? null : compare(op - Opcodes.IFEQ, a, 0);
            }
            case Opcodes.IF_ICMPEQ:
            case Opcodes.IF_ICMPNE:
            case Opcodes.IF_ICMPLT:
            case Opcodes.IF_ICMPGE:
            case Opcodes.IF_ICMPGT:
            case Opcodes.IF_ICMPLE: {
                Integer a = intConst(f.getStack(sp - 2));
                Integer b = intConst(f.getStack(sp - 1));
                return a == null || b == null ? null : compare(op - Opcodes.IF_ICMPEQ, a, b);
            }
            case Opcodes.IF_ACMPEQ:
            case Opcodes.IF_ACMPNE: {
                V a = f.getStack(sp - 2);
                V b = f.getStack(sp - 1);
                if (a.tag == V.CONST && b.tag == V.CONST) {
                    boolean eq = a.value == b.value;
                    return op == Opcodes.IF_ACMPEQ ? eq : !eq;
                }
                return null;
            }
            default:
                return null;
        }
    }

    private static boolean compare(int rel, int a, int b) {
        switch (rel) {
            case 0:
                return a == b;
            case 1:
                return a != b;
            case 2:
                return a < b;
            case 3:
                return a >= b;
            case 4:
                return a > b;
            default:
                return a <= b;
        }
    }

    private static Integer intConst(V v) {
        if (v != null && v.tag == V.CONST) {
            if (v.value instanceof Integer) {
                return (Integer) v.value;
            }
            if (v.value instanceof Boolean) {
                return ((Boolean) v.value) ? 1 : 0;
            }
            if (v.value instanceof Character) {
                return (int) (Character) v.value;
            }
            if (v.value instanceof Short || v.value instanceof Byte) {
                return ((Number) v.value).intValue();
            }
        }
        return null;
    }

    /** Whether every path from the start to a return of the method passes instruction {@code at}. */
    private boolean onEveryPath(MethodNode m, AbstractInsnNode[] insns, Frame<V>[] frames, BitSet live, int at) {
        BitSet seen = new BitSet(insns.length);
        Deque<Integer> todo = new ArrayDeque<>();
        todo.add(0);
        while (!todo.isEmpty()) {
            int i = todo.poll();
            if (i == at || i < 0 || i >= insns.length || seen.get(i) || !live.get(i)) {
                continue;
            }
            seen.set(i);
            int op = insns[i].getOpcode();
            if (op >= Opcodes.IRETURN && op <= Opcodes.RETURN) {
                return false; // a return reached without passing it
            }
            todo.addAll(successors(m, insns, frames, i));
        }
        return true;
    }

    // ------------------------------------------------------------------ the interpreter

    /** Flink's pure factories and builders that may run on known arguments (never a job class's code). */
    /** Avro's schema parser: {@code new Schema.Parser().parse(json)} builds a schema from its text, nothing else. */
    static final String AVRO_PARSER = "org.apache.avro.Schema$Parser";

    /**
     * A Flink module's class the job bundles (flink-avro's type informations: the harness's own class
     * path has no flink-avro, so they load from the job's jars), not the job's own code.
     */
    static boolean bundledFlink(Class<?> c) {
        return c.getName().startsWith("org.apache.flink.formats.avro.typeutils.");
    }

    boolean pureFlink(Class<?> owner, String name, boolean isStatic, Object receiver) {
        if (owner != null && owner.getName().equals(AVRO_PARSER)) {
            return !isStatic && name.equals("parse") && receiver != null;
        }
        if (owner == null || isJob(owner) || (receiver != null && isJob(receiver.getClass()))) {
            return false;
        }
        String o = owner.getName();
        if (o.equals("java.lang.String")) {
            return Arrays.asList("valueOf", "concat", "toLowerCase", "toUpperCase", "trim", "format", "join", "toString")
                    .contains(name);
        }
        if (o.startsWith("java.lang.") && isStatic && name.equals("valueOf")
                && Arrays.asList("Long", "Integer", "Short", "Byte", "Boolean", "Character", "Double", "Float")
                        .contains(o.substring("java.lang.".length()))) {
            return true;
        }
        if (o.equals("java.lang.Class")) {
            return Arrays.asList("getName", "getSimpleName", "getCanonicalName", "getTypeName").contains(name);
        }
        if (o.equals("java.lang.Enum") || (receiver instanceof Enum && !isStatic)) {
            return name.equals("name") || name.equals("toString");
        }
        if (o.equals("java.time.Duration")) {
            return name.startsWith("of") || name.startsWith("plus") || name.equals("multipliedBy") || name.equals("toMillis");
        }
        if (!o.startsWith("org.apache.flink.")) {
            return false;
        }
        if (isA(owner, "org.apache.flink.api.common.typeinfo.TypeInformation")) {
            return isStatic ? name.equals("of") : name.equals("createSerializer") || name.equals("getTypeClass");
        }
        switch (o) {
            case "org.apache.flink.api.common.typeinfo.Types":
                return isStatic;
            case "org.apache.flink.api.java.typeutils.TypeExtractor":
                return isStatic && (name.equals("getForClass") || name.equals("createTypeInfo"));
            case "org.apache.flink.api.common.state.StateTtlConfig":
                return isStatic && name.equals("newBuilder");
            case "org.apache.flink.api.common.state.StateTtlConfig$Builder":
                return !isStatic;
            case "org.apache.flink.api.common.time.Time":
                return true;
            case "org.apache.flink.api.common.ExecutionConfig":
                return name.equals("getSerializerConfig");
            default:
                break;
        }
        if (isA(owner, "org.apache.flink.api.common.state.StateDescriptor")
                || isA(owner, "org.apache.flink.api.common.state.v2.StateDescriptor")) {
            return !isStatic && (name.equals("enableTimeToLive") || name.equals("setQueryable") || name.equals("getName")
                    || name.equals("getStateId"));
        }
        return false;
    }

    /** Constructors that may run: Flink's state descriptors, type informations and serializers. */
    boolean pureConstructor(Class<?> c) {
        if (c != null && c.getName().equals(AVRO_PARSER)) {
            return true;
        }
        if (c == null || (isJob(c) && !bundledFlink(c)) || !c.getName().startsWith("org.apache.flink.")
                || Modifier.isAbstract(c.getModifiers())) {
            return false;
        }
        return isA(c, "org.apache.flink.api.common.state.StateDescriptor")
                || isA(c, "org.apache.flink.api.common.state.v2.StateDescriptor")
                || isA(c, "org.apache.flink.api.common.typeinfo.TypeInformation")
                || isA(c, "org.apache.flink.api.common.typeutils.TypeSerializer");
    }

    final class Interp extends Interpreter<V> {
        final Class<?> owner;
        final MethodNode method;
        final V self;
        final V[] args;
        final boolean flinkMode;
        final int depth;
        final int[] paramOfLocal;
        final boolean statementBuilders;
        final Map<AbstractInsnNode, Result> followed = new HashMap<>();
        private final Map<String, V> naryMemo = new HashMap<>();
        private final Map<AbstractInsnNode, NewObj> news = new HashMap<>();
        private final Map<AbstractInsnNode, Object> arrays = new HashMap<>();

        Interp(Class<?> owner, MethodNode method, V self, V[] args, boolean flinkMode, int depth) {
            super(Opcodes.ASM9);
            this.owner = owner;
            this.method = method;
            this.self = self;
            this.args = args;
            this.flinkMode = flinkMode;
            this.depth = depth;
            Type[] at = Type.getArgumentTypes(method.desc);
            int locals = (self != null ? 1 : 0);
            for (Type t : at) {
                locals += t.getSize();
            }
            paramOfLocal = new int[locals];
            Arrays.fill(paramOfLocal, -2);
            int l = 0;
            if ((method.access & Opcodes.ACC_STATIC) == 0) {
                paramOfLocal[0] = -1;
                l = 1;
            }
            for (int i = 0; i < at.length && l < locals; i++) {
                paramOfLocal[l] = i;
                l += at[i].getSize();
            }
            // a StringBuilder appended to as a statement (its result dropped): its content is not
            // followed, so no string built with one in this method counts as known
            boolean stmt = false;
            for (AbstractInsnNode in : method.instructions.toArray()) {
                if (in instanceof MethodInsnNode && ((MethodInsnNode) in).name.equals("append")
                        && ((MethodInsnNode) in).owner.startsWith("java/lang/StringBu")
                        && in.getNext() != null && in.getNext().getOpcode() == Opcodes.POP) {
                    stmt = true;
                }
            }
            statementBuilders = stmt;
        }

        String where() {
            return owner.getName() + "#" + method.name;
        }

        Object valueOrNull(V v) {
            try {
                return value(v);
            } catch (Unres u) {
                return null;
            }
        }

        boolean mutating(MethodInsnNode mi) {
            Class<?> c = cls(mi.owner);
            if (c == null) {
                return false;
            }
            if (c.getName().equals("org.apache.flink.api.common.state.StateTtlConfig$Builder")) {
                return true;
            }
            return (isA(c, "org.apache.flink.api.common.state.StateDescriptor")
                            || isA(c, "org.apache.flink.api.common.state.v2.StateDescriptor"))
                    && (mi.name.equals("enableTimeToLive") || mi.name.equals("setQueryable"));
        }

        @Override
        public V newValue(Type type) {
            if (type == null) {
                return new V(V.UNINIT, 1, null, null, null, null);
            }
            if (type == Type.VOID_TYPE) {
                return null;
            }
            return V.unknown(type.getSize(), "a value not known before the job runs");
        }

        @Override
        public V newParameterValue(boolean isInstanceMethod, int local, Type type) {
            if (local < paramOfLocal.length) {
                int p = paramOfLocal[local];
                if (p == -1 && self != null) {
                    return self;
                }
                if (p >= 0 && p < args.length && args[p] != null) {
                    return args[p];
                }
            }
            return newValue(type);
        }

        @Override
        public V newEmptyValue(int local) {
            return new V(V.UNINIT, 1, null, null, null, null);
        }

        @Override
        public V newExceptionValue(TryCatchBlockNode tcb, Frame<V> handlerFrame, Type exceptionType) {
            return V.unknown(1, "an exception");
        }

        @Override
        public V newOperation(AbstractInsnNode insn) {
            switch (insn.getOpcode()) {
                case Opcodes.ACONST_NULL:
                    return V.of(null);
                case Opcodes.ICONST_M1:
                case Opcodes.ICONST_0:
                case Opcodes.ICONST_1:
                case Opcodes.ICONST_2:
                case Opcodes.ICONST_3:
                case Opcodes.ICONST_4:
                case Opcodes.ICONST_5:
                    return V.of(insn.getOpcode() - Opcodes.ICONST_0);
                case Opcodes.LCONST_0:
                case Opcodes.LCONST_1:
                    return V.of((long) (insn.getOpcode() - Opcodes.LCONST_0));
                case Opcodes.FCONST_0:
                case Opcodes.FCONST_1:
                case Opcodes.FCONST_2:
                    return V.of((float) (insn.getOpcode() - Opcodes.FCONST_0));
                case Opcodes.DCONST_0:
                case Opcodes.DCONST_1:
                    return V.of((double) (insn.getOpcode() - Opcodes.DCONST_0));
                case Opcodes.BIPUSH:
                case Opcodes.SIPUSH:
                    return V.of(((IntInsnNode) insn).operand);
                case Opcodes.LDC:
                    return ldc(((LdcInsnNode) insn).cst);
                case Opcodes.GETSTATIC:
                    return getStatic((FieldInsnNode) insn);
                case Opcodes.NEW: {
                    NewObj o = news.get(insn);
                    if (o == null) {
                        o = new NewObj(((TypeInsnNode) insn).desc);
                        news.put(insn, o);
                    }
                    return new V(V.NEW, 1, null, null, o, null);
                }
                case Opcodes.JSR:
                    return V.unknown(1, "a subroutine");
                default:
                    return V.unknown(1, "not known");
            }
        }

        private V ldc(Object cst) {
            if (cst instanceof Type) {
                Type t = (Type) cst;
                if (t.getSort() == Type.OBJECT || t.getSort() == Type.ARRAY) {
                    Class<?> c = cls(t.getInternalName());
                    return c == null ? V.unknown(1, "class " + t.getClassName() + " not on the class path") : V.of(c);
                }
                return V.unknown(1, "a method type");
            }
            if (cst instanceof Integer || cst instanceof Float || cst instanceof Long || cst instanceof Double
                    || cst instanceof String) {
                return V.of(cst);
            }
            return V.unknown(1, "a dynamic constant");
        }

        private V getStatic(FieldInsnNode fi) {
            int size = Type.getType(fi.desc).getSize();
            Class<?> c = cls(fi.owner);
            String what = "static field " + fi.owner.replace('/', '.') + "." + fi.name;
            if (c == null) {
                return V.unknown(size, what + ": its class is not on the class path");
            }
            boolean job = isJob(c);
            String cn = c.getName();
            if (!job && !cn.startsWith("org.apache.flink.") && !(cn.startsWith("java.lang.") && fi.name.equals("TYPE"))
                    && !cn.startsWith("java.util.concurrent.TimeUnit")) {
                return V.unknown(size, what + " (not Flink's) is not read");
            }
            if (job && !initialised(c)) {
                V memo = memoised(c, fi);
                if (memo != null) {
                    return memo;
                }
                return V.unknown(size, what + ": main() did not initialise " + cn
                        + ", and reading it would run its static initialiser");
            }
            try {
                Field f = field(c, fi.name);
                if (f == null) {
                    return V.unknown(size, what + " not found");
                }
                f.setAccessible(true);
                return V.sized(f.get(null), size, "field " + cn + "." + fi.name);
            } catch (Throwable e) {
                return V.unknown(size, what + " could not be read: " + e);
            }
        }

        /**
         * A static field this very method memoises: {@code if (F == null) { F = <expr>; } return F;}
         * where {@code <expr>} is straight-line code and this is the one write of F in its class (not
         * in the static initialiser). F is then null or the value of that expression, whenever the
         * method runs and whoever ran it first, so the method returns that value: it is evaluated
         * (from constants, with the calls the analysis may make) instead of reading F, whose class
         * main() did not initialise. Null when the method is not of that shape.
         */
        private V memoised(Class<?> c, FieldInsnNode fi) {
            if (!method.name.equals("<clinit>") && owner == c && Type.getReturnType(method.desc).getSort() >= Type.ARRAY) {
                InsnList block = lazyInit(c, fi);
                if (block != null) {
                    MethodNode expr = new MethodNode(Opcodes.ACC_STATIC | Opcodes.ACC_PRIVATE,
                            "memoised " + fi.name, "()" + fi.desc, null, null);
                    expr.instructions = block;
                    expr.instructions.add(new InsnNode(Opcodes.ARETURN));
                    expr.maxStack = method.maxStack;
                    expr.maxLocals = method.maxLocals;
                    Result r = analyse(c, expr, null, new V[0], flinkMode, depth + 1);
                    if (r != null && r.ret != null && r.ret.tag != V.UNKNOWN) {
                        return r.ret;
                    }
                }
            }
            return null;
        }

        /** The instructions that compute the value the one write of {@code fi} stores, in this method. */
        private InsnList lazyInit(Class<?> c, FieldInsnNode fi) {
            FieldInsnNode write = null;
            for (MethodNode m : node(c).methods) {
                for (AbstractInsnNode in : m.instructions.toArray()) {
                    if (in.getOpcode() == Opcodes.PUTSTATIC && ((FieldInsnNode) in).owner.equals(fi.owner)
                            && ((FieldInsnNode) in).name.equals(fi.name)) {
                        if (write != null || m != method) {
                            return null; // written more than once, or elsewhere
                        }
                        write = (FieldInsnNode) in;
                    }
                }
            }
            if (write == null) {
                return null;
            }
            AbstractInsnNode start = write;
            while (start != null && !(start instanceof JumpInsnNode)) {
                start = start.getPrevious();
            }
            AbstractInsnNode read = start == null ? null : start.getPrevious();
            if (start == null || start.getOpcode() != Opcodes.IFNONNULL || read == null
                    || read.getOpcode() != Opcodes.GETSTATIC || !((FieldInsnNode) read).name.equals(fi.name)) {
                return null;
            }
            Map<LabelNode, LabelNode> labels = new HashMap<>();
            for (AbstractInsnNode in : method.instructions.toArray()) {
                if (in instanceof LabelNode) {
                    labels.put((LabelNode) in, new LabelNode());
                }
            }
            InsnList out = new InsnList();
            for (AbstractInsnNode in = start.getNext(); in != write; in = in.getNext()) {
                int op = in.getOpcode();
                if (in instanceof JumpInsnNode || in instanceof TableSwitchInsnNode || in instanceof LookupSwitchInsnNode
                        || op == Opcodes.ATHROW || (op >= Opcodes.IRETURN && op <= Opcodes.RETURN)
                        || op == Opcodes.PUTSTATIC || op == Opcodes.PUTFIELD) {
                    return null; // not straight-line code computing one value
                }
                if (op >= 0) {
                    out.add(in.clone(labels));
                }
            }
            return out;
        }

        @Override
        public void returnOperation(AbstractInsnNode insn, V value, V expected) {
            // return values are read from the final frames
        }

        @Override
        public V merge(V v, V w) {
            if (v.equals(w) || v.tag == V.UNINIT) {
                return v;
            }
            if (w.tag == V.UNINIT || v.size != w.size) {
                return new V(V.UNINIT, 1, null, null, null, null);
            }
            if (v.tag == V.UNKNOWN) {
                return v;
            }
            if (w.tag == V.UNKNOWN) {
                return w;
            }
            return V.unknown(v.size, "a value that differs between paths through " + where() + " (a branch or a loop)");
        }

        @Override
        public V copyOperation(AbstractInsnNode insn, V value) {
            return value;
        }

        @Override
        public V unaryOperation(AbstractInsnNode insn, V value) {
            int op = insn.getOpcode();
            switch (op) {
                case Opcodes.IFEQ:
                case Opcodes.IFNE:
                case Opcodes.IFLT:
                case Opcodes.IFGE:
                case Opcodes.IFGT:
                case Opcodes.IFLE:
                case Opcodes.TABLESWITCH:
                case Opcodes.LOOKUPSWITCH:
                case Opcodes.IRETURN:
                case Opcodes.LRETURN:
                case Opcodes.FRETURN:
                case Opcodes.DRETURN:
                case Opcodes.ARETURN:
                case Opcodes.PUTSTATIC:
                case Opcodes.ATHROW:
                case Opcodes.MONITORENTER:
                case Opcodes.MONITOREXIT:
                case Opcodes.IFNULL:
                case Opcodes.IFNONNULL:
                    return null;
                case Opcodes.CHECKCAST:
                    return value;
                case Opcodes.GETFIELD:
                    return getField((FieldInsnNode) insn, value);
                case Opcodes.INSTANCEOF: {
                    Object o = valueOrNull(value);
                    Class<?> c = cls(((TypeInsnNode) insn).desc);
                    if (o != null && c != null) {
                        return V.of(c.isInstance(o) ? 1 : 0);
                    }
                    if (value.tag == V.CONST && value.value == NULL) {
                        return V.of(0);
                    }
                    return V.unknown(1, "instanceof of an unknown value");
                }
                case Opcodes.ARRAYLENGTH: {
                    Object o = valueOrNull(value);
                    return o != null && o.getClass().isArray() ? V.of(Array.getLength(o)) : V.unknown(1, "array length");
                }
                case Opcodes.NEWARRAY:
                case Opcodes.ANEWARRAY:
                    return newArray(insn, value);
                case Opcodes.I2L:
                case Opcodes.I2F:
                case Opcodes.I2D:
                case Opcodes.L2I:
                case Opcodes.L2F:
                case Opcodes.L2D:
                case Opcodes.F2I:
                case Opcodes.F2L:
                case Opcodes.F2D:
                case Opcodes.D2I:
                case Opcodes.D2L:
                case Opcodes.D2F:
                case Opcodes.I2B:
                case Opcodes.I2C:
                case Opcodes.I2S:
                    return convert(op, value);
                default: {
                    int size = op == Opcodes.LNEG || op == Opcodes.DNEG ? 2 : 1;
                    return V.unknown(size, "computed at run time");
                }
            }
        }

        private V convert(int op, V value) {
            int size = op == Opcodes.I2L || op == Opcodes.I2D || op == Opcodes.F2L || op == Opcodes.F2D
                    || op == Opcodes.L2D || op == Opcodes.D2L ? 2 : 1;
            if (value.tag != V.CONST || !(value.value instanceof Number)) {
                return V.unknown(size, "computed at run time");
            }
            Number n = (Number) value.value;
            switch (op) {
                case Opcodes.I2L:
                case Opcodes.F2L:
                case Opcodes.D2L:
                    return V.of(n.longValue());
                case Opcodes.I2F:
                case Opcodes.L2F:
                case Opcodes.D2F:
                    return V.of(n.floatValue());
                case Opcodes.I2D:
                case Opcodes.L2D:
                case Opcodes.F2D:
                    return V.of(n.doubleValue());
                case Opcodes.I2B:
                    return V.of((int) n.byteValue());
                case Opcodes.I2C:
                    return V.of((int) (char) n.intValue());
                case Opcodes.I2S:
                    return V.of((int) n.shortValue());
                default:
                    return V.of(n.intValue());
            }
        }

        private V getField(FieldInsnNode fi, V objV) {
            int size = Type.getType(fi.desc).getSize();
            Object o;
            try {
                o = value(objV);
            } catch (Unres u) {
                return V.unknown(size, "field " + fi.name + " of an object not known before the job runs");
            }
            if (o == null) {
                return V.unknown(size, "field " + fi.name + " of null");
            }
            Class<?> c = cls(fi.owner);
            if (c == null || !c.isInstance(o)) {
                c = o.getClass();
            }
            try {
                Field f = field(c, fi.name);
                if (f == null) {
                    return V.unknown(size, "field " + fi.name + " not found in " + c.getName());
                }
                f.setAccessible(true);
                return V.sized(f.get(o), size, "field " + f.getDeclaringClass().getName() + "." + fi.name);
            } catch (Throwable e) {
                return V.unknown(size, "field " + fi.name + " of " + c.getName() + " could not be read: " + e);
            }
        }

        private V newArray(AbstractInsnNode insn, V size) {
            Integer n = intConst(size);
            if (n == null || n < 0 || n > 10_000) {
                return V.unknown(1, "an array of a size not known before the job runs");
            }
            Object arr = arrays.get(insn);
            if (arr == null || Array.getLength(arr) != n) {
                Class<?> comp;
                if (insn.getOpcode() == Opcodes.ANEWARRAY) {
                    comp = cls(((TypeInsnNode) insn).desc);
                    if (comp == null) {
                        return V.unknown(1, "an array of a class not on the class path");
                    }
                } else {
                    comp = primitiveArrayType(((IntInsnNode) insn).operand);
                }
                arr = Array.newInstance(comp, n);
                arrays.put(insn, arr);
            }
            return V.of(arr);
        }

        private Class<?> primitiveArrayType(int t) {
            switch (t) {
                case Opcodes.T_BOOLEAN:
                    return boolean.class;
                case Opcodes.T_CHAR:
                    return char.class;
                case Opcodes.T_FLOAT:
                    return float.class;
                case Opcodes.T_DOUBLE:
                    return double.class;
                case Opcodes.T_BYTE:
                    return byte.class;
                case Opcodes.T_SHORT:
                    return short.class;
                case Opcodes.T_INT:
                    return int.class;
                default:
                    return long.class;
            }
        }

        @Override
        public V binaryOperation(AbstractInsnNode insn, V v1, V v2) {
            int op = insn.getOpcode();
            switch (op) {
                case Opcodes.IALOAD:
                case Opcodes.BALOAD:
                case Opcodes.CALOAD:
                case Opcodes.SALOAD:
                case Opcodes.FALOAD:
                case Opcodes.AALOAD:
                case Opcodes.LALOAD:
                case Opcodes.DALOAD: {
                    int size = op == Opcodes.LALOAD || op == Opcodes.DALOAD ? 2 : 1;
                    Object arr = valueOrNull(v1);
                    Integer i = intConst(v2);
                    if (arr != null && arr.getClass().isArray() && i != null && i >= 0 && i < Array.getLength(arr)) {
                        Object e = Array.get(arr, i);
                        if (op == Opcodes.BALOAD || op == Opcodes.CALOAD || op == Opcodes.SALOAD) {
                            e = e instanceof Character ? (int) (Character) e : e instanceof Boolean
                                    ? (((Boolean) e) ? 1 : 0) : ((Number) e).intValue();
                        }
                        return V.sized(e, size, null);
                    }
                    return V.unknown(size, "an array element not known before the job runs");
                }
                case Opcodes.IF_ICMPEQ:
                case Opcodes.IF_ICMPNE:
                case Opcodes.IF_ICMPLT:
                case Opcodes.IF_ICMPGE:
                case Opcodes.IF_ICMPGT:
                case Opcodes.IF_ICMPLE:
                case Opcodes.IF_ACMPEQ:
                case Opcodes.IF_ACMPNE:
                case Opcodes.PUTFIELD:
                    return null;
                case Opcodes.IADD:
                case Opcodes.ISUB:
                case Opcodes.IMUL: {
                    Integer a = intConst(v1);
                    Integer b = intConst(v2);
                    if (a != null && b != null) {
                        return V.of(op == Opcodes.IADD ? a + b : op == Opcodes.ISUB ? a - b : a * b);
                    }
                    return V.unknown(1, "computed at run time");
                }
                case Opcodes.LADD:
                case Opcodes.LSUB:
                case Opcodes.LMUL:
                case Opcodes.LDIV:
                case Opcodes.LREM:
                case Opcodes.LSHL:
                case Opcodes.LSHR:
                case Opcodes.LUSHR:
                case Opcodes.LAND:
                case Opcodes.LOR:
                case Opcodes.LXOR:
                case Opcodes.DADD:
                case Opcodes.DSUB:
                case Opcodes.DMUL:
                case Opcodes.DDIV:
                case Opcodes.DREM: {
                    if (v1.tag == V.CONST && v2.tag == V.CONST && v1.value instanceof Long && v2.value instanceof Long) {
                        long a = (Long) v1.value;
                        long b = (Long) v2.value;
                        if (op == Opcodes.LADD) {
                            return V.of(a + b);
                        }
                        if (op == Opcodes.LSUB) {
                            return V.of(a - b);
                        }
                        if (op == Opcodes.LMUL) {
                            return V.of(a * b);
                        }
                    }
                    return V.unknown(2, "computed at run time");
                }
                case Opcodes.LCMP: {
                    if (v1.tag == V.CONST && v2.tag == V.CONST && v1.value instanceof Long && v2.value instanceof Long) {
                        return V.of(Long.compare((Long) v1.value, (Long) v2.value));
                    }
                    return V.unknown(1, "computed at run time");
                }
                default:
                    return V.unknown(1, "computed at run time");
            }
        }

        @Override
        public V ternaryOperation(AbstractInsnNode insn, V v1, V v2, V v3) {
            Object arr = valueOrNull(v1);
            Integer i = intConst(v2);
            if (arr == null || !arr.getClass().isArray()) {
                return null;
            }
            if (i == null || i < 0 || i >= Array.getLength(arr)) {
                tainted.put(arr, "an array filled at an index not known before the job runs (in " + where() + ")");
                return null;
            }
            try {
                Object e = value(v3);
                Class<?> comp = arr.getClass().getComponentType();
                if (comp == boolean.class && e instanceof Integer) {
                    e = ((Integer) e) != 0;
                } else if (comp == char.class && e instanceof Integer) {
                    e = (char) (int) (Integer) e;
                } else if (comp == byte.class && e instanceof Integer) {
                    e = (byte) (int) (Integer) e;
                } else if (comp == short.class && e instanceof Integer) {
                    e = (short) (int) (Integer) e;
                }
                Array.set(arr, i, e);
            } catch (Unres u) {
                tainted.put(arr, "an array element not known before the job runs: " + u.getMessage());
            } catch (RuntimeException e) {
                tainted.put(arr, "an array element of another type");
            }
            return null;
        }

        @Override
        public V naryOperation(AbstractInsnNode insn, List<? extends V> values) {
            StringBuilder k = new StringBuilder();
            k.append(method.instructions.indexOf(insn));
            for (V v : values) {
                k.append(',').append(key(v));
                if (v.tag == V.NEW) {
                    k.append(v.obj.done ? "+" : "-");
                }
            }
            String mk = k.toString();
            V known = naryMemo.get(mk);
            if (known != null || naryMemo.containsKey(mk)) {
                return known;
            }
            V r = nary(insn, values);
            naryMemo.put(mk, r);
            return r;
        }

        private V nary(AbstractInsnNode insn, List<? extends V> values) {
            if (insn instanceof InvokeDynamicInsnNode) {
                return indy((InvokeDynamicInsnNode) insn, values);
            }
            if (!(insn instanceof MethodInsnNode)) {
                return V.unknown(1, "a multi-dimensional array");
            }
            MethodInsnNode mi = (MethodInsnNode) insn;
            Type ret = Type.getReturnType(mi.desc);
            int size = ret == Type.VOID_TYPE ? 0 : ret.getSize();
            boolean isStatic = mi.getOpcode() == Opcodes.INVOKESTATIC;
            V recv = isStatic ? null : values.get(0);
            List<? extends V> args = isStatic ? values : values.subList(1, values.size());
            String call = mi.owner.replace('/', '.') + "." + mi.name;
            if (mi.name.equals("<init>")) {
                construct(mi, recv, args);
                return null;
            }
            if (mi.name.equals("next") && args.isEmpty() && isA(cls(mi.owner), "java.util.Iterator")) {
                return V.unknown(size, "an element of a collection, taken in a loop at run time (in " + where() + ")");
            }
            // StringBuilder chains (javac before Java 9 builds string concatenation with them)
            if (mi.owner.equals("java/lang/StringBuilder") || mi.owner.equals("java/lang/StringBuffer")) {
                return builder(mi, recv, args, size);
            }
            Object r;
            Object receiver = null;
            try {
                receiver = recv == null ? null : value(recv);
                if (recv != null && receiver == RUNTIME_CONTEXT) {
                    return runtimeContextCall(mi, args, size);
                }
                if (recv != null && receiver instanceof HintInfo && mi.name.equals("getTypeInfo")) {
                    return V.sized(((HintInfo) receiver).typeInfo, 1, null);
                }
                if (mi.name.equals("getRuntimeContext") && args.isEmpty() && recv != null) {
                    return V.sized(RUNTIME_CONTEXT, 1, null);
                }
                Class<?> owner = cls(mi.owner);
                if (isStatic && owner != null && owner.getName().equals("org.apache.flink.api.common.typeinfo.TypeInformation")
                        && args.size() == 1) {
                    Object a = value(args.get(0));
                    if (a instanceof HintInfo) {
                        return V.sized(((HintInfo) a).typeInfo, 1, null);
                    }
                }
                if (pureFlink(owner, mi.name, isStatic, receiver)) {
                    Object[] a = new Object[args.size()];
                    for (int i = 0; i < a.length; i++) {
                        a[i] = value(args.get(i));
                        if (a[i] instanceof HintInfo) {
                            throw new Unres("a TypeHint passed to " + call, null);
                        }
                    }
                    Method m = reflectMethod(owner, mi.name, mi.desc);
                    if (m == null) {
                        return size == 0 ? null : V.unknown(size, call + " not found");
                    }
                    m.setAccessible(true);
                    r = m.invoke(isStatic ? null : receiver, coerce(mi.desc, a));
                    return size == 0 ? null : V.sized(r, size, null);
                }
            } catch (Unres u) {
                taintIfMutated(mi, receiver, call + ": " + u.getMessage());
                Result f = maybeFollow(mi, values);
                if (f != null) {
                    return size == 0 ? null : f.ret;
                }
                return size == 0 ? null : V.unknown(size, u.getMessage());
            } catch (java.lang.reflect.InvocationTargetException e) {
                taintIfMutated(mi, receiver, call + " failed: " + e.getCause());
                return size == 0 ? null : V.unknown(size, call + " failed: " + e.getCause());
            } catch (Throwable e) {
                taintIfMutated(mi, receiver, call + " failed: " + e);
                return size == 0 ? null : V.unknown(size, call + " failed: " + e);
            }
            Result f = maybeFollow(mi, values);
            if (f != null) {
                return size == 0 ? null : f.ret;
            }
            return size == 0 ? null : V.unknown(size, "the result of " + call + " (not evaluated before the job runs)");
        }

        /**
         * A call that configures its receiver (TTL on a descriptor, a TTL builder's setting) whose
         * arguments are not known or which failed: the receiver is not what the job has, so every
         * later use of it is unknown, with why (never the object without that setting).
         */
        private void taintIfMutated(MethodInsnNode mi, Object receiver, String why) {
            if (receiver != null && mutating(mi)) {
                tainted.put(receiver, "configured by " + mi.name + " with a value not known before the job runs ("
                        + why + ", in " + where() + ")");
            }
        }

        private V runtimeContextCall(MethodInsnNode mi, List<? extends V> args, int size) throws Unres {
            if (mi.name.equals("getExecutionConfig") && args.isEmpty() && executionConfig != null) {
                return V.sized(executionConfig, 1, null);
            }
            if (mi.name.equals("createSerializer") && args.size() == 1) {
                Object ti = value(args.get(0));
                Object sc = Refl.has(executionConfig, "getSerializerConfig", 0)
                        ? Refl.call(executionConfig, "getSerializerConfig", null) : executionConfig;
                try {
                    return V.sized(Refl.call(ti, "createSerializer", null, sc), 1, null);
                } catch (RuntimeException e) {
                    return V.unknown(size, "createSerializer failed: " + e);
                }
            }
            return size == 0 ? null : V.unknown(size, "RuntimeContext." + mi.name + " is known only at run time");
        }

        private V builder(MethodInsnNode mi, V recv, List<? extends V> args, int size) {
            if (statementBuilders) {
                return size == 0 ? null : V.unknown(size, "a string built with StringBuilder statements in " + where());
            }
            try {
                Object cur = value(recv);
                if (!(cur instanceof String)) {
                    throw new Unres("a StringBuilder not known", null);
                }
                if (mi.name.equals("append") && args.size() == 1) {
                    Type t = Type.getArgumentTypes(mi.desc)[0];
                    return V.sized(new Chars(cur + text(value(args.get(0)), t)), 1, null);
                }
                if (mi.name.equals("toString")) {
                    return V.sized(cur, 1, null);
                }
                throw new Unres("StringBuilder." + mi.name, null);
            } catch (Unres u) {
                return size == 0 ? null : V.unknown(size, "a name built at run time in " + where() + " (" + u.getMessage() + ")");
            }
        }

        private String text(Object v, Type t) {
            if (t.getSort() == Type.CHAR && v instanceof Integer) {
                return String.valueOf((char) (int) (Integer) v);
            }
            if (t.getSort() == Type.BOOLEAN && v instanceof Integer) {
                return String.valueOf(((Integer) v) != 0);
            }
            return String.valueOf(v);
        }

        private V indy(InvokeDynamicInsnNode in, List<? extends V> values) {
            Type ret = Type.getReturnType(in.desc);
            Handle bsm = in.bsm;
            if (bsm.getOwner().equals("java/lang/invoke/StringConcatFactory") && in.bsmArgs.length >= 1) {
                Type[] at = Type.getArgumentTypes(in.desc);
                StringBuilder sb = new StringBuilder();
                String recipe = bsm.getName().equals("makeConcatWithConstants") ? (String) in.bsmArgs[0] : null;
                int arg = 0;
                int cst = 1;
                try {
                    if (recipe == null) {
                        for (int i = 0; i < values.size(); i++) {
                            sb.append(text(value(values.get(i)), at[i]));
                        }
                    } else {
                        for (char ch : recipe.toCharArray()) {
                            if (ch == '\u0001') {
                                sb.append(text(value(values.get(arg)), at[arg]));
                                arg++;
                            } else if (ch == '\u0002') {
                                sb.append(in.bsmArgs[cst++]);
                            } else {
                                sb.append(ch);
                            }
                        }
                    }
                    return V.of(sb.toString());
                } catch (Unres u) {
                    return V.unknown(1, "a name built at run time in " + where() + " (" + u.getMessage() + ")");
                }
            }
            return ret == Type.VOID_TYPE ? null : V.unknown(ret.getSize(), "a lambda or dynamic call in " + where());
        }

        /** A constructor call: evaluated for Flink's own type / state classes, a TypeHint resolved. */
        private void construct(MethodInsnNode mi, V recv, List<? extends V> args) {
            if (recv == null || recv.tag != V.NEW) {
                return; // super(...) / this(...) in a constructor: nothing to evaluate
            }
            NewObj o = recv.obj;
            if (o.done) {
                return;
            }
            Class<?> c = cls(mi.owner);
            if (!args.isEmpty() && args.get(0).tag == V.CONST && args.get(0).value instanceof String) {
                o.hintName = (String) args.get(0).value;
            }
            if (mi.owner.equals("java/lang/StringBuilder") || mi.owner.equals("java/lang/StringBuffer")) {
                try {
                    o.resolved = args.isEmpty() ? "" : args.get(0).tag == V.CONST && args.get(0).value instanceof Integer
                            ? "" : String.valueOf(value(args.get(0)));
                } catch (Unres u) {
                    o.why = "a name built at run time in " + where() + " (" + u.getMessage() + ")";
                }
                o.done = true;
                return;
            }
            if (c == null) {
                o.why = "class " + mi.owner.replace('/', '.') + " not on the class path";
                o.done = true;
                return;
            }
            if (isJob(c) && isA(c.getSuperclass(), "org.apache.flink.api.common.typeinfo.TypeHint")) {
                o.resolved = typeHint(c);
                if (o.resolved == null) {
                    o.why = "the TypeHint " + c.getName() + " could not be resolved";
                }
                o.done = true;
                return;
            }
            if (pureConstructor(c)) {
                try {
                    Type[] pt = Type.getArgumentTypes(mi.desc);
                    Object[] a = new Object[args.size()];
                    for (int i = 0; i < a.length; i++) {
                        try {
                            a[i] = value(args.get(i));
                        } catch (Unres u) {
                            a[i] = standIn(pt[i], u);
                        }
                        if (a[i] instanceof HintInfo) {
                            throw new Unres("a TypeHint passed to new " + c.getName(), null);
                        }
                    }
                    Constructor<?> k = reflectConstructor(c, mi.desc);
                    if (k == null) {
                        o.why = "constructor of " + c.getName() + " not found";
                    } else {
                        k.setAccessible(true);
                        o.resolved = k.newInstance(coerce(mi.desc, a));
                    }
                } catch (Unres u) {
                    o.why = u.getMessage();
                } catch (java.lang.reflect.InvocationTargetException e) {
                    o.why = "new " + c.getName() + " failed: " + e.getCause();
                } catch (Throwable e) {
                    o.why = "new " + c.getName() + " failed: " + e;
                }
                o.done = true;
                return;
            }
            o.why = "an object of " + c.getName() + " built at run time in " + where();
            o.done = true;
            // a Flink object built by a Flink operator (CEP's SharedBuffer): its constructor declares state
            if (flinkMode && !isJob(c) && depth < FLINK_DEPTH) {
                Object[] r = resolve(c, "<init>", mi.desc);
                if (r != null && r[0] == c) {
                    V[] a = args.toArray(new V[0]);
                    Result res = analyse(c, (MethodNode) r[1], V.unknown(1, "an object under construction"), a, true, depth + 1);
                    if (res != null) {
                        followed.put(mi, res);
                    }
                }
            }
        }

        /** Follows a call into code that may declare state (memoised), or null. */
        Result maybeFollow(MethodInsnNode mi, List<? extends V> values) {
            Result r = follow(mi, values.toArray(new V[0]));
            if (r != null) {
                followed.put(mi, r);
            }
            return r;
        }

        Result follow(MethodInsnNode mi, V[] values) {
            if (mi.name.equals("<init>")) {
                // constructors followed in construct(); the post pass re-reads them from there
                Class<?> c = cls(mi.owner);
                Object[] r = c == null ? null : resolve(c, "<init>", mi.desc);
                if (r == null || r[0] != c) {
                    return null;
                }
                V[] a = Arrays.copyOfRange(values, 1, values.length);
                return analyse(c, (MethodNode) r[1], V.unknown(1, "an object under construction"), a, true, depth + 1);
            }
            boolean isStatic = mi.getOpcode() == Opcodes.INVOKESTATIC;
            Class<?> target;
            V recv = null;
            if (isStatic) {
                target = cls(mi.owner);
            } else {
                recv = values[0];
                Object o;
                try {
                    o = value(recv);
                } catch (Unres u) {
                    return null;
                }
                if (o == null || o == RUNTIME_CONTEXT || o instanceof HintInfo) {
                    return null;
                }
                target = mi.getOpcode() == Opcodes.INVOKESPECIAL ? cls(mi.owner) : o.getClass();
                if (target == null || !cls(mi.owner).isInstance(o)) {
                    return null;
                }
            }
            if (target == null) {
                return null;
            }
            Object[] r = resolve(target, mi.name, mi.desc);
            if (r == null) {
                return null;
            }
            Class<?> owner = (Class<?>) r[0];
            MethodNode m = (MethodNode) r[1];
            if ((m.access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0) {
                return null;
            }
            boolean job = isJob(owner);
            if (flinkMode) {
                // a Flink operator's own code: its methods on itself and on the objects it holds;
                // never a user function's (those are analysed as functions), never a static helper
                if (job || isStatic || depth >= FLINK_DEPTH) {
                    return null;
                }
                if (recv != null) {
                    Object o = valueOrNull(recv);
                    if (o != null && isJob(o.getClass())) {
                        return null;
                    }
                }
            } else if (!job || depth >= USER_DEPTH) {
                return null;
            }
            V[] a = isStatic ? values : Arrays.copyOfRange(values, 1, values.length);
            return analyse(owner, m, recv, a, flinkMode, depth + 1);
        }
    }

    // ------------------------------------------------------------------ reflection helpers

    /**
     * A reduce / aggregate function a state descriptor is built with (a job's own object, whose
     * constructor does not run here): it does not take part in the state's serializer, so a
     * stand-in that only implements the interface takes its place (its methods throw).
     */
    Object standIn(Type param, Unres why) throws Unres {
        String n = param.getClassName();
        if (!n.equals("org.apache.flink.api.common.functions.ReduceFunction")
                && !n.equals("org.apache.flink.api.common.functions.AggregateFunction")) {
            throw why;
        }
        try {
            Class<?> i = Class.forName(n, false, FLINK_LOADER);
            return java.lang.reflect.Proxy.newProxyInstance(FLINK_LOADER, new Class<?>[] {i}, (p, m, a) -> {
                if (m.getName().equals("toString") && (a == null || a.length == 0)) {
                    return "stand-in " + n;
                }
                if (m.getName().equals("hashCode") && (a == null || a.length == 0)) {
                    return System.identityHashCode(p);
                }
                if (m.getName().equals("equals") && a != null && a.length == 1) {
                    return p == a[0];
                }
                throw new UnsupportedOperationException("a stand-in of the job's function: never called");
            });
        } catch (ClassNotFoundException e) {
            throw why;
        }
    }

    /** The TypeInformation a job's TypeHint subclass stands for, as TypeHint's constructor computes it. */
    Object typeHint(Class<?> c) {
        try {
            Class<?> hint = Class.forName("org.apache.flink.api.common.typeinfo.TypeHint", false, loader);
            Class<?> te = Class.forName("org.apache.flink.api.java.typeutils.TypeExtractor", false, loader);
            for (Method m : te.getMethods()) {
                if (m.getName().equals("createTypeInfo") && m.getParameterCount() == 5
                        && m.getParameterTypes()[0] == Class.class && m.getParameterTypes()[1] == Class.class) {
                    return new HintInfo(m.invoke(null, hint, c, 0, null, null));
                }
            }
            java.lang.reflect.Type t = c.getGenericSuperclass();
            if (t instanceof java.lang.reflect.ParameterizedType) {
                java.lang.reflect.Type arg = ((java.lang.reflect.ParameterizedType) t).getActualTypeArguments()[0];
                return new HintInfo(te.getMethod("createTypeInfo", java.lang.reflect.Type.class).invoke(null, arg));
            }
        } catch (Throwable e) {
            return null;
        }
        return null;
    }

    Method reflectMethod(Class<?> c, String name, String desc) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            for (Method m : k.getDeclaredMethods()) {
                if (m.getName().equals(name) && Type.getMethodDescriptor(m).equals(desc)) {
                    return m;
                }
            }
        }
        for (Method m : c.getMethods()) {
            if (m.getName().equals(name) && Type.getMethodDescriptor(m).equals(desc)) {
                return m;
            }
        }
        return null;
    }

    static Constructor<?> reflectConstructor(Class<?> c, String desc) {
        for (Constructor<?> k : c.getDeclaredConstructors()) {
            if (Type.getConstructorDescriptor(k).equals(desc)) {
                return k;
            }
        }
        return null;
    }

    static Field field(Class<?> c, String name) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            try {
                return k.getDeclaredField(name);
            } catch (NoSuchFieldException e) {
                // up
            }
            for (Class<?> i : k.getInterfaces()) {
                Field f = field(i, name);
                if (f != null) {
                    return f;
                }
            }
        }
        return null;
    }

    private static Object unsafe;
    private static Method shouldBeInitialized;

    /** Whether a class's static initialiser has run (sun.misc.Unsafe; false when that cannot tell). */
    static synchronized boolean initialised(Class<?> c) {
        try {
            if (shouldBeInitialized == null) {
                Class<?> u = Class.forName("sun.misc.Unsafe");
                Field f = u.getDeclaredField("theUnsafe");
                f.setAccessible(true);
                unsafe = f.get(null);
                shouldBeInitialized = u.getMethod("shouldBeInitialized", Class.class);
            }
            return !Boolean.TRUE.equals(shouldBeInitialized.invoke(unsafe, c));
        } catch (Throwable e) {
            return false;
        }
    }

    static Map<String, Object> linked() {
        return new LinkedHashMap<>();
    }

    static boolean eq(Object a, Object b) {
        return Objects.equals(a, b);
    }
}
