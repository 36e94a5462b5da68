package org.flinkjobgraph.harness;

/**
 * The legacy source/sink function types under one name for every Flink line: here the 1.x
 * packages; Flink 2.0 moved them to {@code ...legacy} packages (the flink-2.x twin of this file).
 * Functions written against these names compile, unchanged, for all lines.
 */
public final class LegacyApi {
    private LegacyApi() {}

    public interface Source<T> extends org.apache.flink.streaming.api.functions.source.SourceFunction<T> {}

    public interface ParallelSource<T>
            extends org.apache.flink.streaming.api.functions.source.ParallelSourceFunction<T> {}

    public abstract static class RichSource<T>
            extends org.apache.flink.streaming.api.functions.source.RichSourceFunction<T> {}

    public interface Sink<T> extends org.apache.flink.streaming.api.functions.sink.SinkFunction<T> {}
}
