package org.flinkjobgraph.harness;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.LocalStreamEnvironment;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

import java.util.Collections;

/**
 * Flink 1.9: the capture behind the harness's stand-in for {@link LocalStreamEnvironment} (same
 * package and public API as Flink's, in src/compat/flink-1.9, ahead of Flink's jar on the harness's
 * class path). While {@code export} runs a main(), an environment the program builds itself
 * ({@code createLocalEnvironment()}, {@code createLocalEnvironment(p)}, {@code new
 * LocalStreamEnvironment(...)}, {@code createLocalEnvironmentWithWebUI}, and the local environment
 * {@code getExecutionEnvironment()} falls back to) records its StreamGraph at execute() and starts
 * no MiniCluster; outside {@code export} the stand-in runs the job as Flink's does.
 */
public final class LocalCapture {
    private LocalCapture() {}

    private static volatile boolean active;
    private static volatile Integer parallelism;
    private static volatile Integer maxParallelism;

    /**
     * Turns the capture on for the rest of the JVM (an export), with the -p / -D settings the
     * context environment gets, after checking that the job's class loader sees the stand-in and
     * not Flink's class (a fat jar's copy of flink-streaming-java is never preferred: the job's
     * loader is parent-first, and this check keeps it so).
     */
    static void install(Configuration conf, ClassLoader userClassLoader) throws Exception {
        String name = LocalStreamEnvironment.class.getName();
        Class<?> seen = Class.forName(name, false, userClassLoader);
        if (seen != LocalStreamEnvironment.class || !isStandIn(seen)) {
            throw new IllegalStateException(
                    "the job's class loader sees Flink's own " + name + " (from "
                            + seen.getProtectionDomain().getCodeSource() + "), not the harness's capturing one:"
                            + " run the harness with java -jar so that its jar comes first");
        }
        String par = conf.getString("parallelism.default", null);
        String maxPar = conf.getString("pipeline.max-parallelism", null);
        parallelism = par == null ? null : Integer.valueOf(par);
        maxParallelism = maxPar == null ? null : Integer.valueOf(maxPar);
        if (parallelism != null) {
            // createLocalEnvironment() and createLocalEnvironmentWithWebUI(conf) take this default
            StreamExecutionEnvironment.setDefaultLocalParallelism(parallelism);
        }
        active = true;
    }

    static boolean isStandIn(Class<?> c) {
        try {
            return "flink-jobgraph".equals(c.getField("FLINK_JOBGRAPH_STAND_IN").get(null));
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    /** Whether a local environment's execute() captures instead of running (an export is on). */
    public static boolean active() {
        return active;
    }

    /**
     * A local environment was built while capturing: it starts with the settings the context
     * environment gets (-p, -D pipeline.max-parallelism), as {@code flink run} would give them;
     * what the program sets afterwards wins ({@code createLocalEnvironment(p)} sets p).
     */
    public static void created(StreamExecutionEnvironment env) {
        if (!active) {
            return;
        }
        if (parallelism != null) {
            env.setParallelism(parallelism);
        }
        if (maxParallelism != null) {
            env.setMaxParallelism(maxParallelism);
        }
    }

    /**
     * A local environment's execute(): the graph is recorded, nothing runs, and main() sees a job
     * that finished at once with no accumulators (as with the 1.15+ capturing executor).
     */
    public static JobExecutionResult submitted(StreamGraph streamGraph) {
        Capture.submitted(streamGraph);
        return new JobExecutionResult(new JobID(), 0L, Collections.emptyMap());
    }
}
