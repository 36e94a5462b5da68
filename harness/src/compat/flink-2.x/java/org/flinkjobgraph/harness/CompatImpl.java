package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Flink 2.x: all but the collection source is in Compat115Plus (the sink V2 interfaces of these
 * lines: SinksV2; no iterations: DataStream.iterate is gone).
 */
public class CompatImpl extends Compat115Plus {

    @Override
    public SingleOutputStreamOperator<Long> legacyCollectionSource(StreamExecutionEnvironment env) {
        return env.fromElements(1L, 2L, 3L);
    }
}
