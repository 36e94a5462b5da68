package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.LocalStreamEnvironment;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Flink 1.9: a DataStream job that, if it ever ran, would connect to 127.0.0.1:PORT (socket
 * source) and write a file DIR/out.txt (writeAsText). Args: PORT DIR MODE. MODE picks the
 * environment: "context" getExecutionEnvironment(), "local" createLocalEnvironment(), "local-2"
 * createLocalEnvironment(2), "new" new LocalStreamEnvironment(conf), "webui"
 * createLocalEnvironmentWithWebUI(conf); "local-twice" is "local" submitting a second job after the
 * first.
 */
public final class LocalEnvSocketToFileJob {
    private LocalEnvSocketToFileJob() {}

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String dir = args[1];
        String mode = args[2];
        StreamExecutionEnvironment env;
        switch (mode) {
            case "context":
                env = StreamExecutionEnvironment.getExecutionEnvironment();
                break;
            case "local":
            case "local-twice":
                env = StreamExecutionEnvironment.createLocalEnvironment();
                break;
            case "local-2":
                env = StreamExecutionEnvironment.createLocalEnvironment(2);
                break;
            case "new":
                env = new LocalStreamEnvironment(new Configuration());
                break;
            case "webui":
                env = StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(new Configuration());
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + mode);
        }
        env.socketTextStream("127.0.0.1", port)
                .uid("socket-source")
                .filter(s -> !s.isEmpty())
                .uid("non-empty")
                .keyBy(s -> s)
                .reduce(new Longest())
                .uid("longest")
                .writeAsText(dir + "/out.txt")
                .uid("file-sink");
        env.execute("local-socket-to-file");
        if (mode.equals("local-twice")) {
            env.socketTextStream("127.0.0.1", port).print();
            env.execute("second");
        }
    }

    /** Keeps the longer of two lines. */
    public static final class Longest implements ReduceFunction<String> {
        @Override
        public String reduce(String a, String b) {
            return a.length() >= b.length() ? a : b;
        }
    }
}
