package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.streaming.api.windowing.windows.GlobalWindow;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.training.jobgraphtest.Opaque;
import org.apache.flink.training.jobgraphtest.Ride;
import org.apache.flink.util.Collector;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A job that declares state in every style users write (tests/test_declared_states.py): in
 * {@code open()} with a class literal, a {@code TypeHint}, {@code Types.*}, {@code
 * TypeInformation.of}, TTL ({@link StateStylesLine.OpenStylesFn}, per Flink line: open's signature
 * differs); a descriptor held in a field, one built in a helper method, a name built at run time, a
 * loop over a collection and a type from a method's argument ({@link FieldAndHelperFn}, registered
 * lazily in {@code flatMap}); a base class whose {@code open()} calls an overridden method ({@link
 * BaseRegisteredFn}); a CheckpointedFunction with operator list and union list state ({@link
 * Throttle}); broadcast state ({@link #RULES}); window aggregate and reduce (Flink's own window
 * state and the count trigger's), a window function's per-window and global state, serializer
 * instances ({@code StringSerializer.INSTANCE}, {@code new ListSerializer<>(...)}), a user's own
 * operator ({@link CountingOperator}). Its POJO lives under {@code org.apache.flink.training} in the job
 * jar.
 *
 * <p>{@code args[0]}: {@code export} (default: {@code execute()}, which the exporter captures) or
 * {@code run:DIR}: runs on a MiniCluster (flink-clients on the class path) until every state holds
 * values, stops with a canonical savepoint into DIR and prints {@code SAVEPOINT <path>}: the states
 * Flink really writes, the test's ground truth.
 */
public final class StateStylesJob {
    private StateStylesJob() {}

    /** The broadcast state, a static field of the job as Flink's documentation writes it. */
    static final MapStateDescriptor<String, Ride> RULES =
            new MapStateDescriptor<>("rules", Types.STRING, TypeInformation.of(Ride.class));

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "export";
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StateStylesLine.registerKryo(env, Opaque.class);
        DataStream<Long> numbers = env.fromSequence(0, Long.MAX_VALUE).uid("numbers").name("numbers")
                .map(new Throttle()).uid("throttle").name("throttle");
        KeyedStream<Long, Long> keyed = numbers.keyBy(new Mod4());
        sink(keyed.process(new StateStylesLine.OpenStylesFn()).uid("open-styles").name("open-styles"));
        sink(keyed.flatMap(new FieldAndHelperFn()).uid("field-helper").name("field-helper"));
        sink(keyed.map(new BaseRegisteredFn()).uid("base-class").name("base-class"));
        sink(keyed.connect(numbers.broadcast(RULES)).process(new RulesFn()).uid("broadcast").name("broadcast"));
        sink(keyed.countWindow(1_000_000).aggregate(new AvgAgg()).uid("window-aggregate").name("window-aggregate"));
        sink(keyed.countWindow(1_000_000).reduce(new SumReduce()).uid("window-reduce").name("window-reduce"));
        sink(keyed.countWindow(2).process(new WindowStateFn()).uid("window-state").name("window-state"));
        sink(keyed.transform("custom-operator", Types.LONG, new CountingOperator()).uid("custom-operator"));
        if (mode.startsWith("run:")) {
            run(env, mode.substring("run:".length()));
        } else {
            env.execute("state-styles");
        }
    }

    static <T> void sink(DataStream<T> s) {
        s.filter(new Never<>()).print();
    }

    static void run(StreamExecutionEnvironment env, String dir) throws Exception {
        JobClient client = env.executeAsync("state-styles");
        long until = System.currentTimeMillis() + 60_000;
        while (client.getJobStatus().get() != JobStatus.RUNNING) {
            if (System.currentTimeMillis() > until) {
                throw new IllegalStateException("the job did not start: " + client.getJobStatus().get());
            }
            Thread.sleep(100);
        }
        Thread.sleep(Long.parseLong(System.getProperty("fill.ms", "4000")));
        String path = client.stopWithSavepoint(false, dir, SavepointFormatType.CANONICAL).get(120, TimeUnit.SECONDS);
        System.out.println("SAVEPOINT " + path);
    }

    /** Key: the number modulo 4. */
    public static final class Mod4 implements KeySelector<Long, Long> {
        @Override
        public Long getKey(Long v) {
            return v % 4;
        }
    }

    /** Keeps nothing (the sinks never get a record). */
    public static final class Never<T> implements FilterFunction<T> {
        @Override
        public boolean filter(T v) {
            return false;
        }
    }

    /** Sum of longs (a reducing state's function). */
    public static final class SumReduce implements ReduceFunction<Long> {
        @Override
        public Long reduce(Long a, Long b) {
            return a + b;
        }
    }

    /** Average as (sum, count) (an aggregating state's function). */
    public static final class AvgAgg implements AggregateFunction<Long, Tuple2<Long, Long>, Double> {
        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Long v, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + v, acc.f1 + 1);
        }

        @Override
        public Double getResult(Tuple2<Long, Long> acc) {
            return acc.f1 == 0 ? 0.0 : (double) acc.f0 / acc.f1;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    /**
     * Slows the numbers down (the states fill within a few seconds without a flood of records) and
     * keeps operator state: a CheckpointedFunction with a list and a union list, registered in
     * {@code initializeState}.
     */
    public static final class Throttle implements MapFunction<Long, Long>, CheckpointedFunction {
        private transient ListState<Long> offsets;
        private transient ListState<Long> marks;
        private long last;

        @Override
        public Long map(Long v) throws Exception {
            Thread.sleep(1);
            last = v;
            return v;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            offsets.update(Collections.singletonList(last));
            marks.update(Collections.singletonList(last));
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            offsets = context.getOperatorStateStore().getListState(new ListStateDescriptor<>("offsets", Long.class));
            marks = context.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("marks", Types.LONG));
        }
    }

    /**
     * States registered lazily on the first record: a descriptor held in a field, one built in a
     * helper method, a Kryo class (registered with Kryo in main()), a name built at run time, a loop
     * over a collection, a type from a method's argument, one in a lambda (the last four: unresolved).
     */
    public static final class FieldAndHelperFn extends RichFlatMapFunction<Long, Long> {
        private final ValueStateDescriptor<Ride> lastDesc = new ValueStateDescriptor<>("last-ride", Ride.class);
        private final List<String> extraNames = Arrays.asList("extra-a", "extra-b");
        private transient ValueState<Ride> last;
        private transient ListState<Long> seen;
        private transient ValueState<Opaque> opaque;
        private transient MapState<String, List<Long>> bySerializer;
        private transient ValueState<Ride> memoised;

        @Override
        public void flatMap(Long v, Collector<Long> out) throws Exception {
            if (last == null) {
                last = getRuntimeContext().getState(lastDesc);
                memoised = getRuntimeContext().getState(new ValueStateDescriptor<>("memoised", RideInfo.info()));
                bySerializer = getRuntimeContext().getMapState(new MapStateDescriptor<>(
                        "by-serializer", StringSerializer.INSTANCE, new ListSerializer<>(LongSerializer.INSTANCE)));
                seen = getRuntimeContext().getListState(seenDescriptor("ids"));
                opaque = getRuntimeContext().getState(new ValueStateDescriptor<>("opaque", Opaque.class));
                getRuntimeContext().getState(new ValueStateDescriptor<>("dyn-" + v.getClass().getSimpleName(), Long.class))
                        .update(v);
                for (String n : extraNames) {
                    getRuntimeContext().getState(new ValueStateDescriptor<>(n, Long.class)).update(v);
                }
                registerTyped("typed", TypeInformation.of(v.getClass()), v);
                Consumer<Long> viaLambda = x -> {
                    try {
                        getRuntimeContext().getState(new ValueStateDescriptor<>("via-lambda", Long.class)).update(x);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                };
                viaLambda.accept(v);
            }
            last.update(new Ride(v, v * 2));
            memoised.update(new Ride(v, v));
            seen.add(v);
            opaque.update(new Opaque(v));
            bySerializer.put("k", Collections.singletonList(v));
        }

        private static ListStateDescriptor<Long> seenDescriptor(String suffix) {
            return new ListStateDescriptor<>("seen-" + suffix, Long.class);
        }

        private <T> void registerTyped(String name, TypeInformation<T> type, Object value) throws Exception {
            ValueState<T> s = getRuntimeContext().getState(new ValueStateDescriptor<>(name, type));
            @SuppressWarnings("unchecked")
            T t = (T) value;
            s.update(t);
        }
    }

    /**
     * A type information a class memoises in a static field on first use (as jobs keep a parsed Avro
     * schema): main() never touches the class, so the export does not initialise it.
     */
    public static final class RideInfo {
        private static TypeInformation<Ride> info;

        private RideInfo() {}

        static synchronized TypeInformation<Ride> info() {
            if (info == null) {
                info = TypeInformation.of(Ride.class);
            }
            return info;
        }
    }

    /** Registers in {@code register()}, which the base class's {@code open()} calls. */
    public static final class BaseRegisteredFn extends StateStylesLine.RegisteringBase<Long, Long> {
        private transient MapState<String, Ride> byName;

        @Override
        protected void register() throws Exception {
            byName = getRuntimeContext().getMapState(new MapStateDescriptor<>("by-name", String.class, Ride.class));
        }

        @Override
        public Long map(Long v) throws Exception {
            byName.put("d" + (v % 3), new Ride(v, v));
            return v;
        }
    }

    /** A window function with per-window and global keyed state (its context's KeyedStateStores). */
    public static final class WindowStateFn extends ProcessWindowFunction<Long, Long, Long, GlobalWindow> {
        @Override
        public void process(Long key, Context ctx, Iterable<Long> elements, Collector<Long> out) throws Exception {
            ctx.windowState().getState(new ValueStateDescriptor<>("per-window", Long.class)).update(key);
            ctx.globalState().getListState(new ListStateDescriptor<>("global", Types.STRING)).add("k" + key);
        }
    }

    /**
     * A user's own operator: keyed state through {@code getPartitionedState} in {@code open()}, a
     * timer service of its own, operator state in {@code initializeState}.
     */
    public static final class CountingOperator extends AbstractStreamOperator<Long>
            implements OneInputStreamOperator<Long, Long>, Triggerable<Long, VoidNamespace> {
        private transient ValueState<Long> seen;

        @Override
        public void initializeState(StateInitializationContext context) throws Exception {
            super.initializeState(context);
            context.getOperatorStateStore().getListState(new ListStateDescriptor<>("op-list", Long.class));
        }

        @Override
        public void open() throws Exception {
            super.open();
            seen = getPartitionedState(new ValueStateDescriptor<>("op-seen", Long.class));
            getInternalTimerService("op-timers", VoidNamespaceSerializer.INSTANCE, this);
        }

        @Override
        public void processElement(StreamRecord<Long> record) throws Exception {
            seen.update(record.getValue());
            output.collect(record);
        }

        @Override
        public void onEventTime(InternalTimer<Long, VoidNamespace> timer) {}

        @Override
        public void onProcessingTime(InternalTimer<Long, VoidNamespace> timer) {}
    }

    /** Keyed broadcast: writes the broadcast state, reads it per record. */
    public static final class RulesFn extends KeyedBroadcastProcessFunction<Long, Long, Long, Long> {
        @Override
        public void processElement(Long v, ReadOnlyContext ctx, Collector<Long> out) throws Exception {
            ctx.getBroadcastState(RULES).get("r0");
        }

        @Override
        public void processBroadcastElement(Long v, Context ctx, Collector<Long> out) throws Exception {
            ctx.getBroadcastState(RULES).put("r" + (v % 2), new Ride(v, v));
        }
    }
}
