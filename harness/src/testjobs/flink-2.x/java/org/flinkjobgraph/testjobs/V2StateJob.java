package org.flinkjobgraph.testjobs;

import org.apache.flink.api.common.state.ListStateDeclaration;
import org.apache.flink.api.common.state.MapStateDeclaration;
import org.apache.flink.api.common.state.StateDeclaration;
import org.apache.flink.api.common.state.StateDeclarations;
import org.apache.flink.api.common.state.ValueStateDeclaration;
import org.apache.flink.api.common.typeinfo.TypeDescriptors;
import org.apache.flink.api.connector.dsv2.DataStreamV2SinkUtils;
import org.apache.flink.api.connector.dsv2.DataStreamV2SourceUtils;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.datastream.api.ExecutionEnvironment;
import org.apache.flink.datastream.api.common.Collector;
import org.apache.flink.datastream.api.context.PartitionedContext;
import org.apache.flink.datastream.api.function.OneInputStreamProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;

/**
 * A DataStream V2 job whose process functions declare their states ({@code usesStates()}):
 * keyed value, list and map state, and a non-keyed function's operator (split) list state
 * (tests/test_declared_states.py: the exporter's {@code state_declaration} entries).
 */
public final class V2StateJob {
    private V2StateJob() {}

    /** Keyed: a value, a list and a map. */
    public static final class Counting implements OneInputStreamProcessFunction<Long, Long> {
        static final ValueStateDeclaration<Long> COUNT = StateDeclarations.valueState("count", TypeDescriptors.LONG);
        static final ListStateDeclaration<String> SEEN = StateDeclarations.listState("seen", TypeDescriptors.STRING);
        static final MapStateDeclaration<String, Long> BY_NAME =
                StateDeclarations.mapState("by-name", TypeDescriptors.STRING, TypeDescriptors.LONG);

        @Override
        public Set<StateDeclaration> usesStates() {
            return new HashSet<>(Arrays.asList(COUNT, SEEN, BY_NAME));
        }

        @Override
        public void processRecord(Long r, Collector<Long> out, PartitionedContext<Long> ctx) throws Exception {
            ctx.getStateManager().getState(COUNT).update(r);
            ctx.getStateManager().getState(SEEN).add("s" + r);
            ctx.getStateManager().getState(BY_NAME).put("n" + r, r);
            out.collect(r);
        }
    }

    /** Non-keyed: an operator list state, split on rescale. */
    public static final class Offsets implements OneInputStreamProcessFunction<Long, Long> {
        static final ListStateDeclaration<Long> OFFSETS = StateDeclarations.listStateBuilder("offsets", TypeDescriptors.LONG)
                .redistributeBy(ListStateDeclaration.RedistributionStrategy.SPLIT)
                .build();

        @Override
        public Set<StateDeclaration> usesStates() {
            return Collections.singleton(OFFSETS);
        }

        @Override
        public void processRecord(Long r, Collector<Long> out, PartitionedContext<Long> ctx) throws Exception {
            ctx.getStateManager().getState(OFFSETS).update(Collections.singletonList(r));
            out.collect(r);
        }
    }

    /** Key: the number modulo 4. */
    public static final class Mod4 implements KeySelector<Long, Long> {
        @Override
        public Long getKey(Long v) {
            return v % 4;
        }
    }

    public static void main(String[] args) throws Exception {
        ExecutionEnvironment env = ExecutionEnvironment.getInstance();
        env.fromSource(DataStreamV2SourceUtils.fromData(Arrays.asList(1L, 2L, 3L)), "numbers")
                .process(new Offsets())
                .keyBy(new Mod4())
                .process(new Counting())
                .toSink(DataStreamV2SinkUtils.wrapSink(new DiscardingSink<>()));
        env.execute("v2-states");
    }
}
