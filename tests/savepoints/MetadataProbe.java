import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.File;
import java.io.FileInputStream;
import java.lang.reflect.Method;
import java.util.Optional;

/**
 * Prints, for each _metadata file given, what Flink's own reader (the flink-runtime on the
 * classpath) reads from it, as one JSON line: the fields udfs/savepoint_metadata.py reports.
 * Used by tests/savepoints/record_flink_reads.sh to record real-Flink answers for the synthetic
 * files (layouts no real savepoint of the vectors contains).
 */
public class MetadataProbe {
    public static void main(String[] args) throws Exception {
        for (String path : args) {
            File file = new File(path);
            StringBuilder out = new StringBuilder("{\"file\":").append(q(file.getParentFile().getName()));
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(file)))) {
                CheckpointMetadata m = Checkpoints.loadCheckpointMetadata(
                        in, MetadataProbe.class.getClassLoader(), file.getParentFile().toURI().toString());
                out.append(",\"checkpoint_id\":").append(m.getCheckpointId());
                out.append(",\"master_states\":").append(m.getMasterStates().size());
                out.append(",\"remaining_bytes\":").append(in.available() + (in.read() == -1 ? 0 : 1));
                out.append(",\"operators\":[");
                boolean first = true;
                for (OperatorState op : m.getOperatorStates()) {
                    if (!first) out.append(',');
                    first = false;
                    boolean hasState = op.getCoordinatorState() != null;
                    int finished = 0;
                    for (OperatorSubtaskState s : op.getStates()) {
                        hasState |= s.hasState();
                        if (s.isFinished()) finished++;
                    }
                    out.append("{\"operator_id\":").append(q(op.getOperatorID().toString()))
                            .append(",\"parallelism\":").append(op.getParallelism())
                            .append(",\"max_parallelism\":").append(op.getMaxParallelism())
                            .append(",\"has_state\":").append(hasState)
                            .append(",\"state_size\":").append(op.getStateSize())
                            .append(",\"subtask_count\":").append(op.getSubtaskStates().size())
                            .append(",\"finished_subtasks\":").append(finished)
                            .append(",\"fully_finished\":").append(op.isFullyFinished())
                            .append(",\"operator_name\":").append(q(optional(op, "getOperatorName")))
                            .append(",\"operator_uid\":").append(q(optional(op, "getOperatorUid")))
                            .append('}');
                }
                out.append(']');
            } catch (Throwable t) {
                out.append(",\"error\":").append(q(t.getClass().getName() + ": " + t.getMessage()));
            }
            System.out.println(out.append('}'));
        }
    }

    private static String optional(OperatorState op, String getter) throws Exception {
        try {
            Method m = OperatorState.class.getMethod(getter);
            Object v = m.invoke(op);
            return v instanceof Optional ? (String) ((Optional<?>) v).orElse(null) : null;
        } catch (NoSuchMethodException e) {
            return null; // Flink < 2.0: the format has no names
        }
    }

    private static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
