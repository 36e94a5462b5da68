package statetypes.user;

import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;

import java.util.ArrayList;
import java.util.List;

/**
 * Operator list state (split or union redistribution) of any value type: the last three values
 * of the instance, written at every snapshot. The job's own subclass (BufferFn, generated per
 * job) declares the state in initializeState and hands it over with {@link #restored}, which
 * reads what was restored (every instance reports).
 */
public abstract class OpStateFn extends RichMapFunction<Long, Long> implements CheckpointedFunction {
    private final String probeKey;
    private final String stateName;
    private final String type;
    private transient ListState<Object> state;
    private transient List<Object> buffer;
    private transient boolean written;

    protected OpStateFn(String probeKey, String stateName, String type) {
        this.probeKey = probeKey;
        this.stateName = stateName;
        this.type = type;
    }

    private String who() {
        return "i" + Integer.toHexString(System.identityHashCode(this));
    }

    /** The registered state: reads what it holds (restored values), then keeps it for snapshots. */
    @SuppressWarnings("unchecked")
    protected final void restored(ListState<?> registered) throws Exception {
        state = (ListState<Object>) registered;
        buffer = new ArrayList<>();
        String r = Vals.ABSENT;
        Iterable<Object> it = state.get();
        if (it != null) {
            for (Object o : it) {
                r = Vals.worst(r, Vals.check(type, o, -1, 0, null));
                buffer.add(o);
            }
        }
        while (buffer.size() > 3) {
            buffer.remove(0);
        }
        Probe.probe(probeKey + "|" + stateName, who(), r);
    }

    @Override
    public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
        state.update(new ArrayList<>(buffer));
    }

    @Override
    public Long map(Long v) {
        buffer.add(Vals.make(type, v));
        while (buffer.size() > 3) {
            buffer.remove(0);
        }
        if (!written) {
            written = true;
            Probe.wrote(probeKey + "|" + stateName, who());
        }
        return v;
    }
}
