package org.flinkjobgraph.harness;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.TwoPhaseCommittingSink;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.WithPostCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.WithPreCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.WithPreWriteTopology;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.IterativeStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Flink 1.15 - 1.20: old packages for source/sink functions, With*Topology sinks, iterations. */
public class CompatImpl extends Compat115Plus {

    @Override
    public SingleOutputStreamOperator<Long> legacyCollectionSource(StreamExecutionEnvironment env) {
        // fromElements switched to a FLIP-27 source in 1.19; fromCollection(Collection) stays
        // a legacy "Collection Source" up to 1.20
        return env.fromCollection(Arrays.asList(1L, 2L, 3L));
    }

    // ---------------------------------------------------------------- sink V2

    public static class StrSer implements SimpleVersionedSerializer<String>, java.io.Serializable {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String deserialize(int version, byte[] b) throws IOException {
            return new String(b, StandardCharsets.UTF_8);
        }
    }

    public static class IdMsg implements MapFunction<CommittableMessage<String>, CommittableMessage<String>> {
        @Override
        public CommittableMessage<String> map(CommittableMessage<String> v) {
            return v;
        }
    }

    public static class PlainSink implements Sink<Long> {
        @Override
        public SinkWriter<Long> createWriter(InitContext context) {
            throw new UnsupportedOperationException();
        }
    }

    public static class PreWriteSink extends PlainSink implements WithPreWriteTopology<Long> {
        @Override
        public DataStream<Long> addPreWriteTopology(DataStream<Long> in) {
            return in.map(new Fns.MapFn());
        }
    }

    public static class CommitterSink implements TwoPhaseCommittingSink<Long, String> {
        @Override
        public PrecommittingSinkWriter<Long, String> createWriter(InitContext context) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Committer<String> createCommitter() {
            throw new UnsupportedOperationException();
        }

        @Override
        public SimpleVersionedSerializer<String> getCommittableSerializer() {
            return new StrSer();
        }
    }

    public static class FullSink extends CommitterSink
            implements WithPreWriteTopology<Long>,
                    WithPreCommitTopology<Long, String>,
                    WithPostCommitTopology<Long, String> {
        @Override
        public DataStream<Long> addPreWriteTopology(DataStream<Long> in) {
            return in.rebalance().filter(new Fns.FilterFn());
        }

        @Override
        public DataStream<CommittableMessage<String>> addPreCommitTopology(
                DataStream<CommittableMessage<String>> c) {
            return c.map(new IdMsg()).returns(c.getType());
        }

        @Override
        public void addPostCommitTopology(DataStream<CommittableMessage<String>> c) {
            c.global().map(new IdMsg()).returns(c.getType());
        }
    }

    static final String DISCARDING_V2 = "org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink";

    static boolean hasClass(String name) {
        try {
            Class.forName(name);
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    @Override
    public List<String> sinkV2Kinds() {
        List<String> k = new ArrayList<>(Arrays.asList("plain", "plain", "pre-write", "committer", "full topology"));
        if (hasClass(DISCARDING_V2)) {
            k.add("DiscardingSink");
        }
        return k;
    }

    @Override
    @SuppressWarnings("unchecked")
    public DataStreamSink<Long> sinkV2(DataStream<Long> in, String kind) {
        switch (kind) {
            case "plain": return in.sinkTo(new PlainSink());
            case "pre-write": return in.sinkTo(new PreWriteSink());
            case "committer": return in.sinkTo(new CommitterSink());
            case "full topology": return in.sinkTo(new FullSink());
            case "DiscardingSink":
                try {
                    return in.sinkTo((Sink<Long>) Class.forName(DISCARDING_V2).getConstructor().newInstance());
                } catch (ReflectiveOperationException e) {
                    throw new RuntimeException(e);
                }
            default: throw new IllegalArgumentException(kind);
        }
    }

    // ---------------------------------------------------------------- iterations

    @Override
    public boolean hasIterations() {
        return true;
    }

    @Override
    public DataStream<Long> iterate(DataStream<Long> in) {
        return in.iterate();
    }

    @Override
    @SuppressWarnings("unchecked")
    public void closeWith(DataStream<Long> head, DataStream<Long> feedback) {
        ((IterativeStream<Long>) head).closeWith(feedback);
    }
}
