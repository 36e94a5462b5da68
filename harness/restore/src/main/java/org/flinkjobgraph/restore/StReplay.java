package org.flinkjobgraph.restore;

import org.flinkjobgraph.harness.StreamGraphSpecExporter;

import java.io.BufferedOutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPOutputStream;

/**
 * {@code statetypes-replay --in R.jsonl.gz --cases-dir DIR --out O.jsonl.gz}: restores the
 * recorded v2 of statetypes cases again, from the recorded snapshot, on this build's Flink (the
 * line v2 ran on), and writes what Flink did each time. Used to learn whether an outcome is a
 * function of the saved bytes or of a race (docs/state-rules.md, "Determinism").
 *
 * <p>Each input line is a recorded case (the set's own line) with {@code _replay}: {@code pointer}
 * (the unpacked snapshot folder; a retained checkpoint's absolute files put back where its
 * {@code _metadata} names them) and {@code case_dir} (a fresh scratch folder for this run). The
 * program, jars and runtime settings are the case's own: v2's job jar is built again from its
 * description (jars are byte-for-byte deterministic, {@link StJars}) into {@code DIR}.
 * scripts/statetypes_replay.py lays out the inputs, runs this and compares the runs.
 */
final class StReplay {
    private StReplay() {}

    static final String[] OUT = {
        "verdict", "failure_stage", "error_class", "error_message", "error_chain", "task_states", "state_probe",
        "values_check"
    };

    static void run(String[] args) throws Exception {
        String in = null;
        String casesDir = null;
        String out = null;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--in": in = args[++i]; break;
                case "--cases-dir": casesDir = args[++i]; break;
                case "--out": out = args[++i]; break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (in == null || casesDir == null || out == null) {
            throw new IllegalArgumentException("usage: statetypes-replay --in R.jsonl.gz --cases-dir DIR --out O.jsonl.gz");
        }
        String line = StreamGraphSpecExporter.flinkLine();
        String jarsRel = "jars/flink-" + line;
        Path cases = Path.of(casesDir);
        StJars jars = new StJars(cases.resolve(jarsRel), StJars.legacyApiFor(line));
        int done = 0;
        try (StRunner runner = new StRunner(new CompatImpl());
                Writer w = new OutputStreamWriter(new GZIPOutputStream(new BufferedOutputStream(
                        Files.newOutputStream(Path.of(out)))), StandardCharsets.UTF_8)) {
            for (Map<String, Object> rec : StMain.readLines(Path.of(in))) {
                Map<String, Object> result = new LinkedHashMap<>();
                result.put("case_id", rec.get("case_id"));
                result.put("run", rec.get("_run"));
                try {
                    phase1(rec);
                    runner.runV2(rec, jars, cases, jarsRel);
                    for (String k : OUT) {
                        result.put(k, rec.get(k));
                    }
                } catch (Throwable t) {
                    StMain.log(rec.get("case_id") + " replay failed", t);
                    result.put("replay_error", String.valueOf(t));
                }
                result.put("flink_version_v2", StreamGraphSpecExporter.flinkVersionFull());
                StMain.write(w, result);
                done++;
                System.err.println(rec.get("case_id") + " run " + rec.get("_run") + ": " + result.get("verdict") + " "
                        + result.get("error_class") + ": " + StMain.truncate((String) result.get("error_message"), 140));
            }
        }
        System.err.printf("flink %s replay: %d runs%n", StreamGraphSpecExporter.flinkVersionFull(), done);
    }

    /** The first half's hand-over (StRunner.runV1's {@code _phase1}) rebuilt from the recorded case. */
    @SuppressWarnings("unchecked")
    static void phase1(Map<String, Object> rec) {
        Map<String, Object> replay = (Map<String, Object>) rec.get("_replay");
        Map<String, Object> v1 = (Map<String, Object>) rec.get("v1_program");
        Map<String, Object> v2 = (Map<String, Object>) rec.get("v2_program");
        String desc2 = (String) ((List<Object>) v2.get("args")).get(0);
        StPlan.Prog prog2 = StPlan.parse(desc2);
        List<Object> expected = new ArrayList<>();
        for (StPlan.St s : prog2.states()) {
            expected.add(List.of(s.probeKey(), s.expected(prog2)));
        }
        Map<String, Object> p1 = new LinkedHashMap<>();
        p1.put("pointer", replay.get("pointer"));
        p1.put("case_dir", replay.get("case_dir"));
        p1.put("v2_description", desc2);
        p1.put("jar_v2", v2.get("jar_variant"));
        p1.put("job_jar_v1", v1.get("jar"));
        p1.put("v2_states", expected);
        rec.put("_phase1", p1);
        for (String side : new String[] {"states_v1", "states_v2"}) {
            for (Object o : (List<Object>) rec.get(side)) {
                ((Map<String, Object>) o).remove("restored");
            }
        }
    }
}
