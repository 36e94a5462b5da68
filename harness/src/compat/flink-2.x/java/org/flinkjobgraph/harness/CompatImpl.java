package org.flinkjobgraph.harness;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.SupportsPostCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Flink 2.x: legacy source/sink functions live in ...legacy packages, no iterations. */
public class CompatImpl extends Compat115Plus {

    @Override
    public SingleOutputStreamOperator<Long> legacyCollectionSource(StreamExecutionEnvironment env) {
        return env.fromElements(1L, 2L, 3L);
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
        public SinkWriter<Long> createWriter(WriterInitContext context) {
            throw new UnsupportedOperationException();
        }
    }

    public static class PreWriteSink extends PlainSink implements SupportsPreWriteTopology<Long> {
        @Override
        public DataStream<Long> addPreWriteTopology(DataStream<Long> in) {
            return in.map(new Fns.MapFn());
        }
    }

    public static class CommitterSink extends PlainSink implements SupportsCommitter<String> {
        @Override
        public Committer<String> createCommitter(CommitterInitContext context) {
            throw new UnsupportedOperationException();
        }

        @Override
        public SimpleVersionedSerializer<String> getCommittableSerializer() {
            return new StrSer();
        }
    }

    public static class FullSink extends CommitterSink
            implements SupportsPreWriteTopology<Long>,
                    SupportsPreCommitTopology<String, String>,
                    SupportsPostCommitTopology<String> {
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
        public SimpleVersionedSerializer<String> getWriteResultSerializer() {
            return new StrSer();
        }

        @Override
        public void addPostCommitTopology(DataStream<CommittableMessage<String>> c) {
            c.global().map(new IdMsg()).returns(c.getType());
        }
    }

    @Override
    public List<String> sinkV2Kinds() {
        return Arrays.asList("plain", "plain", "pre-write", "committer", "full topology", "DiscardingSink");
    }

    @Override
    public DataStreamSink<Long> sinkV2(DataStream<Long> in, String kind) {
        switch (kind) {
            case "plain": return in.sinkTo(new PlainSink());
            case "pre-write": return in.sinkTo(new PreWriteSink());
            case "committer": return in.sinkTo(new CommitterSink());
            case "full topology": return in.sinkTo(new FullSink());
            case "DiscardingSink":
                return in.sinkTo(new org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<>());
            default: throw new IllegalArgumentException(kind);
        }
    }

    // ---------------------------------------------------------------- iterations: gone in 2.x

    @Override
    public boolean hasIterations() {
        return false;
    }

    @Override
    public DataStream<Long> iterate(DataStream<Long> in) {
        throw new UnsupportedOperationException("no iterations in Flink 2.x");
    }

    @Override
    public void closeWith(DataStream<Long> head, DataStream<Long> feedback) {
        throw new UnsupportedOperationException("no iterations in Flink 2.x");
    }
}
