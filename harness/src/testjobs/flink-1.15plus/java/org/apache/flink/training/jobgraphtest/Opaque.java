package org.apache.flink.training.jobgraphtest;

import java.io.Serializable;

/** Not a POJO (no no-argument constructor): Flink gives it to Kryo; the job registers it with Kryo. */
public class Opaque implements Serializable {
    private final long id;
    private final String label;

    public Opaque(long id) {
        this.id = id;
        this.label = "o" + id;
    }

    @Override
    public String toString() {
        return label + id;
    }
}
