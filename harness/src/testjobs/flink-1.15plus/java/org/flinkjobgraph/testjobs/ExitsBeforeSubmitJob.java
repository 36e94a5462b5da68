package org.flinkjobgraph.testjobs;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** Checks its arguments and calls System.exit(3) before submitting, as a main() with a usage check does. */
public final class ExitsBeforeSubmitJob {
    private ExitsBeforeSubmitJob() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: ExitsBeforeSubmitJob --input PATH");
            System.exit(3);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSequence(1, 10).print();
        env.execute("exits-before-submit");
    }
}
