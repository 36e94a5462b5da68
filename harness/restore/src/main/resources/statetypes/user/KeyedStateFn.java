package statetypes.user;

import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What every keyed state function of the jobs does with its states (value / list / map /
 * reducing / aggregating, of any of the value types); the states themselves are declared by the
 * job's own subclass (KeyedFn, generated per job: in open(), on the first record, in
 * initializeState, or in {@link #registerStates} which open() calls), which hands the state
 * handles over with {@link #bind} in the order of the description's states. Every record writes
 * every state; the first record of each key (per instance) first reads every state and reports
 * what it found, so after a restore every state of every key is accessed.
 */
public abstract class KeyedStateFn extends KeyedProcessFunction<Object, Long, Long> {
    private final String probeKey;
    private final List<String[]> states;
    private final int keys;
    private final boolean timers;
    private transient Object[] handles;
    private transient Set<Long> seen;

    protected KeyedStateFn(String probeKey, List<String[]> states, int keys, boolean timers) {
        this.probeKey = probeKey;
        this.states = states;
        this.keys = keys;
        this.timers = timers;
    }

//#if LEGACY_API
    @Override
    public void open(org.apache.flink.configuration.Configuration parameters) throws Exception {
        registerStates();
    }
//#else
    @Override
    public void open(org.apache.flink.api.common.functions.OpenContext ctx) throws Exception {
        registerStates();
    }
//#endif

    /** Declares the states when a subclass overrides it (open() calls it); by default nothing. */
    protected void registerStates() throws Exception {}

    /** The registered states, in the order of the description's states. */
    protected final void bind(Object... h) {
        if (h.length != states.size()) {
            throw new IllegalStateException(h.length + " states registered, the description has " + states.size());
        }
        handles = h;
    }

    @Override
    public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {
        record(v, ctx, out);
    }

    /** Reads (the first record of a key) and writes every state; nothing without a context. */
    @SuppressWarnings("unchecked")
    protected final void record(Long v, Context ctx, Collector<Long> out) throws Exception {
        if (ctx == null) {
            return;
        }
        if (handles == null) {
            throw new IllegalStateException("no state registered");
        }
        if (seen == null) {
            seen = new HashSet<>();
        }
        long k = Vals.keyNumber(ctx.getCurrentKey());
        boolean first = seen.add(k);
        for (int i = 0; i < states.size(); i++) {
            String[] s = states.get(i);
            String pk = probeKey + "|" + s[0];
            Object h = handles[i];
            if (first) {
                Probe.probe(pk, k, read(s[1], s[2], h, k));
            }
            Object value = Vals.make(s[2], v);
            switch (s[1]) {
                case "VALUE":
                    ((ValueState<Object>) h).update(value);
                    break;
                case "LIST": {
                    ListState<Object> l = (ListState<Object>) h;
                    int n = 0;
                    Iterable<Object> it = l.get();
                    if (it != null) {
                        for (Object ignored : it) {
                            n++;
                        }
                    }
                    if (n >= 3) {
                        List<Object> one = new ArrayList<>();
                        one.add(value);
                        l.update(one);
                    } else {
                        l.add(value);
                    }
                    break;
                }
                case "MAP":
                    ((MapState<String, Object>) h).put(Vals.userKey(v, keys), value);
                    break;
                case "REDUCING":
                    ((ReducingState<Object>) h).add(value);
                    break;
                case "AGGREGATING":
                    ((AggregatingState<Object, Object>) h).add(value);
                    break;
                default:
                    throw new IllegalArgumentException("unknown state kind " + s[1]);
            }
            if (first) {
                Probe.wrote(pk, k);
            }
        }
        if (first && timers) {
            ctx.timerService().registerProcessingTimeTimer(ctx.timerService().currentProcessingTime() + 86_400_000L);
        }
        out.collect(v);
    }

    @SuppressWarnings("unchecked")
    private String read(String kind, String type, Object h, long k) throws Exception {
        String r = Vals.ABSENT;
        switch (kind) {
            case "VALUE":
                return Vals.check(type, ((ValueState<Object>) h).value(), k, keys, null);
            case "REDUCING":
                return Vals.check(type, ((ReducingState<Object>) h).get(), k, keys, null);
            case "AGGREGATING":
                return Vals.check(type, ((AggregatingState<Object, Object>) h).get(), k, keys, null);
            case "LIST": {
                Iterable<Object> it = ((ListState<Object>) h).get();
                if (it != null) {
                    for (Object o : it) {
                        r = Vals.worst(r, Vals.check(type, o, k, keys, null));
                    }
                }
                return r;
            }
            default: {
                Iterable<Map.Entry<String, Object>> it = ((MapState<String, Object>) h).entries();
                if (it != null) {
                    for (Map.Entry<String, Object> e : it) {
                        r = Vals.worst(r, Vals.check(type, e.getValue(), k, keys, e.getKey()));
                    }
                }
                return r;
            }
        }
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<Long> out) {}
}
