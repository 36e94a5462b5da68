package org.flinkjobgraph.gatejob;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;
import org.apache.flink.streaming.api.functions.source.SourceFunction;
import org.apache.flink.util.Collector;

import java.util.concurrent.TimeUnit;

/**
 * The deploy gate's test job (tests/test_deploy_gate.py), shaped like a job whose parallelism
 * decides its chains: a non-parallel legacy source (always parallelism 1) feeding a map at the
 * job's parallelism (chained to the source at 1, not at 2), a keyed function holding a POJO in
 * a ValueState, a sink. Both versions keep the job's name.
 *
 * <p>The version is the jar's resource {@code gate-version.txt}: {@code v1}, or {@code v2} (the
 * keyed function gets {@code .uid("alerts")}, which changes its operator ID: the restore fails at
 * job start, and {@code .setUidHash} of the old ID fixes it); the test builds one jar of each from
 * the same classes. {@code args[0]}, optional: {@code run:DIR:P} runs the job on a MiniCluster
 * (flink-clients on the class path) at parallelism P until its state holds values, stops it with
 * a canonical savepoint into DIR and prints {@code SAVEPOINT <path>}. Without it, {@code
 * execute()} (what the exporter captures).
 */
public final class GateJob {
    private GateJob() {}

    public static void main(String[] args) throws Exception {
        boolean v2 = version().equals("v2");
        String run = args.length > 0 && args[0].startsWith("run:") ? args[0].substring(4) : null;
        StreamExecutionEnvironment env;
        if (run != null) {
            Configuration conf = new Configuration();
            conf.set(CoreOptions.DEFAULT_PARALLELISM, Integer.parseInt(run.substring(run.lastIndexOf(':') + 1)));
            env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        } else {
            env = StreamExecutionEnvironment.getExecutionEnvironment();
        }
        DataStream<Long> numbers = env.addSource(new Numbers()).name("Numbers").map(new Parse()).name("Parse");
        SingleOutputStreamOperator<Long> alerts =
                numbers.keyBy(new ByRide()).process(new Alerts()).name("Alerts");
        if (v2) {
            alerts = alerts.uid("alerts");
        }
        alerts.addSink(new DiscardingSink<>()).name("Discard");
        if (run != null) {
            stopWithSavepoint(env, run.substring(0, run.lastIndexOf(':')));
        } else {
            env.execute("Gate Job");
        }
    }

    static String version() throws java.io.IOException {
        try (java.io.InputStream in = GateJob.class.getResourceAsStream("/gate-version.txt")) {
            return in == null ? "v1" : new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
        }
    }

    static void stopWithSavepoint(StreamExecutionEnvironment env, String dir) throws Exception {
        JobClient client = env.executeAsync("Gate Job");
        long until = System.currentTimeMillis() + 60_000;
        while (client.getJobStatus().get() != JobStatus.RUNNING) {
            if (System.currentTimeMillis() > until) {
                throw new IllegalStateException("the job did not start: " + client.getJobStatus().get());
            }
            Thread.sleep(100);
        }
        Thread.sleep(2000);
        String path = client.stopWithSavepoint(false, dir, SavepointFormatType.CANONICAL).get(120, TimeUnit.SECONDS);
        System.out.println("SAVEPOINT " + path);
    }

    /** Numbers, slowly; a non-parallel legacy source (parallelism 1 whatever the job's). */
    public static final class Numbers implements SourceFunction<Long> {
        private volatile boolean running = true;

        @Override
        public void run(SourceContext<Long> ctx) throws Exception {
            long i = 0;
            while (running) {
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(i++);
                }
                Thread.sleep(5);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** A stateless step at the job's parallelism. */
    public static final class Parse implements MapFunction<Long, Long> {
        @Override
        public Long map(Long v) {
            return v;
        }
    }

    /** Key: the ride, numbers modulo 8. */
    public static final class ByRide implements org.apache.flink.api.java.functions.KeySelector<Long, Long> {
        @Override
        public Long getKey(Long v) {
            return v % 8;
        }
    }

    /** The last ride of each key, a POJO in a ValueState. */
    public static final class Alerts extends KeyedProcessFunction<Long, Long, Long> {
        private transient ValueState<Ride> last;

        @Override
        public void open(Configuration parameters) {
            last = getRuntimeContext().getState(new ValueStateDescriptor<>("last ride", Ride.class));
        }

        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {
            Ride ride = new Ride();
            ride.rideId = v;
            ride.count = last.value() == null ? 1 : last.value().count + 1;
            last.update(ride);
            if (ride.count % 100 == 0) {
                out.collect(v);
            }
        }
    }

    /** The state's POJO (described in the exported spec's user_classes). */
    public static final class Ride {
        public long rideId;
        public int count;

        public Ride() {}
    }
}
