package org.flinkjobgraph.harness;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.datastream.ConnectedStreams;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.ChainingStrategy;
import org.apache.flink.streaming.api.operators.OneInputStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamMap;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperatorFactory;
import org.apache.flink.streaming.api.transformations.MultipleInputTransformation;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Shared part of the Flink 1.15+ compat implementations. */
public abstract class Compat115Plus implements Compat {

    static final String CHAIN_MAX_PAR_KEY =
            "pipeline.operator-chaining.chain-operators-with-different-max-parallelism";

    @Override
    public StreamExecutionEnvironment createEnv(boolean noChainDifferentMaxPar) {
        return createEnv(noChainDifferentMaxPar, new HashMap<>());
    }

    @Override
    public StreamExecutionEnvironment createEnv(
            boolean noChainDifferentMaxPar, Map<String, String> extra) {
        Map<String, String> m = new HashMap<>(extra);
        if (noChainDifferentMaxPar) {
            m.put(CHAIN_MAX_PAR_KEY, "false");
        }
        return StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(m));
    }

    @Override
    public void installCapture(Configuration conf, ClassLoader userClassLoader) {
        CaptureEnvironments.install(conf, userClassLoader);
    }

    @Override
    public String captureGuarantee() {
        return "every job submission (execute, executeAsync, DataStream V2, executeSql/StatementSet) goes to a "
                + "capturing PipelineExecutor; no other executor is visible, nothing is executed";
    }

    @Override
    public boolean hasChainMaxParallelismOption() {
        return Refl.find(
                        org.apache.flink.streaming.api.graph.StreamGraph.class,
                        "isChainingOfOperatorsWithDifferentMaxParallelismEnabled",
                        0)
                != null;
    }

    @Override
    public boolean hasFlip27() {
        return true;
    }

    @Override
    public SingleOutputStreamOperator<Long> flip27Source(StreamExecutionEnvironment env, String name) {
        return env.fromSource(new NumberSequenceSource(0, 1000), WatermarkStrategy.noWatermarks(), name);
    }

    @Override
    public SingleOutputStreamOperator<Long> fromSequence(StreamExecutionEnvironment env) {
        return env.fromSequence(0, 1000);
    }

    @Override
    public List<String> chainingStrategies() {
        return Arrays.asList("ALWAYS", "HEAD", "NEVER", "HEAD_WITH_SOURCES");
    }

    /**
     * An operator factory with a configurable chaining strategy; never asked for an operator (the
     * programs are not executed). The subclasses add the input arity's factory interface.
     */
    public abstract static class StubFactory extends AbstractStreamOperatorFactory<Long> {
        protected StubFactory(ChainingStrategy s) {
            setChainingStrategy(s);
        }

        @Override
        public <T extends StreamOperator<Long>> T createStreamOperator(
                StreamOperatorParameters<Long> parameters) {
            throw new UnsupportedOperationException("harness programs are never executed");
        }

        @Override
        @SuppressWarnings("rawtypes")
        public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader classLoader) {
            return StreamMap.class;
        }
    }

    /** A one-input operator factory with a configurable chaining strategy. */
    public static class OneInputFactory extends StubFactory implements OneInputStreamOperatorFactory<Long, Long> {
        public OneInputFactory(ChainingStrategy s) {
            super(s);
        }
    }

    /** A two-input operator factory with a configurable chaining strategy. */
    public static class TwoInputFactory extends StubFactory implements TwoInputStreamOperatorFactory<Long, Long, Long> {
        public TwoInputFactory(ChainingStrategy s) {
            super(s);
        }
    }

    /** A multiple-input operator factory with a configurable chaining strategy. */
    public static class MultiInputFactory extends StubFactory {
        public MultiInputFactory(ChainingStrategy s) {
            super(s);
        }
    }

    @Override
    public SingleOutputStreamOperator<Long> transformOne(
            DataStream<Long> in, String name, String strategy) {
        return in.transform(name, Types.LONG, new OneInputFactory(ChainingStrategy.valueOf(strategy)));
    }

    @Override
    public SingleOutputStreamOperator<Long> transformTwo(
            ConnectedStreams<Long, Long> in, String name, String strategy) {
        return in.transform(name, Types.LONG, new TwoInputFactory(ChainingStrategy.valueOf(strategy)));
    }

    @Override
    public boolean hasMultipleInput() {
        return true;
    }

    @Override
    public SingleOutputStreamOperator<Long> multipleInput(
            StreamExecutionEnvironment env, List<DataStream<Long>> inputs, String name, String strategy, int parallelism) {
        MultipleInputTransformation<Long> t =
                new MultipleInputTransformation<>(
                        name,
                        new MultiInputFactory(ChainingStrategy.valueOf(strategy)),
                        Types.LONG,
                        parallelism);
        for (DataStream<Long> in : inputs) {
            t.addInput(in.getTransformation());
        }
        env.addOperator(t);
        return new SingleOutputStreamOperator<Long>(env, t) {};
    }

    // ---------------------------------------------------------------- sink V2 (never run)

    /** The committables' serializer (strings). */
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
        public String deserialize(int version, byte[] b) {
            return new String(b, StandardCharsets.UTF_8);
        }
    }

    public static class IdMsg implements MapFunction<CommittableMessage<String>, CommittableMessage<String>> {
        @Override
        public CommittableMessage<String> map(CommittableMessage<String> v) {
            return v;
        }
    }

    /**
     * What the sink V2s of the programs do on every line: a writer that is never created, the
     * pre-write / pre-commit / post-commit topologies and the serializers. The line's
     * {@code SinksV2} classes (flink-1.15-1.20: TwoPhaseCommittingSink and With*Topology; flink-2.x:
     * SupportsCommitter and Supports*Topology) declare the interfaces, which these public methods
     * implement; {@code C} is the line's writer init context (Sink.InitContext, WriterInitContext).
     */
    public abstract static class SinkV2<C> implements java.io.Serializable {
        public SinkWriter<Long> createWriter(C context) {
            throw new UnsupportedOperationException();
        }

        public DataStream<Long> addPreWriteTopology(DataStream<Long> in) {
            return in.map(new Fns.MapFn());
        }

        public DataStream<CommittableMessage<String>> addPreCommitTopology(DataStream<CommittableMessage<String>> c) {
            return c.map(new IdMsg()).returns(c.getType());
        }

        public void addPostCommitTopology(DataStream<CommittableMessage<String>> c) {
            c.global().map(new IdMsg()).returns(c.getType());
        }

        public SimpleVersionedSerializer<String> getCommittableSerializer() {
            return new StrSer();
        }

        public SimpleVersionedSerializer<String> getWriteResultSerializer() {
            return new StrSer();
        }

        /** The pre-write topology of the full-topology sink. */
        static DataStream<Long> rebalancedFilter(DataStream<Long> in) {
            return in.rebalance().filter(new Fns.FilterFn());
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
        if (hasClass(DISCARDING_V2)) { // not in every 1.x line
            k.add("DiscardingSink");
        }
        return k;
    }

    @Override
    @SuppressWarnings("unchecked")
    public DataStreamSink<Long> sinkV2(DataStream<Long> in, String kind) {
        switch (kind) {
            case "plain": return in.sinkTo(new SinksV2.PlainSink());
            case "pre-write": return in.sinkTo(new SinksV2.PreWriteSink());
            case "committer": return in.sinkTo(new SinksV2.CommitterSink());
            case "full topology": return in.sinkTo(new SinksV2.FullSink());
            case "DiscardingSink":
                try {
                    return in.sinkTo((Sink<Long>) Class.forName(DISCARDING_V2).getConstructor().newInstance());
                } catch (ReflectiveOperationException e) {
                    throw new RuntimeException(e);
                }
            default: throw new IllegalArgumentException(kind);
        }
    }
}
