package statetypes.user;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.datastream.WindowedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.windowing.assigners.GlobalWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingProcessingTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.Window;
//#if LEGACY_API
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.streaming.api.windowing.time.Time;

import java.util.List;
import java.util.concurrent.CompletableFuture;
//#else
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

import java.time.Duration;
//#endif

/** The parts of the job whose API differs between Flink lines (sources, sinks, window sizes). */
final class Api {
    private Api() {}

//#if LEGACY_API
    /** Flink 1.15 has no DataGeneratorSource: a NumberSequenceSource whose readers sleep. */
    public static final class Numbers extends NumberSequenceSource {
        private final long sleepMs;

        public Numbers(long sleepMs) {
            super(0, Long.MAX_VALUE);
            this.sleepMs = sleepMs;
        }

        @Override
        public SourceReader<Long, NumberSequenceSource.NumberSequenceSplit> createReader(SourceReaderContext ctx) {
            return new Slow(super.createReader(ctx), sleepMs);
        }
    }

    static final class Slow implements SourceReader<Long, NumberSequenceSource.NumberSequenceSplit> {
        private final SourceReader<Long, NumberSequenceSource.NumberSequenceSplit> d;
        private final long sleepMs;

        Slow(SourceReader<Long, NumberSequenceSource.NumberSequenceSplit> d, long sleepMs) {
            this.d = d;
            this.sleepMs = sleepMs;
        }

        @Override
        public void start() {
            d.start();
        }

        @Override
        public InputStatus pollNext(ReaderOutput<Long> out) throws Exception {
            Thread.sleep(sleepMs);
            InputStatus st = d.pollNext(out);
            if (st == InputStatus.MORE_AVAILABLE) {
                Probe.count();
            }
            return st;
        }

        @Override
        public List<NumberSequenceSource.NumberSequenceSplit> snapshotState(long checkpointId) {
            return d.snapshotState(checkpointId);
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return d.isAvailable();
        }

        @Override
        public void addSplits(List<NumberSequenceSource.NumberSequenceSplit> splits) {
            d.addSplits(splits);
        }

        @Override
        public void notifyNoMoreSplits() {
            d.notifyNoMoreSplits();
        }

        @Override
        public void handleSourceEvents(SourceEvent e) {
            d.handleSourceEvents(e);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) throws Exception {
            d.notifyCheckpointComplete(checkpointId);
        }

        @Override
        public void close() throws Exception {
            d.close();
        }
    }

    static SingleOutputStreamOperator<Long> numbers(StreamExecutionEnvironment env, int rate, int parallelism, String name) {
        long sleep = Math.max(1, 1000L * Math.max(1, parallelism) / Math.max(1, rate));
        return env.fromSource(new Numbers(sleep), WatermarkStrategy.noWatermarks(), name);
    }

    /** Sink V2 whose writer drops everything (1.15 has no sink V2 DiscardingSink). */
    public static final class Discard implements Sink<Long> {
        @Override
        public SinkWriter<Long> createWriter(InitContext context) {
            return new SinkWriter<Long>() {
                @Override
                public void write(Long element, Context context) {}

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }

    static void discard(DataStream<Long> s) {
        s.sinkTo(new Discard()).name("Discard");
    }

    static <T> WindowedStream<T, Object, ? extends Window> window(KeyedStream<T, Object> k, String assigner) {
        if ("global".equals(assigner)) {
            return k.window(GlobalWindows.create());
        }
        return k.window(TumblingProcessingTimeWindows.of(Time.hours(1)));
    }
//#else
    /** Counts what it generates (the harness reads the count). */
    public static final class Count implements GeneratorFunction<Long, Long> {
        @Override
        public Long map(Long v) {
            Probe.count();
            return v;
        }
    }

    static SingleOutputStreamOperator<Long> numbers(StreamExecutionEnvironment env, int rate, int parallelism, String name) {
        DataGeneratorSource<Long> src =
                new DataGeneratorSource<>(new Count(), Long.MAX_VALUE, RateLimiterStrategy.perSecond(rate), Types.LONG);
        return env.fromSource(src, WatermarkStrategy.noWatermarks(), name);
    }

    static void discard(DataStream<Long> s) {
        s.sinkTo(new DiscardingSink<>()).name("Discard");
    }

    static <T> WindowedStream<T, Object, ? extends Window> window(KeyedStream<T, Object> k, String assigner) {
        if ("global".equals(assigner)) {
            return k.window(GlobalWindows.create());
        }
        return k.window(TumblingProcessingTimeWindows.of(Duration.ofHours(1)));
    }
//#endif
}
