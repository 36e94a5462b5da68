package org.flinkjobgraph.testjobs;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.PipelineExecutor;
import org.apache.flink.core.execution.PipelineExecutorFactory;

import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * An executor a user's jar might bring (like flink-clients' "local" one in a fat jar), registered
 * in the test programs' META-INF/services. It accepts any configuration and, if Flink ever handed
 * it a job, writes the file named by $FLINK_JOBGRAPH_TRAP_FILE. The exporter must hide it.
 */
public final class TrapExecutorFactory implements PipelineExecutorFactory {
    @Override
    public String getName() {
        return "trap";
    }

    @Override
    public boolean isCompatibleWith(Configuration configuration) {
        return true;
    }

    @Override
    public PipelineExecutor getExecutor(Configuration configuration) {
        return (pipeline, conf, cl) -> {
            String f = System.getenv("FLINK_JOBGRAPH_TRAP_FILE");
            Files.write(Paths.get(f != null ? f : "/tmp/flink-jobgraph-trap"), new byte[] {1});
            throw new IllegalStateException("trap executor reached: the job would have run");
        };
    }
}
