package statetypes.user;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Keyed value / list / map states of any of the value types, registered in open() (as users do)
 * or on the first record ("lazy"). Every record writes every state; the first record of each
 * key (per instance) first reads every state and reports what it found, so after a restore
 * every state of every key is accessed.
 */
public final class KeyedStateFn extends KeyedProcessFunction<Object, Long, Long> {
    private final String probeKey;
    private final List<String[]> states;
    private final boolean lazy;
    private final int keys;
    private final boolean timers;
    private transient List<Object> handles;
    private transient Set<Long> seen;

    public KeyedStateFn(String probeKey, List<String[]> states, boolean lazy, int keys, boolean timers) {
        this.probeKey = probeKey;
        this.states = states;
        this.lazy = lazy;
        this.keys = keys;
        this.timers = timers;
    }

//#if LEGACY_API
    @Override
    public void open(org.apache.flink.configuration.Configuration parameters) throws Exception {
        if (!lazy) {
            register();
        }
    }
//#else
    @Override
    public void open(org.apache.flink.api.common.functions.OpenContext ctx) throws Exception {
        if (!lazy) {
            register();
        }
    }
//#endif

    private void register() {
        List<Object> h = new ArrayList<>();
        for (String[] s : states) {
            TypeInformation<Object> info = Vals.info(s[2]);
            switch (s[1]) {
                case "VALUE":
                    h.add(getRuntimeContext().getState(new ValueStateDescriptor<>(s[0], info)));
                    break;
                case "LIST":
                    h.add(getRuntimeContext().getListState(new ListStateDescriptor<>(s[0], info)));
                    break;
                case "MAP":
                    h.add(getRuntimeContext().getMapState(new MapStateDescriptor<>(s[0], Types.STRING, info)));
                    break;
                default:
                    throw new IllegalArgumentException("unknown state kind " + s[1]);
            }
        }
        handles = h;
    }

    @Override
    @SuppressWarnings("unchecked")
    public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {
        if (handles == null) {
            register();
        }
        if (seen == null) {
            seen = new HashSet<>();
        }
        long k = Vals.keyNumber(ctx.getCurrentKey());
        boolean first = seen.add(k);
        for (int i = 0; i < states.size(); i++) {
            String[] s = states.get(i);
            String pk = probeKey + "|" + s[0];
            Object h = handles.get(i);
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
                default:
                    ((MapState<String, Object>) h).put(Vals.userKey(v, keys), value);
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
