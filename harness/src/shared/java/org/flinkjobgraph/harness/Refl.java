package org.flinkjobgraph.harness;

import java.lang.reflect.Method;

/** Small reflection helpers for API that differs between Flink versions. */
public final class Refl {
    private Refl() {}

    public static Method find(Class<?> c, String name, int arity) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            for (Method m : k.getDeclaredMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == arity) {
                    return m;
                }
            }
        }
        for (Method m : c.getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == arity) {
                return m;
            }
        }
        return null;
    }

    public static boolean has(Object o, String name, int arity) {
        return o != null && find(o.getClass(), name, arity) != null;
    }

    /** Calls a method if it exists; returns {@code dflt} when it does not. */
    public static Object call(Object o, String name, Object dflt, Object... args) {
        if (o == null) {
            return dflt;
        }
        Method m = find(o.getClass(), name, args.length);
        if (m == null) {
            return dflt;
        }
        try {
            m.setAccessible(true);
            return m.invoke(o, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable t = e.getCause();
            if (t instanceof RuntimeException) {
                throw (RuntimeException) t;
            }
            throw new RuntimeException(t);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new RuntimeException("reflective call " + name + " failed", e);
        }
    }

    /** True if the class, one of its superclasses or interfaces has the given simple name. */
    public static boolean isA(Object o, String simpleName) {
        return o != null && isA(o.getClass(), simpleName);
    }

    public static boolean isA(Class<?> c, String simpleName) {
        if (c == null) {
            return false;
        }
        if (c.getSimpleName().equals(simpleName)) {
            return true;
        }
        for (Class<?> i : c.getInterfaces()) {
            if (isA(i, simpleName)) {
                return true;
            }
        }
        return isA(c.getSuperclass(), simpleName);
    }
}
