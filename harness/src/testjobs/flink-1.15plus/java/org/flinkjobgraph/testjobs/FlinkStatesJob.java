package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.eventtime.SerializableTimestampAssigner;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.cep.CEP;
import org.apache.flink.cep.functions.PatternProcessFunction;
import org.apache.flink.cep.pattern.Pattern;
import org.apache.flink.cep.pattern.conditions.SimpleCondition;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.AsyncDataStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.async.AsyncFunction;
import org.apache.flink.streaming.api.functions.async.ResultFuture;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.util.Collector;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A job whose states are Flink's own operators' (tests/test_declared_states.py): a keyed reduce,
 * a session window (merging: its merging-window-set), an interval join's buffers, a CEP pattern,
 * async I/O, a FileSink (sink V2 writer and committer state). Same modes as {@link StateStylesJob}: {@code export} or {@code run:DIR}.
 */
public final class FlinkStatesJob {
    private FlinkStatesJob() {}

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "export";
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        DataStream<Long> numbers = env.fromSequence(0, Long.MAX_VALUE).uid("numbers").name("numbers")
                .map(new StateStylesJob.Throttle()).uid("throttle").name("throttle")
                .assignTimestampsAndWatermarks(WatermarkStrategy.<Long>forMonotonousTimestamps()
                        .withTimestampAssigner(new ValueAsTime()))
                .uid("timestamps").name("timestamps");
        KeyedStream<Long, Long> keyed = numbers.keyBy(new StateStylesJob.Mod4());
        StateStylesJob.sink(keyed.reduce(new StateStylesJob.SumReduce()).uid("reduce").name("reduce"));
        StateStylesJob.sink(keyed.window(StateStylesLine.sessions()).reduce(new StateStylesJob.SumReduce())
                .uid("session").name("session"));
        StateStylesJob.sink(StateStylesLine.between(keyed.intervalJoin(numbers.keyBy(new StateStylesJob.Mod4())))
                .process(new Join()).uid("interval-join").name("interval-join"));
        Pattern<Long, Long> pattern = Pattern.<Long>begin("neg").where(new Negative());
        StateStylesJob.sink(CEP.pattern(keyed, pattern).inProcessingTime().process(new Matches())
                .uid("cep").name("cep"));
        StateStylesJob.sink(AsyncDataStream.unorderedWait(numbers, new Echo(), 10, TimeUnit.SECONDS)
                .uid("async").name("async"));
        String out = mode.startsWith("run:") ? mode.substring("run:".length()) + "/files" : "/nonexistent/never-written";
        numbers.sinkTo(FileSink.forRowFormat(new Path(out), new SimpleStringEncoder<Long>()).build())
                .uid("files").name("files");
        if (mode.startsWith("run:")) {
            StateStylesJob.run(env, mode.substring("run:".length()));
        } else {
            env.execute("flink-states");
        }
    }

    /** The number as its event time. */
    public static final class ValueAsTime implements SerializableTimestampAssigner<Long> {
        @Override
        public long extractTimestamp(Long v, long previous) {
            return v;
        }
    }

    /** Joins equal numbers. */
    public static final class Join extends ProcessJoinFunction<Long, Long, Long> {
        @Override
        public void processElement(Long a, Long b, Context ctx, Collector<Long> out) {
            out.collect(a + b);
        }
    }

    /** Never matches. */
    public static final class Negative extends SimpleCondition<Long> {
        @Override
        public boolean filter(Long v) {
            return v < 0;
        }
    }

    /** The matches (none). */
    public static final class Matches extends PatternProcessFunction<Long, Long> {
        @Override
        public void processMatch(Map<String, List<Long>> match, Context ctx, Collector<Long> out) {
            out.collect(match.get("neg").get(0));
        }
    }

    /** Answers at once. */
    public static final class Echo implements AsyncFunction<Long, Long> {
        @Override
        public void asyncInvoke(Long v, ResultFuture<Long> result) {
            result.complete(Collections.singletonList(v));
        }
    }
}
