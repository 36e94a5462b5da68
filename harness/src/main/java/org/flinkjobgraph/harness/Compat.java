package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.datastream.ConnectedStreams;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.List;

/**
 * The Flink-version-specific part of the harness. One implementation per API family lives in
 * src/compat/flink-&lt;lines&gt;/java (class org.flinkjobgraph.harness.CompatImpl: flink-1.9,
 * flink-1.15-1.20, flink-2.x; the 1.15+ lines share Compat115Plus in flink-1.15plus) and is
 * selected by the Maven profile. Everything else (generator, exporter, expected-answer
 * extraction) is shared.
 */
public interface Compat {

    /** A fresh environment; when {@code noChainDifferentMaxPar}, sets
     * pipeline.operator-chaining.chain-operators-with-different-max-parallelism=false. */
    StreamExecutionEnvironment createEnv(boolean noChainDifferentMaxPar);

    /** {@link #createEnv(boolean)} with extra configuration entries (e.g.
     * execution.runtime-mode=BATCH for the batch generator). */
    default StreamExecutionEnvironment createEnv(
            boolean noChainDifferentMaxPar, java.util.Map<String, String> extra) {
        if (extra.isEmpty()) {
            return createEnv(noChainDifferentMaxPar);
        }
        throw new UnsupportedOperationException(
                "this Flink line's harness cannot configure " + extra.keySet());
    }

    /**
     * Makes every job the user's main() submits land in {@link Capture} instead of running:
     * context environments carrying {@code conf} (-p, -D, --config) whose executor only captures.
     */
    void installCapture(org.apache.flink.configuration.Configuration conf, ClassLoader userClassLoader)
            throws Exception;

    /** One line on what the capture can guarantee in this Flink line (printed by export --help). */
    String captureGuarantee();

    /** Whether this version has the chain-operators-with-different-max-parallelism option. */
    boolean hasChainMaxParallelismOption();

    // ---- sources (legacy SourceFunctions: Fns.legacySource) ----
    /** A legacy (SourceFunction based) collection source: env.fromElements / fromCollection. */
    SingleOutputStreamOperator<Long> legacyCollectionSource(StreamExecutionEnvironment env);

    /** FLIP-27 sources available? */
    boolean hasFlip27();

    /** env.fromSource(new NumberSequenceSource(..), noWatermarks, name). */
    SingleOutputStreamOperator<Long> flip27Source(StreamExecutionEnvironment env, String name);

    /** env.fromSequence (FLIP-27 "Sequence Source"). */
    SingleOutputStreamOperator<Long> fromSequence(StreamExecutionEnvironment env);

    // ---- sinks (legacy SinkFunction: Fns.legacySink) ----
    /** Sink V2 kinds this version supports: plain, pre-write, committer, full topology, DiscardingSink. */
    List<String> sinkV2Kinds();

    DataStreamSink<Long> sinkV2(DataStream<Long> in, String kind);

    // ---- operators ----
    /** Chaining strategies a custom operator can have in this version. */
    List<String> chainingStrategies();

    SingleOutputStreamOperator<Long> transformOne(DataStream<Long> in, String name, String strategy);

    SingleOutputStreamOperator<Long> transformTwo(
            ConnectedStreams<Long, Long> in, String name, String strategy);

    boolean hasMultipleInput();

    /** A MultipleInputTransformation over {@code inputs} with a factory of the given strategy. */
    SingleOutputStreamOperator<Long> multipleInput(
            StreamExecutionEnvironment env,
            List<DataStream<Long>> inputs,
            String name,
            String strategy,
            int parallelism,
            String uidOrNull,
            String uidHashOrNull);

    /** Exchange modes for an explicit PartitionTransformation (UNDEFINED excluded). */
    List<String> exchangeModes();

    DataStream<Long> partition(DataStream<Long> in, String partitioner, String exchangeMode);

    // ---- iterations (1.x only) ----
    boolean hasIterations();

    DataStream<Long> iterate(DataStream<Long> in);

    void closeWith(DataStream<Long> iterationHead, DataStream<Long> feedback);

    /** Version-specific "ALWAYS"/... names the SPEC uses for ChainingStrategy values. */
    default String strategyName(Object chainingStrategy) {
        return chainingStrategy == null ? null : chainingStrategy.toString();
    }
}
