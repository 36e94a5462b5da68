package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The "stateful with uids" program of seeds/003 (SPEC section 3): a user-style job with a main()
 * that calls execute(). Used by {@code selfcheck} and as the example for {@code export}.
 */
public final class SeedJob {
    private SeedJob() {}

    public static void build(StreamExecutionEnvironment env) {
        env.setParallelism(1);
        DataStream<Long> src = Fns.legacySource(env, false, null).uid("source_uid");
        src.map(new Fns.MapFn())
                .keyBy(new Fns.KeySel())
                .map(new Fns.MapFn())
                .uid("count_uid")
                .print();
    }

    public static void main(String[] args) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        build(env);
        env.execute("StreamWithStateSample");
    }
}
