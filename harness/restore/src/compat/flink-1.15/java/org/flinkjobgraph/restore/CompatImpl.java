package org.flinkjobgraph.restore;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSink;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.lib.util.IteratorSourceReader;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.CheckpointConfig;
import org.apache.flink.streaming.api.environment.ExecutionCheckpointingOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.windowing.assigners.TumblingProcessingTimeWindows;
import org.apache.flink.streaming.api.windowing.time.Time;
import org.apache.flink.util.NumberSequenceIterator;

import java.time.Duration;
import java.util.Collection;
import java.util.Collections;

/**
 * Flink 1.15: no DataGeneratorSource (a throttled NumberSequenceSource instead), no sink V2
 * DiscardingSink, StatefulSink instead of SupportsWriterState, ExecutionCheckpointingOptions
 * instead of CheckpointingOptions.
 */
public class CompatImpl implements Compat {

    /** NumberSequenceSource whose reader emits at most {@code rate} records/s per subtask. */
    public static final class SlowSequence extends NumberSequenceSource {
        final int rate;

        SlowSequence(int rate) {
            super(0, Long.MAX_VALUE);
            this.rate = rate;
        }

        @Override
        public SourceReader<Long, NumberSequenceSource.NumberSequenceSplit> createReader(SourceReaderContext ctx) {
            return new Throttled(ctx, Math.max(1, 1000 / rate));
        }
    }

    /**
     * NumberSequenceSource's own reader (the IteratorSourceReader its createReader makes), sleeping
     * before each poll and counting what it emits.
     */
    static final class Throttled
            extends IteratorSourceReader<Long, NumberSequenceIterator, NumberSequenceSource.NumberSequenceSplit> {
        final long sleepMs;

        Throttled(SourceReaderContext ctx, long sleepMs) {
            super(ctx);
            this.sleepMs = sleepMs;
        }

        @Override
        public InputStatus pollNext(ReaderOutput<Long> out) {
            try {
                Thread.sleep(sleepMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            InputStatus st = super.pollNext(out);
            if (st == InputStatus.MORE_AVAILABLE) {
                Fns.EMITTED.incrementAndGet();
            }
            return st;
        }
    }

    @Override
    public SingleOutputStreamOperator<Long> flip27Source(StreamExecutionEnvironment env, int rate, String name) {
        return env.fromSource(new SlowSequence(rate), WatermarkStrategy.noWatermarks(), name);
    }

    @Override
    public <K> SingleOutputStreamOperator<Long> tumblingReduce(KeyedStream<Long, K> in) {
        return in.window(TumblingProcessingTimeWindows.of(Time.minutes(10))).reduce(new Fns.SumReduce());
    }

    /**
     * 1.15's CheckpointConfig.configure reads only the checkpoint directory from the job's
     * configuration (storage type and inline threshold would silently fall back to the defaults),
     * so the storage is set on the environment, as 1.15 users do.
     */
    @Override
    public void configureEnv(StreamExecutionEnvironment env, Configuration conf) {
        String storage = conf.get(CheckpointingOptions.CHECKPOINT_STORAGE);
        if ("jobmanager".equals(storage)) {
            // with the checkpoint directory, as 1.20+ reads it from the configuration: without it
            // a retained checkpoint is not externally addressable (no _metadata file to restore from)
            env.getCheckpointConfig().setCheckpointStorage(conf.contains(CheckpointingOptions.CHECKPOINTS_DIRECTORY)
                    ? new JobManagerCheckpointStorage(conf.get(CheckpointingOptions.CHECKPOINTS_DIRECTORY))
                    : new JobManagerCheckpointStorage());
        } else if (conf.contains(CheckpointingOptions.CHECKPOINTS_DIRECTORY)) {
            int threshold = (int) conf.get(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD).getBytes();
            env.getCheckpointConfig().setCheckpointStorage(new FileSystemCheckpointStorage(
                    java.net.URI.create(conf.get(CheckpointingOptions.CHECKPOINTS_DIRECTORY)), threshold));
        }
    }

    @Override
    public void retainCheckpoints(Configuration c) {
        c.set(ExecutionCheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofHours(1));
        c.set(ExecutionCheckpointingOptions.EXTERNALIZED_CHECKPOINT,
                CheckpointConfig.ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION);
    }

    // ---------------------------------------------------------------- stateful sink V2

    /** The writer of the sink with writer state: Fns.CountingWriter as 1.15's StatefulSinkWriter. */
    static final class Writer extends Fns.CountingWriter implements StatefulSink.StatefulSinkWriter<Long, Long> {
        Writer(Collection<Long> restored) {
            super(restored);
        }
    }

    public static final class CountingSink extends Fns.CountingSinkBase implements StatefulSink<Long, Long> {
        @Override
        public StatefulSinkWriter<Long, Long> createWriter(InitContext context) {
            return new Writer(Collections.emptyList());
        }

        @Override
        public StatefulSinkWriter<Long, Long> restoreWriter(InitContext context, Collection<Long> state) {
            return new Writer(state);
        }
    }

    /**
     * Sink V2 that keeps nothing (1.15 has no sink V2 DiscardingSink): the counting writer, whose
     * count no one asks for (not a StatefulSink, so nothing snapshots it).
     */
    public static final class NoopSink implements Sink<Long> {
        @Override
        public SinkWriter<Long> createWriter(InitContext context) {
            return new Writer(Collections.emptyList());
        }
    }

    @Override
    public DataStreamSink<Long> discardingSink(DataStream<Long> in) {
        return in.sinkTo(new NoopSink());
    }

    @Override
    public DataStreamSink<Long> statefulSink(DataStream<Long> in) {
        return in.sinkTo(new CountingSink());
    }
}
