package org.flinkjobgraph.restore;

import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;

/** Flink 2.x: everything comes from Compat120Plus; Sink has only createWriter(WriterInitContext). */
public class CompatImpl extends Compat120Plus {

    public static final class StatefulSink extends CountingSink {}

    @Override
    public DataStreamSink<Long> statefulSink(DataStream<Long> in) {
        return in.sinkTo(new StatefulSink());
    }
}
