package org.flinkjobgraph.harness;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.ConnectedStreams;
import org.apache.flink.streaming.api.datastream.DataStream;
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
import org.apache.flink.streaming.api.transformations.PartitionTransformation;
import org.apache.flink.streaming.api.transformations.StreamExchangeMode;
import org.apache.flink.streaming.runtime.partitioner.BroadcastPartitioner;
import org.apache.flink.streaming.runtime.partitioner.ForwardPartitioner;
import org.apache.flink.streaming.runtime.partitioner.GlobalPartitioner;
import org.apache.flink.streaming.runtime.partitioner.RebalancePartitioner;
import org.apache.flink.streaming.runtime.partitioner.RescalePartitioner;
import org.apache.flink.streaming.runtime.partitioner.ShufflePartitioner;
import org.apache.flink.streaming.runtime.partitioner.StreamPartitioner;

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

    /** A one-input operator factory with a configurable chaining strategy. */
    public static class OneInputFactory extends AbstractStreamOperatorFactory<Long>
            implements OneInputStreamOperatorFactory<Long, Long> {
        public OneInputFactory(ChainingStrategy s) {
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

    /** A two-input operator factory with a configurable chaining strategy. */
    public static class TwoInputFactory extends AbstractStreamOperatorFactory<Long>
            implements TwoInputStreamOperatorFactory<Long, Long, Long> {
        public TwoInputFactory(ChainingStrategy s) {
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

    /** A multiple-input operator factory with a configurable chaining strategy. */
    public static class MultiInputFactory extends AbstractStreamOperatorFactory<Long> {
        public MultiInputFactory(ChainingStrategy s) {
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
            StreamExecutionEnvironment env,
            List<DataStream<Long>> inputs,
            String name,
            String strategy,
            int parallelism,
            String uidOrNull,
            String uidHashOrNull) {
        MultipleInputTransformation<Long> t =
                new MultipleInputTransformation<>(
                        name,
                        new MultiInputFactory(ChainingStrategy.valueOf(strategy)),
                        Types.LONG,
                        parallelism);
        if (uidOrNull != null) {
            t.setUid(uidOrNull);
        }
        if (uidHashOrNull != null) {
            t.setUidHash(uidHashOrNull);
        }
        for (DataStream<Long> in : inputs) {
            t.addInput(in.getTransformation());
        }
        env.addOperator(t);
        return new SingleOutputStreamOperator<Long>(env, t) {};
    }

    @Override
    public List<String> exchangeModes() {
        List<String> out = new ArrayList<>();
        for (StreamExchangeMode m : StreamExchangeMode.values()) {
            if (m != StreamExchangeMode.UNDEFINED) {
                out.add(m.name());
            }
        }
        return out;
    }

    @Override
    public DataStream<Long> partition(DataStream<Long> in, String partitioner, String exchangeMode) {
        StreamPartitioner<Long> p;
        switch (partitioner) {
            case "FORWARD": p = new ForwardPartitioner<>(); break;
            case "REBALANCE": p = new RebalancePartitioner<>(); break;
            case "RESCALE": p = new RescalePartitioner<>(); break;
            case "SHUFFLE": p = new ShufflePartitioner<>(); break;
            case "BROADCAST": p = new BroadcastPartitioner<>(); break;
            case "GLOBAL": p = new GlobalPartitioner<>(); break;
            default: throw new IllegalArgumentException(partitioner);
        }
        return new DataStream<>(
                in.getExecutionEnvironment(),
                new PartitionTransformation<>(
                        in.getTransformation(), p, StreamExchangeMode.valueOf(exchangeMode)));
    }
}
