package org.flinkjobgraph.restore;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/** Flink 2.x: legacy functions live in ...legacy packages; Sink.createWriter(WriterInitContext). */
public class CompatImpl extends Compat120Plus {

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
