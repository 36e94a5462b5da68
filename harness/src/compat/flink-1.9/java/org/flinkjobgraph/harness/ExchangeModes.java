package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.transformations.ShuffleMode;

/** The exchange mode enum of a PartitionTransformation in Flink 1.9: ShuffleMode. */
final class ExchangeModes {
    private ExchangeModes() {}

    static Class<ShuffleMode> type() {
        return ShuffleMode.class;
    }
}
