package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.time.Time;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;

/**
 * Flink 1.9: a job declaring state in {@code open()} (a class literal with TTL, a TypeHint) and a
 * count window (tests/test_declared_states.py: {@code declared_states} is written on 1.9 too).
 */
public final class StateJob19 {
    private StateJob19() {}

    /** Declares in open(). */
    public static final class Fn extends RichFlatMapFunction<Long, Long> {
        private transient ValueState<Long> count;
        private transient ListState<String> names;

        @Override
        public void open(Configuration parameters) throws Exception {
            ValueStateDescriptor<Long> d = new ValueStateDescriptor<>("count", Long.class);
            d.enableTimeToLive(StateTtlConfig.newBuilder(Time.hours(1)).build());
            count = getRuntimeContext().getState(d);
            names = getRuntimeContext().getListState(
                    new ListStateDescriptor<>("names", TypeInformation.of(new TypeHint<String>() {})));
        }

        @Override
        public void flatMap(Long v, Collector<Long> out) throws Exception {
            count.update(v);
            names.add("n" + v);
            out.collect(v);
        }
    }

    /** Key: parity. */
    public static final class Parity implements KeySelector<Long, Long> {
        @Override
        public Long getKey(Long v) {
            return v % 2;
        }
    }

    /** Sum. */
    public static final class Sum implements ReduceFunction<Long> {
        @Override
        public Long reduce(Long a, Long b) {
            return a + b;
        }
    }

    public static void main(String[] args) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.generateSequence(0, 10).keyBy(new Parity()).flatMap(new Fn()).uid("open")
                .keyBy(new Parity()).countWindow(100).reduce(new Sum()).uid("window").print();
        env.execute("state-19");
    }
}
