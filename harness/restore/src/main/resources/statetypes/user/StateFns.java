package statetypes.user;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.ReduceFunction;

/** The functions of the jobs' keyed reducing and aggregating states: both keep the latest value. */
public final class StateFns {
    private StateFns() {}

    /** A reducing state's function: the latest value. */
    public static final class Latest<T> implements ReduceFunction<T> {
        @Override
        public T reduce(T a, T b) {
            return b;
        }
    }

    /** An aggregating state's function: the accumulator (and the result) is the latest value. */
    public static final class Keep<T> implements AggregateFunction<T, T, T> {
        @Override
        public T createAccumulator() {
            return null;
        }

        @Override
        public T add(T value, T acc) {
            return value;
        }

        @Override
        public T getResult(T acc) {
            return acc;
        }

        @Override
        public T merge(T a, T b) {
            return b;
        }
    }
}
