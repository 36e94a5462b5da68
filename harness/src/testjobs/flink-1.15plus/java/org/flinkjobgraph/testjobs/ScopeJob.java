package org.flinkjobgraph.testjobs;

import com.example.model.Acc;
import com.example.model.Event;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.windowing.assigners.GlobalWindows;

/**
 * A job whose types live outside its own packages (com.example.model): the element type (named by
 * the job graph's serializers), a class only that one's fields name, a window accumulator only the
 * window operator's state descriptor names, and a class nothing names. tests/test_exporter.py
 * checks which of them the exporter's bounded {@code user_classes} describes.
 */
public final class ScopeJob {
    private ScopeJob() {}

    /** Counts events per key in an accumulator class of the model package. */
    public static final class CountAgg implements AggregateFunction<Event, Acc, Long> {
        @Override
        public Acc createAccumulator() {
            return new Acc();
        }

        @Override
        public Acc add(Event value, Acc acc) {
            acc.count++;
            return acc;
        }

        @Override
        public Long getResult(Acc acc) {
            return acc.count;
        }

        @Override
        public Acc merge(Acc a, Acc b) {
            a.count += b.count;
            return a;
        }
    }

    public static void main(String[] args) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSequence(1, 10)
                .map(Event::of)
                .returns(Event.class)
                .keyBy(e -> e.id, Types.LONG)
                .window(GlobalWindows.create())
                .aggregate(new CountAgg())
                .name("Count")
                .print();
        env.executeAsync("scope");
    }
}
