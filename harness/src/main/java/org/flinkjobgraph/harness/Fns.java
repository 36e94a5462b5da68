package org.flinkjobgraph.harness;

import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.async.AsyncFunction;
import org.apache.flink.streaming.api.functions.async.ResultFuture;
import org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.co.CoFlatMapFunction;
import org.apache.flink.streaming.api.functions.co.CoMapFunction;
import org.apache.flink.streaming.api.functions.co.CoProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

import java.util.Collections;

/**
 * Serializable user functions (all Long -> Long). The programs are never executed: some are bare
 * stubs (empty bodies), the rest have a body only to read naturally.
 */
public final class Fns {
    private Fns() {}

    public static final OutputTag<Long> SIDE = new OutputTag<>("side-0", Types.LONG);

    public static MapStateDescriptor<Long, Long> bcastDescriptor() {
        return new MapStateDescriptor<>("bcast-state", Types.LONG, Types.LONG);
    }

    /** Legacy SourceFunction (through {@link LegacyApi}: its package depends on the line). */
    public static class Src implements LegacyApi.Source<Long> {
        @Override
        public void run(SourceContext<Long> ctx) {}

        @Override
        public void cancel() {}
    }

    public static class ParSrc extends Src implements LegacyApi.ParallelSource<Long> {}

    public static class Snk implements LegacyApi.Sink<Long> {}

    /** env.addSource(SourceFunction or ParallelSourceFunction[, name]). */
    public static SingleOutputStreamOperator<Long> legacySource(
            StreamExecutionEnvironment env, boolean parallel, String nameOrNull) {
        Src f = parallel ? new ParSrc() : new Src();
        return nameOrNull == null ? env.addSource(f) : env.addSource(f, nameOrNull);
    }

    public static DataStreamSink<Long> legacySink(DataStream<Long> in) {
        return in.addSink(new Snk());
    }

    /** The stateless one-input operator named: map, filter, flatMap or process. */
    public static SingleOutputStreamOperator<Long> simple(DataStream<Long> in, String what) {
        switch (what) {
            case "map": return in.map(new MapFn());
            case "filter": return in.filter(new FilterFn());
            case "flatMap": return in.flatMap(new FlatMapFn());
            case "process": return in.process(new ProcFn());
            default: throw new IllegalArgumentException(what);
        }
    }

    public static class MapFn implements MapFunction<Long, Long> {
        @Override
        public Long map(Long v) {
            return v + 1;
        }
    }

    public static class FilterFn implements FilterFunction<Long> {
        @Override
        public boolean filter(Long v) {
            return v % 2 == 0;
        }
    }

    public static class FlatMapFn implements FlatMapFunction<Long, Long> {
        @Override
        public void flatMap(Long v, Collector<Long> out) {
            out.collect(v);
        }
    }

    public static class ProcFn extends ProcessFunction<Long, Long> {
        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) {
            out.collect(v);
            ctx.output(SIDE, v);
        }
    }

    public static class KeyedProcFn extends KeyedProcessFunction<Long, Long, Long> {
        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) {
            out.collect(v);
        }
    }

    public static class ReduceFn implements ReduceFunction<Long> {
        @Override
        public Long reduce(Long a, Long b) {
            return a + b;
        }
    }

    public static class KeySel implements KeySelector<Long, Long> {
        @Override
        public Long getKey(Long v) {
            return v % 16;
        }
    }

    public static class PartFn implements Partitioner<Long> {
        @Override
        public int partition(Long key, int numPartitions) {
            return (int) (Math.abs(key) % numPartitions);
        }
    }

    public static class CoMapFn implements CoMapFunction<Long, Long, Long> {
        @Override
        public Long map1(Long v) {
            return v;
        }

        @Override
        public Long map2(Long v) {
            return v;
        }
    }

    public static class CoFlatMapFn implements CoFlatMapFunction<Long, Long, Long> {
        @Override
        public void flatMap1(Long v, Collector<Long> out) {
            out.collect(v);
        }

        @Override
        public void flatMap2(Long v, Collector<Long> out) {
            out.collect(v);
        }
    }

    public static class CoProcFn extends CoProcessFunction<Long, Long, Long> {
        @Override
        public void processElement1(Long v, Context ctx, Collector<Long> out) {}

        @Override
        public void processElement2(Long v, Context ctx, Collector<Long> out) {}
    }

    public static class KeyedCoProcFn extends KeyedCoProcessFunction<Long, Long, Long, Long> {
        @Override
        public void processElement1(Long v, Context ctx, Collector<Long> out) {}

        @Override
        public void processElement2(Long v, Context ctx, Collector<Long> out) {}
    }

    public static class BcastFn extends BroadcastProcessFunction<Long, Long, Long> {
        @Override
        public void processElement(Long v, ReadOnlyContext ctx, Collector<Long> out) {
            out.collect(v);
        }

        @Override
        public void processBroadcastElement(Long v, Context ctx, Collector<Long> out) {}
    }

    public static class KeyedBcastFn extends KeyedBroadcastProcessFunction<Long, Long, Long, Long> {
        @Override
        public void processElement(Long v, ReadOnlyContext ctx, Collector<Long> out) {
            out.collect(v);
        }

        @Override
        public void processBroadcastElement(Long v, Context ctx, Collector<Long> out) {}
    }

    public static class AsyncFn implements AsyncFunction<Long, Long> {
        @Override
        public void asyncInvoke(Long v, ResultFuture<Long> resultFuture) {
            resultFuture.complete(Collections.singletonList(v));
        }
    }
}
