package org.flinkjobgraph.restore;

import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** What differs between Flink 1.x and 2.x for the restore harness (legacy packages, sink V2). */
public interface Compat {
    /** A legacy SourceFunction source with operator ListState "offset", emitting {@code rate}/s. */
    SingleOutputStreamOperator<Long> legacySource(StreamExecutionEnvironment env, boolean parallel, int rate);

    /** A legacy SinkFunction sink (stateless). */
    DataStreamSink<Long> legacySink(DataStream<Long> in);

    /** A sink V2 whose writer keeps state (SupportsWriterState). */
    DataStreamSink<Long> statefulSink(DataStream<Long> in);
}
