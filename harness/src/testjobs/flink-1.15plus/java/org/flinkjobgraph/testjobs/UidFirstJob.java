package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.CoMapFunction;

/**
 * Two versions of one job, submitted one after the other: "base", and "grown", which adds one
 * operator D behind a REBALANCE after the uid operator U. U has a uid, so Flink's hasher hashes it
 * as soon as the breadth-first walk reaches it, before its second input P; in "grown" D is then
 * queued (and hashed) before P, so P's hashes.size() position and with it P's generated operator
 * ID change although P is upstream of the added operator. tests/test_exporter.py checks that Flink
 * really does this and that the pipeline reproduces both graphs.
 */
public final class UidFirstJob {
    private UidFirstJob() {}

    public static void main(String[] args) throws Exception {
        for (String version : new String[] {"base", "grown"}) {
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            DataStream<Long> a = env.fromSequence(1, 10).name("A");
            DataStream<Long> p = env.fromSequence(1, 10).name("B")
                    .rebalance().map(x -> x + 1).returns(Types.LONG).name("P1")
                    .rebalance().map(x -> x * 2).returns(Types.LONG).name("P");
            DataStream<Long> u = a.connect(p).map(new CoMapFunction<Long, Long, Long>() {
                @Override
                public Long map1(Long x) {
                    return x;
                }

                @Override
                public Long map2(Long x) {
                    return -x;
                }
            }).uid("u").name("U");
            if (version.equals("grown")) {
                u.rebalance().map(x -> x).returns(Types.LONG).name("D");
            }
            env.executeAsync(version);
        }
    }
}
