package org.flinkjobgraph.restore;

import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;

import java.util.Collections;

/** Flink 1.20: as 2.x (Compat120Plus), but Sink.createWriter(InitContext) is still abstract. */
public class CompatImpl extends Compat120Plus {

    public static final class StatefulSink extends CountingSink {
        @Override
        public SinkWriter<Long> createWriter(InitContext context) {
            return new Writer(Collections.emptyList());
        }
    }

    @Override
    public DataStreamSink<Long> statefulSink(DataStream<Long> in) {
        return in.sinkTo(new StatefulSink());
    }
}
