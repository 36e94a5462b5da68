package org.flinkjobgraph.restore;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * What differs between Flink lines for the restore harness (besides the packages of the legacy
 * source/sink functions, which {@link org.flinkjobgraph.harness.LegacyApi} names): sink V2
 * interfaces, the FLIP-27 generator source, window assigner factories and the configuration
 * options for retained checkpoints. One implementation per line family lives in
 * src/compat/flink-&lt;lines&gt;/java (class CompatImpl: flink-1.15, flink-1.20, flink-2.x; 1.20 and
 * 2.x share Compat120Plus in flink-1.20plus), selected by the Maven profile.
 */
public interface Compat {
    /** A rate-limited FLIP-27 source (split state + enumerator state in the savepoint). */
    SingleOutputStreamOperator<Long> flip27Source(StreamExecutionEnvironment env, int rate, String name);

    /** Flink's sink V2 DiscardingSink (stateless writer). */
    DataStreamSink<Long> discardingSink(DataStream<Long> in);

    /** A sink V2 whose writer keeps state. */
    DataStreamSink<Long> statefulSink(DataStream<Long> in);

    /** keyBy(...).window(TumblingProcessingTimeWindows of 10 min).reduce(sum). */
    <K> SingleOutputStreamOperator<Long> tumblingReduce(KeyedStream<Long, K> in);

    /** Anything the job configuration alone does not reach in this line (default: nothing). */
    default void configureEnv(StreamExecutionEnvironment env, Configuration conf) {}

    /** Periodic checkpointing (long interval: checkpoints are triggered by hand) retained on cancel. */
    void retainCheckpoints(Configuration c);
}
