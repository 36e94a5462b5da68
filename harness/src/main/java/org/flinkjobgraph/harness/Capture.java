package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.graph.StreamGraph;

import java.util.ArrayList;
import java.util.List;

/**
 * What the user's program submitted while {@code export} ran its main(): one StreamGraph per
 * submitted job, in submission order. Filled by the capturing executor (1.15+) or the capturing
 * context environment (1.9); nothing that lands here is ever executed.
 */
public final class Capture {
    private Capture() {}

    /** Thrown into the user's main() to stop it after the first job when {@code --first} is given. */
    public static final class Stop extends RuntimeException {
        Stop() {
            super("job captured by flink-jobgraph export (--first): main() stopped, nothing executed");
        }
    }

    /** A submitted pipeline that is not a StreamGraph (e.g. a DataSet Plan). */
    public static final class Unsupported extends RuntimeException {
        Unsupported(String msg) {
            super(msg);
        }
    }

    static final List<StreamGraph> GRAPHS = new ArrayList<>();
    static boolean stopAfterFirst = false;

    /** Records one submitted job. */
    public static synchronized void submitted(Object pipeline) {
        if (!(pipeline instanceof StreamGraph)) {
            throw new Unsupported(
                    "the program submitted a "
                            + (pipeline == null ? "null pipeline" : pipeline.getClass().getName())
                            + ", not a StreamGraph (DataSet API jobs cannot be exported); nothing was executed");
        }
        GRAPHS.add((StreamGraph) pipeline);
        if (stopAfterFirst) {
            throw new Stop();
        }
    }
}
