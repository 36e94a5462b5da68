package org.apache.flink.streaming.api.environment;

import org.apache.flink.annotation.Public;
import org.apache.flink.api.common.InvalidProgramException;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.java.ExecutionEnvironment;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.flinkjobgraph.harness.LocalCapture;

import javax.annotation.Nonnull;

/**
 * flink-jobgraph's stand-in for Flink 1.9.3's {@code LocalStreamEnvironment}, with the same public
 * API. The harness jar comes ahead of flink-streaming-java on its class path (the manifest's
 * Class-Path lists Flink's jars after the jar itself), and the job's class loader is parent-first,
 * so every local environment a program builds while {@code export} runs its main() is this class:
 * execute() records the StreamGraph ({@link LocalCapture}) and starts nothing. Outside {@code
 * export} (the generator, the harness jar on a user's class path) it does what Flink 1.9.3's
 * does: runs the job on a MiniCluster.
 */
@Public
public class LocalStreamEnvironment extends StreamExecutionEnvironment {
    /** Tells the harness that this class, and not Flink's, is the one loaded. */
    public static final String FLINK_JOBGRAPH_STAND_IN = "flink-jobgraph";

    private final Configuration configuration;

    /** A local environment with the default configuration (parallelism 1, as in Flink). */
    public LocalStreamEnvironment() {
        this(new Configuration());
    }

    /** A local environment with the given configuration (parallelism 1, as in Flink). */
    public LocalStreamEnvironment(@Nonnull Configuration configuration) {
        if (!ExecutionEnvironment.areExplicitEnvironmentsAllowed()) {
            throw new InvalidProgramException(
                    "The LocalStreamEnvironment cannot be used when submitting a program through a client, "
                            + "or running in a TestEnvironment context.");
        }
        this.configuration = configuration;
        setParallelism(1);
        LocalCapture.created(this);
    }

    protected Configuration getConfiguration() {
        return configuration;
    }

    /**
     * While {@code export} runs main(): records the graph and returns a job that finished at once;
     * the transformations are cleared afterwards as after a local run, so a later execute() submits
     * only what was added since. Otherwise: Flink 1.9.3's local execution.
     */
    @Override
    public JobExecutionResult execute(StreamGraph streamGraph) throws Exception {
        if (LocalCapture.active()) {
            try {
                return LocalCapture.submitted(streamGraph);
            } finally {
                transformations.clear();
            }
        }
        JobGraph jobGraph = streamGraph.getJobGraph();
        jobGraph.setAllowQueuedScheduling(true);

        Configuration conf = new Configuration();
        conf.addAll(jobGraph.getJobConfiguration());
        conf.setString(TaskManagerOptions.MANAGED_MEMORY_SIZE, "0");
        conf.addAll(this.configuration);
        if (!conf.contains(RestOptions.BIND_PORT)) {
            conf.setString(RestOptions.BIND_PORT, "0");
        }
        int slots = conf.getInteger(TaskManagerOptions.NUM_TASK_SLOTS, jobGraph.getMaximumParallelism());
        MiniClusterConfiguration cfg =
                new MiniClusterConfiguration.Builder().setConfiguration(conf).setNumSlotsPerTaskManager(slots).build();
        MiniCluster miniCluster = new MiniCluster(cfg);
        try {
            miniCluster.start();
            conf.setInteger(RestOptions.PORT, miniCluster.getRestAddress().get().getPort());
            return miniCluster.executeJobBlocking(jobGraph);
        } finally {
            transformations.clear();
            miniCluster.close();
        }
    }
}
