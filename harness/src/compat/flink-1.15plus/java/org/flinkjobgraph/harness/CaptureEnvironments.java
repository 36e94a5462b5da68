package org.flinkjobgraph.harness;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.PipelineExecutorServiceLoader;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironmentFactory;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

/**
 * Context environments for the user's main() (Flink 1.15+), the way {@code flink run} installs
 * them: {@code StreamExecutionEnvironment.getExecutionEnvironment()} (and through it
 * {@code TableEnvironment.create}, which asks for one) and, on 2.x, DataStream V2's
 * {@code ExecutionEnvironment.getInstance()} return environments that carry the exporter's
 * configuration (-p, -D, --config) and submit to {@link CaptureExecutorFactory} only.
 *
 * <p>Extends StreamExecutionEnvironment only to reach its protected static
 * initializeContextEnvironment; never instantiated.
 */
final class CaptureEnvironments extends StreamExecutionEnvironment {
    private CaptureEnvironments() {}

    static Configuration merged(Configuration base, Configuration program) {
        Configuration c = new Configuration();
        c.addAll(base);
        if (program != null) {
            c.addAll(program); // like flink run: the program's own settings win
        }
        c.setString("execution.target", CaptureExecutorFactory.NAME);
        c.setString("execution.attached", "true");
        return c;
    }

    static void install(Configuration base, ClassLoader userClassLoader) {
        StreamExecutionEnvironmentFactory f =
                program ->
                        new StreamExecutionEnvironment(
                                CaptureExecutorFactory.LOADER, merged(base, program), userClassLoader);
        initializeContextEnvironment(f);
        installDataStreamV2(base, userClassLoader);
    }

    /** DataStream V2 (flink-datastream, 2.x): same idea through reflection (internal classes). */
    private static void installDataStreamV2(Configuration base, ClassLoader userClassLoader) {
        Class<?> impl;
        Class<?> factoryType;
        try {
            impl = Class.forName("org.apache.flink.datastream.impl.ExecutionEnvironmentImpl");
            factoryType = Class.forName("org.apache.flink.datastream.impl.ExecutionEnvironmentFactory");
        } catch (ClassNotFoundException | LinkageError e) {
            return; // no DataStream V2 on the classpath; its default env still only finds our executor
        }
        try {
            Constructor<?> ctor =
                    impl.getDeclaredConstructor(
                            PipelineExecutorServiceLoader.class, Configuration.class, ClassLoader.class);
            ctor.setAccessible(true);
            Object factory =
                    Proxy.newProxyInstance(
                            factoryType.getClassLoader(),
                            new Class<?>[] {factoryType},
                            (proxy, method, args) -> {
                                switch (method.getName()) {
                                    case "toString":
                                        return "CaptureExecutionEnvironmentFactory";
                                    case "hashCode":
                                        return 0;
                                    case "equals":
                                        return proxy == args[0];
                                    default:
                                        Configuration program =
                                                args != null && args.length == 1 && args[0] instanceof Configuration
                                                        ? (Configuration) args[0]
                                                        : null;
                                        return ctor.newInstance(
                                                CaptureExecutorFactory.LOADER,
                                                merged(base, program),
                                                userClassLoader);
                                }
                            });
            Method init = impl.getDeclaredMethod("initializeContextEnvironment", factoryType);
            init.setAccessible(true);
            init.invoke(null, factory);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot install the DataStream V2 capture environment: " + e, e);
        }
    }
}
