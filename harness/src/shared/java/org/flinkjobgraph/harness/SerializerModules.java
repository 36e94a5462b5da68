package org.flinkjobgraph.harness;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The graph field {@code serializer_modules}: which optional Flink modules that ship serializer
 * snapshot classes the job's class path can load (docs/spec-extensions.md).
 *
 * <p>A task restores its state with the job's user code class loader: every saved serializer
 * snapshot is read by its class name ({@code TypeSerializerSnapshot.readVersionedSnapshot} ->
 * {@code InstantiationUtil.resolveClassByName}), so a savepoint that holds a snapshot of a module
 * the new job no longer bundles (flink-avro's {@code AvroSerializerSnapshot} after its Avro state
 * was removed) fails the restore with {@code ClassNotFoundException}, even when no state of the
 * new job uses it: the backend reads every saved state's snapshot. The restore check needs to
 * know which of these modules the new job has, and only the export sees its class path.
 *
 * <p>A module counts as loadable when one of its probe classes (a snapshot class it ships on the
 * lines it exists in) loads with the job's class loader, without initialising it. The module
 * names and the snapshot classes each one ships are mirrored in
 * {@code udfs/savepoint/serializer_snapshots.py} ({@code SERIALIZER_MODULES}), which the restore
 * rules read; a test keeps the two lists equal.
 */
public final class SerializerModules {
    private SerializerModules() {}

    /** Module name, then its probe classes (any one loading is enough). */
    static final String[][] PROBES = {
        {"flink-avro", "org.apache.flink.formats.avro.typeutils.AvroSerializerSnapshot"},
        {"flink-cep", "org.apache.flink.cep.nfa.NFAStateSerializerSnapshot"},
        // the 1.x Scala API; 2.x has none (its Scala serializers moved to flink-table-api-scala)
        {"flink-scala", "org.apache.flink.api.scala.typeutils.ScalaCaseClassSerializerSnapshot"},
        {"flink-table-api-scala", "org.apache.flink.table.api.typeutils.ScalaCaseClassSerializerSnapshot"},
        {
            "flink-table-runtime",
            "org.apache.flink.table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot",
            // 1.9 - 1.10 (flink-table-runtime-blink)
            "org.apache.flink.table.runtime.typeutils.BaseRowSerializer$BaseRowSerializerSnapshot"
        },
    };

    /** Module name -> whether {@code loader} can load its snapshot classes, in {@link #PROBES} order. */
    public static Map<String, Object> probe(ClassLoader loader) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String[] module : PROBES) {
            boolean found = false;
            for (int i = 1; i < module.length && !found; i++) {
                try {
                    Class.forName(module[i], false, loader);
                    found = true;
                } catch (ClassNotFoundException | LinkageError e) {
                    // not on this class path
                }
            }
            out.put(module[0], found);
        }
        return out;
    }
}
