package org.flinkjobgraph.testjobs;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** Builds a pipeline but never submits it. */
public final class NoSubmitJob {
    private NoSubmitJob() {}

    public static void main(String[] args) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSequence(1, 10).print();
    }
}
