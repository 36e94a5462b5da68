package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * A DataStream job that, if it ever ran, would connect to 127.0.0.1:PORT (socket source) and
 * write files under DIR (FileSink). Args: PORT DIR [MODE]. MODE "context" (default) asks for the
 * context environment; "direct" builds {@code new StreamExecutionEnvironment(conf)} with
 * execution.target=local itself (so Flink looks executors up through the service loader);
 * "twice" also submits a second job with executeAsync().
 */
public final class SocketToFileJob {
    private SocketToFileJob() {}

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String dir = args[1];
        String mode = args.length > 2 ? args[2] : "context";
        StreamExecutionEnvironment env;
        if (mode.equals("direct")) {
            Configuration conf = new Configuration();
            conf.setString("execution.target", "local");
            env = new StreamExecutionEnvironment(conf);
        } else {
            env = StreamExecutionEnvironment.getExecutionEnvironment();
        }
        env.socketTextStream("127.0.0.1", port)
                .uid("socket-source")
                .filter(s -> !s.isEmpty())
                .uid("non-empty")
                .sinkTo(FileSink.forRowFormat(new Path(dir), new SimpleStringEncoder<String>()).build())
                .uid("file-sink");
        env.execute("socket-to-file");
        if (mode.equals("twice")) {
            env.socketTextStream("127.0.0.1", port).print();
            env.executeAsync("second");
        }
    }
}
