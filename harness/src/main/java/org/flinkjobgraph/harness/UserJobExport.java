package org.flinkjobgraph.harness;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

import java.io.Writer;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code export --main-class CLASS [--graph-id ID] [--out FILE] [--expected] [-- ARGS...]}: runs a
 * user's Flink job main() with a context environment whose execute() does not run the job but
 * writes its StreamGraph as a spec line (one line per execute() call).
 */
public final class UserJobExport {
    private UserJobExport() {}

    /** Thrown by the capturing environment to stop the user's main() after execute(). */
    public static final class Captured extends RuntimeException {
        Captured() {
            super("StreamGraph captured by flink-jobgraph harness; job not executed");
        }
    }

    static final List<StreamGraph> CAPTURED = new ArrayList<>();
    static boolean stopAfterFirst = true;

    /** Environment returned by getExecutionEnvironment() while a user's main() runs. */
    public static class CapturingEnvironment extends StreamExecutionEnvironment {
        // no @Override on purpose: the set of execute methods differs between Flink versions
        public JobExecutionResult execute(String jobName) throws Exception {
            StreamGraph sg = getStreamGraph();
            if (jobName != null) {
                sg.setJobName(jobName);
            }
            return capture(sg);
        }

        public JobExecutionResult execute(StreamGraph streamGraph) throws Exception {
            return capture(streamGraph);
        }

        private JobExecutionResult capture(StreamGraph sg) {
            CAPTURED.add(sg);
            if (stopAfterFirst) {
                throw new Captured();
            }
            return null;
        }
    }

    static void install() throws Exception {
        Method init = null;
        for (Method m : StreamExecutionEnvironment.class.getDeclaredMethods()) {
            if (m.getName().equals("initializeContextEnvironment") && m.getParameterCount() == 1) {
                init = m;
            }
        }
        if (init == null) {
            throw new IllegalStateException("this Flink has no initializeContextEnvironment");
        }
        Class<?> factoryType = init.getParameterTypes()[0];
        Object factory =
                Proxy.newProxyInstance(
                        factoryType.getClassLoader(),
                        new Class<?>[] {factoryType},
                        (proxy, method, a) -> {
                            if (method.getName().equals("toString")) {
                                return "CapturingEnvironmentFactory";
                            }
                            if (method.getName().equals("hashCode")) {
                                return 0;
                            }
                            if (method.getName().equals("equals")) {
                                return proxy == a[0];
                            }
                            CapturingEnvironment env = new CapturingEnvironment();
                            if (a != null && a.length == 1 && a[0] != null) {
                                Refl.call(env, "configure", null, a[0]);
                            }
                            return env;
                        });
        init.setAccessible(true);
        init.invoke(null, factory);
    }

    static void run(String[] args) throws Exception {
        Map<String, String> o = Main.opts(args);
        String mainClass = o.get("main-class");
        if (mainClass == null) {
            throw new IllegalArgumentException("--main-class is required");
        }
        String graphId = o.get("graph-id");
        String out = o.getOrDefault("out", "-");
        boolean withExpected = o.containsKey("expected");
        stopAfterFirst = !o.containsKey("all");
        List<String> userArgs = Main.split(o.get("--"));

        install();
        Class<?> c = Class.forName(mainClass, true, Thread.currentThread().getContextClassLoader());
        Method m = c.getMethod("main", String[].class);
        try {
            m.invoke(null, (Object) userArgs.toArray(new String[0]));
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable t = e.getCause();
            while (t != null && !(t instanceof Captured)) {
                t = t.getCause();
            }
            if (t == null) {
                throw e;
            }
        }
        if (CAPTURED.isEmpty()) {
            throw new IllegalStateException(mainClass + ".main() never called execute()");
        }
        try (Writer w = Main.open(out)) {
            for (int i = 0; i < CAPTURED.size(); i++) {
                StreamGraph sg = CAPTURED.get(i);
                String id = graphId != null ? graphId : sg.getJobName();
                if (CAPTURED.size() > 1) {
                    id = id + "#" + i;
                }
                Map<String, Object> rec = StreamGraphSpecExporter.export(sg, id);
                if (withExpected) {
                    rec.put("expected", JobGraphExpected.compute(sg));
                }
                w.write(Json.write(rec));
                w.write('\n');
            }
        }
    }
}
