package org.flinkjobgraph.harness;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.ConnectedStreams;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.IterativeStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.ChainingStrategy;
import org.apache.flink.streaming.api.operators.StreamMap;
import org.apache.flink.streaming.api.operators.co.CoStreamMap;
import org.apache.flink.streaming.api.transformations.PartitionTransformation;
import org.apache.flink.streaming.api.transformations.ShuffleMode;
import org.apache.flink.streaming.runtime.partitioner.BroadcastPartitioner;
import org.apache.flink.streaming.runtime.partitioner.ForwardPartitioner;
import org.apache.flink.streaming.runtime.partitioner.GlobalPartitioner;
import org.apache.flink.streaming.runtime.partitioner.RebalancePartitioner;
import org.apache.flink.streaming.runtime.partitioner.RescalePartitioner;
import org.apache.flink.streaming.runtime.partitioner.ShufflePartitioner;
import org.apache.flink.streaming.runtime.partitioner.StreamPartitioner;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * Flink 1.9: no FLIP-27 sources, no sink V2, no MultipleInputTransformation, no
 * HEAD_WITH_SOURCES, ShuffleMode instead of StreamExchangeMode; custom chaining strategies are
 * set on the operator (there are no custom operator factories in the public API yet).
 */
public class CompatImpl implements Compat {

    @Override
    public StreamExecutionEnvironment createEnv(boolean noChainDifferentMaxPar) {
        return StreamExecutionEnvironment.getExecutionEnvironment();
    }

    @Override
    public void installCapture(org.apache.flink.configuration.Configuration conf, ClassLoader userClassLoader)
            throws Exception {
        UserJobExport.installLegacy(conf);
    }

    @Override
    public String captureGuarantee() {
        return "Flink 1.9 has no pluggable executors: only StreamExecutionEnvironment.getExecutionEnvironment()"
                + " is captured; a program that creates a local/remote environment itself, or uses the"
                + " Table API, would run; only -p and -D pipeline.max-parallelism / parallelism.default apply";
    }

    @Override
    public boolean hasChainMaxParallelismOption() {
        return false;
    }

    @Override
    public SingleOutputStreamOperator<Long> legacyCollectionSource(StreamExecutionEnvironment env) {
        return env.fromElements(1L, 2L, 3L);
    }

    @Override
    public boolean hasFlip27() {
        return false;
    }

    @Override
    public SingleOutputStreamOperator<Long> flip27Source(StreamExecutionEnvironment env, String name) {
        throw new UnsupportedOperationException("no FLIP-27 sources in Flink 1.9");
    }

    /** 1.9 has no fromSequence; generateSequence is a legacy parallel "Sequence Source". */
    @Override
    public SingleOutputStreamOperator<Long> fromSequence(StreamExecutionEnvironment env) {
        return env.generateSequence(0, 1000);
    }

    @Override
    public List<String> sinkV2Kinds() {
        return Collections.emptyList();
    }

    @Override
    public DataStreamSink<Long> sinkV2(DataStream<Long> in, String kind) {
        throw new UnsupportedOperationException("no sink V2 in Flink 1.9");
    }

    @Override
    public List<String> chainingStrategies() {
        return Arrays.asList("ALWAYS", "HEAD", "NEVER");
    }

    @Override
    public SingleOutputStreamOperator<Long> transformOne(
            DataStream<Long> in, String name, String strategy) {
        StreamMap<Long, Long> op = new StreamMap<>(new Fns.MapFn());
        op.setChainingStrategy(ChainingStrategy.valueOf(strategy));
        return in.transform(name, Types.LONG, op);
    }

    @Override
    public SingleOutputStreamOperator<Long> transformTwo(
            ConnectedStreams<Long, Long> in, String name, String strategy) {
        CoStreamMap<Long, Long, Long> op = new CoStreamMap<>(new Fns.CoMapFn());
        op.setChainingStrategy(ChainingStrategy.valueOf(strategy));
        return in.transform(name, Types.LONG, op);
    }

    @Override
    public boolean hasMultipleInput() {
        return false;
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
        throw new UnsupportedOperationException("no MultipleInputTransformation in Flink 1.9");
    }

    @Override
    public List<String> exchangeModes() {
        List<String> out = new ArrayList<>();
        for (ShuffleMode m : ShuffleMode.values()) {
            if (m != ShuffleMode.UNDEFINED) {
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
                new PartitionTransformation<>(in.getTransformation(), p, ShuffleMode.valueOf(exchangeMode)));
    }

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
