package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.transformations.StreamExchangeMode;

/** The exchange mode enum of a PartitionTransformation from Flink 1.15 on: StreamExchangeMode. */
final class ExchangeModes {
    private ExchangeModes() {}

    static Class<StreamExchangeMode> type() {
        return StreamExchangeMode.class;
    }
}
