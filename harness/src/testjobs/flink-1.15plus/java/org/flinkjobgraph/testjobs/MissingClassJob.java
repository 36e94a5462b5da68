package org.flinkjobgraph.testjobs;

import org.apache.flink.connector.file.sink.FileSink;

/** Needs flink-connector-files (not in the harness): exported without it, a clear error names the class. */
public final class MissingClassJob {
    private MissingClassJob() {}

    public static void main(String[] args) {
        System.out.println(FileSink.class.getName());
    }
}
