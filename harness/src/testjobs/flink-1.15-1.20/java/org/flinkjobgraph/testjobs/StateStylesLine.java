package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.time.Time;
import org.apache.flink.api.common.typeinfo.BasicTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.windowing.assigners.ProcessingTimeSessionWindows;
import org.apache.flink.training.jobgraphtest.Ride;
import org.apache.flink.util.Collector;

/** The parts of {@link StateStylesJob} whose API differs by line: Flink 1.15 - 1.20 (open(Configuration), TTL in Time). */
public final class StateStylesLine {
    private StateStylesLine() {}

    static void registerKryo(StreamExecutionEnvironment env, Class<?> c) {
        env.getConfig().registerKryoType(c);
    }

    /** Processing-time session windows with a gap of an hour (merging windows). */
    static ProcessingTimeSessionWindows sessions() {
        return ProcessingTimeSessionWindows.withGap(org.apache.flink.streaming.api.windowing.time.Time.hours(1));
    }

    /** An interval join within a millisecond. */
    static <K> KeyedStream.IntervalJoined<Long, Long, K> between(KeyedStream.IntervalJoin<Long, Long, K> j) {
        return j.between(org.apache.flink.streaming.api.windowing.time.Time.milliseconds(-1),
                org.apache.flink.streaming.api.windowing.time.Time.milliseconds(1));
    }

    /** Declares in {@code open()}: a class literal, a TypeHint, Types.*, TypeInformation.of, TTL. */
    public static final class OpenStylesFn extends KeyedProcessFunction<Long, Long, Long> {
        private transient ValueState<Ride> rides;
        private transient ListState<Tuple2<Long, String>> pairs;
        private transient MapState<String, Long> counts;
        private transient ReducingState<Long> total;
        private transient AggregatingState<Long, Double> avg;
        private transient ValueState<String> session;

        @Override
        public void open(Configuration parameters) throws Exception {
            rides = getRuntimeContext().getState(new ValueStateDescriptor<>("rides", Ride.class));
            pairs = getRuntimeContext().getListState(
                    new ListStateDescriptor<>("pairs", TypeInformation.of(new TypeHint<Tuple2<Long, String>>() {})));
            counts = getRuntimeContext().getMapState(new MapStateDescriptor<>("counts", Types.STRING, Types.LONG));
            total = getRuntimeContext().getReducingState(
                    new ReducingStateDescriptor<>("total", new StateStylesJob.SumReduce(), TypeInformation.of(Long.class)));
            avg = getRuntimeContext().getAggregatingState(
                    new AggregatingStateDescriptor<>("avg", new StateStylesJob.AvgAgg(), Types.TUPLE(Types.LONG, Types.LONG)));
            ValueStateDescriptor<String> sessionDesc = new ValueStateDescriptor<>("session", BasicTypeInfo.STRING_TYPE_INFO);
            sessionDesc.enableTimeToLive(StateTtlConfig.newBuilder(Time.hours(1))
                    .setUpdateType(StateTtlConfig.UpdateType.OnReadAndWrite)
                    .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
                    .cleanupFullSnapshot()
                    .cleanupIncrementally(10, false) // a boolean argument: the JVM passes it as an int
                    .build());
            session = getRuntimeContext().getState(sessionDesc);
        }

        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {
            rides.update(new Ride(v, v + 1));
            pairs.add(Tuple2.of(v, "p"));
            counts.put("c", v);
            total.add(v);
            avg.add(v);
            session.update("s" + v);
            ctx.timerService().registerProcessingTimeTimer(Long.MAX_VALUE - 10); // never fires: saved
        }
    }

    /** Its {@code open()} calls {@link #register()}, which a subclass overrides. */
    public abstract static class RegisteringBase<I, O> extends RichMapFunction<I, O> {
        @Override
        public void open(Configuration parameters) throws Exception {
            register();
        }

        protected abstract void register() throws Exception;
    }
}
