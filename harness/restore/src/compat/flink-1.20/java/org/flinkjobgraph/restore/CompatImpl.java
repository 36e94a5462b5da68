package org.flinkjobgraph.restore;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;
import org.apache.flink.streaming.api.functions.source.RichSourceFunction;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/** Flink 1.20: old legacy packages; Sink.createWriter(InitContext) is abstract. */
public class CompatImpl extends Compat120Plus {

    /** Shared body of the legacy sources: rate-limited counter with operator ListState "offset". */
    static final class Body implements java.io.Serializable {
        final int rate;
        volatile boolean running = true;
        transient ListState<Long> state;
        long next;

        Body(int rate) {
            this.rate = rate;
        }

        void run(org.apache.flink.streaming.api.functions.source.SourceFunction.SourceContext<Long> ctx)
                throws Exception {
            long sleep = Math.max(1, 1000L / rate);
            while (running) {
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(next++);
                }
                Fns.EMITTED.incrementAndGet();
                Thread.sleep(sleep);
            }
        }

        void snapshot() throws Exception {
            state.update(Collections.singletonList(next));
        }

        void init(FunctionInitializationContext c) throws Exception {
            state = c.getOperatorStateStore().getListState(new ListStateDescriptor<>("offset", Types.LONG));
            for (Long x : state.get()) {
                next = Math.max(next, x);
            }
        }
    }

    public static final class ParSrc extends RichParallelSourceFunction<Long> implements CheckpointedFunction {
        final Body b;

        ParSrc(int rate) {
            b = new Body(rate);
        }

        @Override
        public void run(SourceContext<Long> ctx) throws Exception {
            b.run(ctx);
        }

        @Override
        public void cancel() {
            b.running = false;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            b.snapshot();
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            b.init(context);
        }
    }

    public static final class Src extends RichSourceFunction<Long> implements CheckpointedFunction {
        final Body b;

        Src(int rate) {
            b = new Body(rate);
        }

        @Override
        public void run(SourceContext<Long> ctx) throws Exception {
            b.run(ctx);
        }

        @Override
        public void cancel() {
            b.running = false;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            b.snapshot();
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            b.init(context);
        }
    }

    public static final class Snk implements SinkFunction<Long> {
        @Override
        public void invoke(Long value, Context context) {}
    }

    @Override
    public SingleOutputStreamOperator<Long> legacySource(StreamExecutionEnvironment env, boolean parallel, int rate) {
        return parallel ? env.addSource(new ParSrc(rate)) : env.addSource(new Src(rate));
    }

    @Override
    public DataStreamSink<Long> legacySink(DataStream<Long> in) {
        return in.addSink(new Snk());
    }

    // ---------------------------------------------------------------- stateful sink V2

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
        public Long deserialize(int version, byte[] b) throws IOException {
            return ByteBuffer.wrap(b).getLong();
        }
    }

    public static final class CountingWriter implements StatefulSinkWriter<Long, Long> {
        long count;

        CountingWriter(Collection<Long> restored) {
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

        @Override
        public List<Long> snapshotState(long checkpointId) {
            return Collections.singletonList(count);
        }

        @Override
        public void close() {}
    }

    public static final class StatefulSink implements Sink<Long>, SupportsWriterState<Long, Long> {
        @Override
        public SinkWriter<Long> createWriter(InitContext context) {
            return new CountingWriter(Collections.emptyList());
        }

        @Override
        public SinkWriter<Long> createWriter(WriterInitContext context) {
            return new CountingWriter(Collections.emptyList());
        }

        @Override
        public StatefulSinkWriter<Long, Long> restoreWriter(WriterInitContext context, Collection<Long> state) {
            return new CountingWriter(state);
        }

        @Override
        public SimpleVersionedSerializer<Long> getWriterStateSerializer() {
            return new LongSer();
        }
    }

    @Override
    public DataStreamSink<Long> statefulSink(DataStream<Long> in) {
        return in.sinkTo(new StatefulSink());
    }
}
