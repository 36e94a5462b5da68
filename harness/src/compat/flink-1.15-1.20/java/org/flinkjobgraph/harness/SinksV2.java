package org.flinkjobgraph.harness;

import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.TwoPhaseCommittingSink;
import org.apache.flink.streaming.api.connector.sink2.WithPostCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.WithPreCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.WithPreWriteTopology;
import org.apache.flink.streaming.api.datastream.DataStream;

/**
 * The sink V2 kinds of the programs (Compat115Plus.sinkV2) with the interfaces of Flink 1.15 -
 * 1.20: TwoPhaseCommittingSink and With*Topology. What they do is Compat115Plus.SinkV2's.
 */
final class SinksV2 {
    private SinksV2() {}

    public static class PlainSink extends Compat115Plus.SinkV2<Sink.InitContext> implements Sink<Long> {}

    public static class PreWriteSink extends PlainSink implements WithPreWriteTopology<Long> {}

    public static class CommitterSink extends Compat115Plus.SinkV2<Sink.InitContext>
            implements TwoPhaseCommittingSink<Long, String> {
        @Override
        public PrecommittingSinkWriter<Long, String> createWriter(Sink.InitContext context) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Committer<String> createCommitter() {
            throw new UnsupportedOperationException();
        }
    }

    public static class FullSink extends CommitterSink
            implements WithPreWriteTopology<Long>, WithPreCommitTopology<Long, String>, WithPostCommitTopology<Long, String> {
        @Override
        public DataStream<Long> addPreWriteTopology(DataStream<Long> in) {
            return rebalancedFilter(in);
        }
    }
}
