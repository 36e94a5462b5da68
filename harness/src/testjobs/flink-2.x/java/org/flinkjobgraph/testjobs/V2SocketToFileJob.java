package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.connector.dsv2.DataStreamV2SinkUtils;
import org.apache.flink.api.connector.dsv2.DataStreamV2SourceUtils;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.datastream.api.ExecutionEnvironment;
import org.apache.flink.datastream.api.common.Collector;
import org.apache.flink.datastream.api.context.PartitionedContext;
import org.apache.flink.datastream.api.function.OneInputStreamProcessFunction;

import java.io.IOException;
import java.net.Socket;
import java.util.Arrays;

/**
 * A DataStream V2 job that, if it ever ran, would connect to 127.0.0.1:PORT (in its process
 * function) and write files under DIR (FileSink). Args: PORT DIR.
 */
public final class V2SocketToFileJob {
    private V2SocketToFileJob() {}

    /** Connects to the port for every record. */
    public static final class Connect implements OneInputStreamProcessFunction<String, String> {
        private final int port;

        Connect(int port) {
            this.port = port;
        }

        @Override
        public void processRecord(String record, Collector<String> out, PartitionedContext<String> ctx)
                throws IOException {
            try (Socket s = new Socket("127.0.0.1", port)) {
                out.collect(record + s.getLocalPort());
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String dir = args[1];
        ExecutionEnvironment env = ExecutionEnvironment.getInstance();
        env.fromSource(DataStreamV2SourceUtils.fromData(Arrays.asList("a", "b", "c")), "words")
                .process(new Connect(port))
                .toSink(DataStreamV2SinkUtils.wrapSink(
                        FileSink.forRowFormat(new Path(dir), new SimpleStringEncoder<String>()).build()));
        env.execute("v2-socket-to-file");
    }
}
