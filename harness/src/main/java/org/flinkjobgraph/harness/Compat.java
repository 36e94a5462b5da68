package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.datastream.ConnectedStreams;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.Collections;
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

    // FLIP-27 sources, sink V2 and MultipleInputTransformation came after 1.9: by default a line
    // has none of them (Compat115Plus has them all)

    /** FLIP-27 sources available? */
    default boolean hasFlip27() {
        return false;
    }

    /** env.fromSource(new NumberSequenceSource(..), noWatermarks, name). */
    default SingleOutputStreamOperator<Long> flip27Source(StreamExecutionEnvironment env, String name) {
        throw new UnsupportedOperationException("no FLIP-27 sources in Flink " + StreamGraphSpecExporter.flinkLine());
    }

    /** env.fromSequence (FLIP-27 "Sequence Source"). */
    SingleOutputStreamOperator<Long> fromSequence(StreamExecutionEnvironment env);

    // ---- sinks (legacy SinkFunction: Fns.legacySink) ----
    /** Sink V2 kinds this version supports: plain, pre-write, committer, full topology, DiscardingSink. */
    default List<String> sinkV2Kinds() {
        return Collections.emptyList();
    }

    default DataStreamSink<Long> sinkV2(DataStream<Long> in, String kind) {
        throw new UnsupportedOperationException("no sink V2 in Flink " + StreamGraphSpecExporter.flinkLine());
    }

    // ---- operators ----
    /** Chaining strategies a custom operator can have in this version. */
    List<String> chainingStrategies();

    SingleOutputStreamOperator<Long> transformOne(DataStream<Long> in, String name, String strategy);

    SingleOutputStreamOperator<Long> transformTwo(
            ConnectedStreams<Long, Long> in, String name, String strategy);

    default boolean hasMultipleInput() {
        return false;
    }

    /**
     * A MultipleInputTransformation over {@code inputs} with a factory of the given strategy (uid
     * and uid hash, if any, are set on the result).
     */
    default SingleOutputStreamOperator<Long> multipleInput(
            StreamExecutionEnvironment env, List<DataStream<Long>> inputs, String name, String strategy, int parallelism) {
        throw new UnsupportedOperationException("no MultipleInputTransformation in Flink " + StreamGraphSpecExporter.flinkLine());
    }

    // ---- iterations: DataStream.iterate() up to 1.20, gone in 2.x (hence by reflection) ----
    default boolean hasIterations() {
        return Refl.find(DataStream.class, "iterate", 0) != null;
    }

    @SuppressWarnings("unchecked")
    default DataStream<Long> iterate(DataStream<Long> in) {
        return (DataStream<Long>) Refl.call(in, "iterate", null);
    }

    /** IterativeStream.closeWith(feedback). */
    default void closeWith(DataStream<Long> iterationHead, DataStream<Long> feedback) {
        Refl.call(iterationHead, "closeWith", null, feedback);
    }

    /** Version-specific "ALWAYS"/... names the SPEC uses for ChainingStrategy values. */
    default String strategyName(Object chainingStrategy) {
        return chainingStrategy == null ? null : chainingStrategy.toString();
    }
}
