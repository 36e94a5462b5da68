package statetypes.user;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.java.tuple.Tuple2;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The window functions: the state is Flink's own window state ("window-contents"), an
 * aggregating state with a typed accumulator or a reducing state of (number, value) pairs.
 */
public final class WinFns {
    private WinFns() {}

    /** Record numbers this job (this class loader: one per job) emitted into the reduce window. */
    static final Set<Long> SEEN = ConcurrentHashMap.newKeySet();

    /** Key numbers this job emitted into the reduce window. */
    static final Set<Long> KEYS = ConcurrentHashMap.newKeySet();

    /**
     * The accumulator is the latest value; the first add per key reports what was there. (A type
     * variable, not Object: the job passes the accumulator's TypeInformation explicitly, which
     * the type extractor would otherwise check against Object and refuse for a POJO.)
     */
    public static final class Agg<A> implements AggregateFunction<Long, A, Long> {
        private final String probeKey;
        private final String type;
        private final int keys;
        private transient boolean justCreated;
        private transient Set<Long> seen;

        public Agg(String probeKey, String type, int keys) {
            this.probeKey = probeKey;
            this.type = type;
            this.keys = keys;
        }

        @Override
        @SuppressWarnings("unchecked")
        public A createAccumulator() {
            justCreated = true;
            return (A) Vals.make(type, 0);
        }

        @Override
        @SuppressWarnings("unchecked")
        public A add(Long v, A acc) {
            boolean fresh = justCreated;
            justCreated = false;
            if (seen == null) {
                seen = new HashSet<>();
            }
            long k = v % keys;
            if (seen.add(k)) {
                Probe.probe(probeKey, k, fresh ? Vals.ABSENT : Vals.check(type, acc, k, keys, null));
                Probe.wrote(probeKey, k);
            }
            return (A) Vals.make(type, v);
        }

        @Override
        public Long getResult(A acc) {
            return 0L;
        }

        @Override
        public A merge(A a, A b) {
            return b;
        }
    }

    /** (v, value of v), remembering v: a reduce input not seen in this job was restored. */
    public static final class ToPair implements MapFunction<Long, Tuple2<Long, Object>> {
        private final String probeKey;
        private final String type;
        private final int keys;

        public ToPair(String probeKey, String type, int keys) {
            this.probeKey = probeKey;
            this.type = type;
            this.keys = keys;
        }

        @Override
        public Tuple2<Long, Object> map(Long v) {
            SEEN.add(v);
            if (KEYS.add(v % keys)) {
                Probe.wrote(probeKey, v % keys);
            }
            return Tuple2.of(v, Vals.make(type, v));
        }
    }

    /** Keeps the latest pair; the first reduce per key says whether the kept one was restored. */
    public static final class Red implements ReduceFunction<Tuple2<Long, Object>> {
        private final String probeKey;
        private final String type;
        private final int keys;
        private transient Set<Long> seen;

        public Red(String probeKey, String type, int keys) {
            this.probeKey = probeKey;
            this.type = type;
            this.keys = keys;
        }

        @Override
        public Tuple2<Long, Object> reduce(Tuple2<Long, Object> a, Tuple2<Long, Object> b) {
            if (seen == null) {
                seen = new HashSet<>();
            }
            long k = b.f0 % keys;
            if (seen.add(k)) {
                String r;
                if (SEEN.contains(a.f0)) {
                    r = Vals.ABSENT; // the kept pair is this job's own: nothing was restored
                } else {
                    r = Vals.check(type, a.f1, k, keys, null);
                    Long o = Vals.origin(type, a.f1);
                    if (r.equals(Vals.PRESENT) && o != null && o >= 0 && !o.equals(a.f0)) {
                        r = Vals.INCONSISTENT + ": pair (" + a.f0 + ", " + a.f1 + ")";
                    }
                }
                Probe.probe(probeKey, k, r);
            }
            return b;
        }
    }
}
