package org.flinkjobgraph.restore;

import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.flinkjobgraph.harness.LegacyApi;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The user functions of the generated programs. All are real stateful/stateless functions: the
 * state they register is what ends up in the savepoint, so a restore attempt exercises Flink's real
 * state assignment and (for keyed state) its real serializer compatibility checks.
 */
public final class Fns {
    private Fns() {}

    /** Records emitted by all sources of the running job (MiniCluster runs in this JVM). */
    public static final AtomicLong EMITTED = new AtomicLong();

    // ------------------------------------------------------------------ legacy source and sink

    /**
     * Legacy SourceFunction (through {@link LegacyApi}: its package depends on the line): a
     * counter emitting {@code rate} records/s, with operator ListState "offset".
     */
    public static class Src extends LegacyApi.RichSource<Long> implements CheckpointedFunction {
        final int rate;
        volatile boolean running = true;
        transient ListState<Long> state;
        long next;

        Src(int rate) {
            this.rate = rate;
        }

        @Override
        public void run(SourceContext<Long> ctx) throws Exception {
            long sleep = Math.max(1, 1000L / rate);
            while (running) {
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(next++);
                }
                EMITTED.incrementAndGet();
                Thread.sleep(sleep);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            state.update(Collections.singletonList(next));
        }

        @Override
        public void initializeState(FunctionInitializationContext c) throws Exception {
            state = c.getOperatorStateStore().getListState(new ListStateDescriptor<>("offset", Types.LONG));
            for (Long x : state.get()) {
                next = Math.max(next, x);
            }
        }
    }

    /** The parallel variant of {@link Src} (a ParallelSourceFunction: one counter per subtask). */
    public static final class ParSrc extends Src implements LegacyApi.ParallelSource<Long> {
        ParSrc(int rate) {
            super(rate);
        }
    }

    /** Legacy SinkFunction (stateless). */
    public static final class Snk implements LegacyApi.Sink<Long> {
        @Override
        public void invoke(Long value, Context context) {}
    }

    /** env.addSource of a {@link ParSrc} or {@link Src} emitting {@code rate}/s. */
    public static SingleOutputStreamOperator<Long> legacySource(
            StreamExecutionEnvironment env, boolean parallel, int rate) {
        return env.addSource(parallel ? new ParSrc(rate) : new Src(rate));
    }

    public static DataStreamSink<Long> legacySink(DataStream<Long> in) {
        return in.addSink(new Snk());
    }

    // ------------------------------------------------------------------ stateful sink V2

    /**
     * The writer of the sink with writer state (SINK_STATEFUL): counts what it gets, the count is
     * its state. Each line's CompatImpl subclasses it with that line's stateful-writer interface
     * (1.15: StatefulSink.StatefulSinkWriter, 1.20+: StatefulSinkWriter; both ask for exactly
     * {@link #snapshotState}) and declares the sink around it.
     */
    public abstract static class CountingWriter implements SinkWriter<Long> {
        long count;

        protected CountingWriter(Collection<Long> restored) {
            for (Long x : restored) {
                count += x;
            }
        }

        @Override
        public void write(Long element, Context context) {
            count++;
        }

        @Override
        public void flush(boolean endOfInput) {}

        public List<Long> snapshotState(long checkpointId) {
            return Collections.singletonList(count);
        }

        @Override
        public void close() {}
    }

    /**
     * The sink with writer state as far as it is the same on every line: the state's serializer.
     * The lines' subclasses declare their sink interfaces and create their {@link CountingWriter}s.
     */
    public abstract static class CountingSinkBase implements java.io.Serializable {
        public SimpleVersionedSerializer<Long> getWriterStateSerializer() {
            return new LongSer();
        }
    }

    /** The writer state's serializer (a long). */
    public static final class LongSer implements SimpleVersionedSerializer<Long>, java.io.Serializable {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Long v) {
            return ByteBuffer.allocate(8).putLong(v).array();
        }

