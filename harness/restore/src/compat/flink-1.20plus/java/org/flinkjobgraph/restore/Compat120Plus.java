package org.flinkjobgraph.restore;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.windowing.assigners.TumblingProcessingTimeWindows;

import java.time.Duration;
import java.util.Collection;
import java.util.Collections;

/**
 * Shared by Flink 1.20 and 2.x: DataGeneratorSource, CheckpointingOptions, Duration windows, the
 * sink V2 DiscardingSink and SupportsWriterState.
 */
public abstract class Compat120Plus implements Compat {

    /** Sequence generator of the FLIP-27 source (counts what it emits). */
    public static final class Gen implements GeneratorFunction<Long, Long> {
        @Override
        public Long map(Long v) {
            Fns.EMITTED.incrementAndGet();
            return v;
        }
    }

    @Override
    public SingleOutputStreamOperator<Long> flip27Source(StreamExecutionEnvironment env, int rate, String name) {
        DataGeneratorSource<Long> src =
                new DataGeneratorSource<>(new Gen(), Long.MAX_VALUE, RateLimiterStrategy.perSecond(rate), Types.LONG);
        return env.fromSource(src, WatermarkStrategy.noWatermarks(), name);
    }

    @Override
    public DataStreamSink<Long> discardingSink(DataStream<Long> in) {
        return in.sinkTo(new org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<>());
    }

    @Override
    public <K> SingleOutputStreamOperator<Long> tumblingReduce(KeyedStream<Long, K> in) {
        return in.window(TumblingProcessingTimeWindows.of(Duration.ofMinutes(10))).reduce(new Fns.SumReduce());
    }

    @Override
    public void retainCheckpoints(Configuration c) {
        c.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofHours(1));
        c.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
    }

    // ---------------------------------------------------------------- stateful sink V2

    static final class Writer extends Fns.CountingWriter implements StatefulSinkWriter<Long, Long> {
        Writer(Collection<Long> restored) {
            super(restored);
        }
    }

    /**
     * The sink with writer state (SupportsWriterState). Abstract because 1.20's Sink still has the
     * abstract createWriter(InitContext), which 2.x no longer knows: each line's CompatImpl makes
     * the concrete class.
     */
    public abstract static class CountingSink extends Fns.CountingSinkBase
            implements Sink<Long>, SupportsWriterState<Long, Long> {
        @Override
        public SinkWriter<Long> createWriter(WriterInitContext context) {
            return new Writer(Collections.emptyList());
        }

        @Override
        public StatefulSinkWriter<Long, Long> restoreWriter(WriterInitContext context, Collection<Long> state) {
            return new Writer(state);
        }
    }
}
