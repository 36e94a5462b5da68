package org.flinkjobgraph.harness;

import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.streaming.api.connector.sink2.SupportsPostCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology;
import org.apache.flink.streaming.api.datastream.DataStream;

/**
 * The sink V2 kinds of the programs (Compat115Plus.sinkV2) with the interfaces of Flink 2.x:
 * SupportsCommitter and Supports*Topology. What they do is Compat115Plus.SinkV2's.
 */
final class SinksV2 {
    private SinksV2() {}

    public static class PlainSink extends Compat115Plus.SinkV2<WriterInitContext> implements Sink<Long> {}

    public static class PreWriteSink extends PlainSink implements SupportsPreWriteTopology<Long> {}

    public static class CommitterSink extends PlainSink implements SupportsCommitter<String> {
        @Override
        public Committer<String> createCommitter(CommitterInitContext context) {
            throw new UnsupportedOperationException();
        }
    }

    public static class FullSink extends CommitterSink
            implements SupportsPreWriteTopology<Long>,
                    SupportsPreCommitTopology<String, String>,
                    SupportsPostCommitTopology<String> {
        @Override
        public DataStream<Long> addPreWriteTopology(DataStream<Long> in) {
            return rebalancedFilter(in);
        }
    }
}
