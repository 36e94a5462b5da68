package statetypes.user;

import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;

/** Key of a record number v: key number v % keys, as a Long, String, Tuple2 or POJO. */
public final class KeySel implements KeySelector<Long, Object> {
    private final String type;
    private final int keys;

    public KeySel(String type, int keys) {
        this.type = type;
        this.keys = keys;
    }

    @Override
    public Object getKey(Long v) {
        return Vals.key(type, v % keys);
    }

    /** The same key for the (number, value) pairs the window reduce keeps. */
    public static final class OfPair implements KeySelector<Tuple2<Long, Object>, Object> {
        private final String type;
        private final int keys;

        public OfPair(String type, int keys) {
            this.type = type;
            this.keys = keys;
        }

        @Override
        public Object getKey(Tuple2<Long, Object> t) {
            return Vals.key(type, t.f0 % keys);
        }
    }
}
