package org.flinkjobgraph.harness;

/**
 * The legacy source/sink function types under one name for every Flink line: here the ...legacy
 * packages of Flink 2.x (1.x has them one level up: the flink-1.x twin of this file).
 * Functions written against these names compile, unchanged, for all lines.
 */
public final class LegacyApi {
    private LegacyApi() {}

    public interface Source<T> extends org.apache.flink.streaming.api.functions.source.legacy.SourceFunction<T> {}

    public interface ParallelSource<T>
            extends org.apache.flink.streaming.api.functions.source.legacy.ParallelSourceFunction<T> {}

    public abstract static class RichSource<T>
            extends org.apache.flink.streaming.api.functions.source.legacy.RichSourceFunction<T> {}

    public interface Sink<T> extends org.apache.flink.streaming.api.functions.sink.legacy.SinkFunction<T> {}
}
