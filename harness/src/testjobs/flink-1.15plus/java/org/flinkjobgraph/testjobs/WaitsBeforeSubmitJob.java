package org.flinkjobgraph.testjobs;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** Builds a pipeline, then waits (as for a socket or a file) before it would submit: never, here. */
public final class WaitsBeforeSubmitJob {
    private WaitsBeforeSubmitJob() {}

    public static void main(String[] args) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSequence(1, 10).print();
        waitForever();
        env.execute("waits-before-submit");
    }

    private static void waitForever() throws InterruptedException {
        while (true) {
            Thread.sleep(60_000);
        }
    }
}
