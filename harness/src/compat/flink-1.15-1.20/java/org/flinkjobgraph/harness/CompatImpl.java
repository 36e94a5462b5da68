package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.Arrays;

/**
 * Flink 1.15 - 1.20: all but the collection source is in Compat115Plus (the sink V2 interfaces
 * of these lines: SinksV2; iterations: Compat's defaults).
 */
public class CompatImpl extends Compat115Plus {

    @Override
    public SingleOutputStreamOperator<Long> legacyCollectionSource(StreamExecutionEnvironment env) {
        // fromElements switched to a FLIP-27 source in 1.19; fromCollection(Collection) stays
        // a legacy "Collection Source" up to 1.20
        return env.fromCollection(Arrays.asList(1L, 2L, 3L));
    }
}
