package org.flinkjobgraph.harness;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.ConnectedStreams;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.ChainingStrategy;
import org.apache.flink.streaming.api.operators.StreamMap;
import org.apache.flink.streaming.api.operators.co.CoStreamMap;

import java.util.Arrays;
import java.util.List;

/**
 * Flink 1.9: no FLIP-27 sources, no sink V2, no MultipleInputTransformation, no
 * HEAD_WITH_SOURCES, ShuffleMode instead of StreamExchangeMode; custom chaining strategies are
 * set on the operator (there are no custom operator factories in the public API yet). Compat's
 * defaults: iterations, and none of FLIP-27, sink V2, multiple input.
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
        LocalCapture.install(conf, userClassLoader);
    }

    @Override
    public String captureGuarantee() {
        return "Flink 1.9 has no pluggable executors: StreamExecutionEnvironment.getExecutionEnvironment() and"
                + " the local environments a program builds itself (createLocalEnvironment, new"
                + " LocalStreamEnvironment, createLocalEnvironmentWithWebUI) are captured at execute(); a program that"
                + " creates a remote environment itself, or uses the Table API, would run; only -p and -D"
                + " pipeline.max-parallelism / parallelism.default apply";
    }

    @Override
    public boolean hasChainMaxParallelismOption() {
        return false;
    }

    @Override
    public SingleOutputStreamOperator<Long> legacyCollectionSource(StreamExecutionEnvironment env) {
        return env.fromElements(1L, 2L, 3L);
    }

    /** 1.9 has no fromSequence; generateSequence is a legacy parallel "Sequence Source". */
    @Override
    public SingleOutputStreamOperator<Long> fromSequence(StreamExecutionEnvironment env) {
        return env.generateSequence(0, 1000);
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
}
