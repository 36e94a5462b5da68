package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.io.Serializable;
import java.util.List;
import java.util.Map;

/**
 * A job whose jar holds the kinds of classes the exporter's {@code user_classes} describes (a POJO,
 * a Kryo class, an enum, a static nested POJO) and the ones it leaves out (an interface, a
 * non-static inner class, an anonymous class), and that sets its state backend the ways jobs do:
 * {@code args[0]} "none" (nothing), "configure:NAME" ({@code env.configure} with
 * {@code state.backend.type}), "object" (1.x {@code env.setStateBackend(new HashMapStateBackend())},
 * by reflection: 2.x has no such method). tests/test_exporter.py checks the spec's graph fields.
 */
public final class StateFactsJob {
    private StateFactsJob() {}

    /** A POJO: public, a no-argument constructor, fields public or with getters and setters. */
    public static class Order {
        public long id;
        public String customer;
        public List<String> tags;
        public Map<String, Long> counts;
        public Color color;
        public transient int ignored;
        public static int alsoIgnored;

        public Order() {}
    }

    /** Not a POJO (no no-argument constructor, private final fields): Flink gives it to Kryo. */
    public static class Opaque implements Serializable {
        private final long x;
        private final String y;

        public Opaque(long x, String y) {
            this.x = x;
            this.y = y;
        }

        @Override
        public String toString() {
            return x + y;
        }
    }

    /** An enum. */
    public enum Color {
        RED,
        GREEN,
        BLUE
    }

    /** Left out: an interface. */
    public interface Marker {}

    /** Left out: a non-static inner class. */
    public class Inner {
        public long v;
    }

    public static void main(String[] args) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        String how = args.length > 0 ? args[0] : "none";
        if (how.startsWith("configure:")) {
            Configuration c = new Configuration();
            c.setString("state.backend.type", how.substring("configure:".length()));
            env.configure(c);
        } else if (how.equals("object")) {
            Object backend = Class.forName("org.apache.flink.runtime.state.hashmap.HashMapStateBackend")
                    .getConstructor().newInstance();
            for (java.lang.reflect.Method m : env.getClass().getMethods()) {
                if (m.getName().equals("setStateBackend")) {
                    m.invoke(env, backend);
                }
            }
        }
        Runnable anonymous = new Runnable() {
            @Override
            public void run() {}
        };
        anonymous.run();
        env.fromSequence(1, 10).map(x -> x + 1).returns(Types.LONG).name("M").print();
        env.executeAsync("state-facts");
    }
}
