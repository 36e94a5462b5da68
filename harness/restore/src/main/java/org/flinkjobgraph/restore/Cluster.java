package org.flinkjobgraph.restore;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The embedded cluster both harness commands run their jobs on ({@link Runner} for {@code
 * generate}, {@link StRunner} for {@code statetypes}), and the two things they do with it alike:
 * cancel a job and wait for its end, and take the snapshot a case asks for.
 */
final class Cluster {
    private Cluster() {}

    static final long TIMEOUT_MS = 60_000;

    /**
     * A started MiniCluster: one TaskManager with 48 slots (the largest program's parallelism),
     * no restarts (a failed restore is the answer), any free REST port (several harness runs side
     * by side).
     */
    static MiniCluster start() throws Exception {
        Configuration c = new Configuration();
        c.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse("256m"));
        c.set(TaskManagerOptions.NETWORK_MEMORY_MIN, MemorySize.parse("128m"));
        c.set(TaskManagerOptions.NETWORK_MEMORY_MAX, MemorySize.parse("128m"));
        c.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        c.set(RestOptions.BIND_PORT, "0");
        MiniCluster mc = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(c)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(48)
                .build());
        mc.start();
        return mc;
    }

    static void cancelAndWait(MiniCluster mc, JobID id) throws Exception {
        try {
            mc.cancelJob(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (Exception ignored) {
            // already terminal
        }
        mc.requestJobResult(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    /**
     * Takes the snapshot of a running job into {@code caseDir/savepoints} and ends the job: {@code
     * takenBy} "stop-with-savepoint", "trigger-savepoint+cancel" (in {@code format}: CANONICAL /
     * NATIVE, null for Flink's default), else {@code checkpoints} retained checkpoints 150 ms apart,
     * then a cancel. Returns the pointer of the (last) snapshot.
     */
    static String snapshot(MiniCluster mc, JobID id, String takenBy, String format, int checkpoints, Path caseDir)
            throws Exception {
        String target = caseDir.resolve("savepoints").toUri().toString();
        SavepointFormatType fmt = format == null ? null : SavepointFormatType.valueOf(format);
        String pointer;
        switch (takenBy) {
            case "stop-with-savepoint":
                pointer = mc.stopWithSavepoint(id, target, false, fmt).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                mc.requestJobResult(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                break;
            case "trigger-savepoint+cancel":
                pointer = mc.triggerSavepoint(id, target, true, fmt).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                mc.requestJobResult(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                break;
            default:
                pointer = null;
                for (int i = 0; i < checkpoints; i++) {
                    if (i > 0) {
                        Thread.sleep(150);
                    }
                    pointer = mc.triggerCheckpoint(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                }
                cancelAndWait(mc, id);
        }
        return pointer;
    }
}
