package statetypes.user;

import java.util.Queue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the job tells the harness: records emitted, and per state its first write and what its
 * first access found ("p|probeKey|who|outcome"). The harness installs a JVM-wide counter and
 * queue (system properties hold JDK objects, visible from every class loader); run on its own,
 * the job reports nowhere.
 */
final class Probe {
    private Probe() {}

    static void count() {
        Object c = System.getProperties().get("statetypes.probe.count");
        if (c instanceof AtomicLong) {
            ((AtomicLong) c).incrementAndGet();
        }
    }

    @SuppressWarnings("unchecked")
    static void event(String e) {
        Object q = System.getProperties().get("statetypes.probe.events");
        if (q instanceof Queue) {
            ((Queue<String>) q).add(e);
        }
    }

    /** The first access of a state found {@code outcome} (for a key, or for an operator instance). */
    static void probe(String probeKey, Object who, String outcome) {
        event("p|" + probeKey + "|" + who + "|" + outcome);
    }

    /** A state got its first value (for a key, or in an operator instance). */
    static void wrote(String probeKey, Object who) {
        event("w|" + probeKey + "|" + who);
    }
}
