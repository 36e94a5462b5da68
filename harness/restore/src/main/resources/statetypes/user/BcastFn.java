package statetypes.user;

import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.util.Collector;

import java.util.Map;

/**
 * Broadcast state (String -> any value type): every broadcast record writes one of four entries;
 * the first broadcast record of an instance first reads what the state holds. The job's own
 * subclass (RulesFn, generated per job) re-creates the descriptor main() passed to broadcast(...)
 * and hands the state over with {@link #broadcastRecord}.
 */
public abstract class BcastFn extends KeyedBroadcastProcessFunction<Object, Long, Long, Long> {
    private final String probeKey;
    private final String stateName;
    private final String type;
    private transient boolean probed;
    private transient boolean written;

    protected BcastFn(String probeKey, String stateName, String type) {
        this.probeKey = probeKey;
        this.stateName = stateName;
        this.type = type;
    }

    private String who() {
        return "i" + Integer.toHexString(System.identityHashCode(this));
    }

    @Override
    public void processElement(Long v, ReadOnlyContext ctx, Collector<Long> out) {
        out.collect(v);
    }

    /** A broadcast record: the first one reads the state; each writes one entry. */
    @SuppressWarnings("unchecked")
    protected final void broadcastRecord(Long v, BroadcastState<String, ?> state) throws Exception {
        BroadcastState<String, Object> st = (BroadcastState<String, Object>) state;
        String pk = probeKey + "|" + stateName;
        if (!probed) {
            probed = true;
            String r = Vals.ABSENT;
            for (Map.Entry<String, Object> e : st.entries()) {
                r = Vals.worst(r, Vals.check(type, e.getValue(), -1, 0, null));
            }
            Probe.probe(pk, who(), r);
        }
        st.put("b" + (v % 4), Vals.make(type, v));
        if (!written) {
            written = true;
            Probe.wrote(pk, who());
        }
    }
}