        @Override
        public Long deserialize(int version, byte[] b) {
            return ByteBuffer.wrap(b).getLong();
        }
    }

    // ------------------------------------------------------------------ keys

    /** The key v % mod; LongKey and StringKey give it as a Long or a String (a key type change). */
    abstract static class ModKey<K> implements KeySelector<Long, K> {
        final int mod;

        ModKey(int mod) {
            this.mod = mod;
        }
    }

    public static final class LongKey extends ModKey<Long> {
        public LongKey(int mod) {
            super(mod);
        }

        @Override
        public Long getKey(Long v) {
            return v % mod;
        }
    }

    public static final class StringKey extends ModKey<String> {
        public StringKey(int mod) {
            super(mod);
        }

        @Override
        public String getKey(Long v) {
            return Long.toString(v % mod);
        }
    }

    // ------------------------------------------------------------------ stateless

    public static final class MapFn implements MapFunction<Long, Long> {
        @Override
        public Long map(Long v) {
            return v + 1;
        }
    }

    public static final class FilterFn implements FilterFunction<Long> {
        @Override
        public boolean filter(Long v) {
            return v % 7 != 3;
        }
    }

    public static final class FlatMapFn implements FlatMapFunction<Long, Long> {
        @Override
        public void flatMap(Long v, Collector<Long> out) {
            out.collect(v);
        }
    }

    public static final class ProcessFn extends ProcessFunction<Long, Long> {
        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) {
            out.collect(v);
        }
    }

    public static final class SumReduce implements ReduceFunction<Long> {
        @Override
        public Long reduce(Long a, Long b) {
            return a + b;
        }
    }

    // ------------------------------------------------------------------ keyed state

    /**
     * A keyed function with one ValueState&lt;Long&gt;, registered when the first record arrives
     * (as the keyed functions here do: a savepoint taken before any record reached the operator
     * has no state of it).
     */
    abstract static class OneValueFn<K> extends KeyedProcessFunction<K, Long, Long> {
        private final String stateName;
        private transient ValueState<Long> state;

        OneValueFn(String stateName) {
            this.stateName = stateName;
        }

        ValueState<Long> state() {
            if (state == null) {
                state = getRuntimeContext().getState(new ValueStateDescriptor<>(stateName, Types.LONG));
            }
            return state;
        }
    }

    /** KCOUNT: keyed ValueState "count" (works with any key type). */
    public static final class CountFn<K> extends OneValueFn<K> {
        public CountFn() {
            super("count");
        }

        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {
            Long c = state().value();
            state().update(c == null ? 1L : c + 1);
            out.collect(v);
        }
    }

    /** KHIST: keyed MapState "histogram" plus a processing-time timer per key. */
    public static final class HistFn<K> extends KeyedProcessFunction<K, Long, Long> {
        private transient MapState<Long, Long> hist;

        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {
            if (hist == null) {
                hist = getRuntimeContext().getMapState(
                        new MapStateDescriptor<>("histogram", Types.LONG, Types.LONG));
            }
            long b = v % 10;
            Long c = hist.get(b);
            hist.put(b, c == null ? 1L : c + 1);
            ctx.timerService().registerProcessingTimeTimer(
                    ctx.timerService().currentProcessingTime() + 3_600_000L);
            out.collect(v);
        }
    }

    /** KRECENT: keyed ValueState "last-seen" plus an event-time-free processing timer. */
    public static final class RecentFn<K> extends OneValueFn<K> {
        public RecentFn() {
            super("last-seen");
        }

        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {
            state().update(v);
            ctx.timerService().registerProcessingTimeTimer(
                    (ctx.timerService().currentProcessingTime() / 60_000L + 60) * 60_000L);
            out.collect(v);
        }
    }

    // ------------------------------------------------------------------ operator state

    /** BUFFER / BUFFER_UNION: operator ListState "buffer" (split-distribute or union). */
    public static final class BufferFn extends RichMapFunction<Long, Long> implements CheckpointedFunction {
        final boolean union;
        private transient ListState<Long> state;
        private transient List<Long> buffer;

        public BufferFn(boolean union) {
            this.union = union;
        }

        @Override
        public Long map(Long v) {
            buffer.add(v);
            if (buffer.size() > 16) {
                buffer.remove(0);
            }
            return v;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            state.update(new ArrayList<>(buffer));
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            ListStateDescriptor<Long> d = new ListStateDescriptor<>("buffer", Types.LONG);
            state = union
                    ? context.getOperatorStateStore().getUnionListState(d)
                    : context.getOperatorStateStore().getListState(d);
            buffer = new ArrayList<>();
            for (Long x : state.get()) {
                buffer.add(x);
            }
        }
    }
}
