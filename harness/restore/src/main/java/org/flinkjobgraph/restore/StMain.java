package org.flinkjobgraph.restore;

import org.apache.flink.configuration.Configuration;
import org.flinkjobgraph.harness.Json;
import org.flinkjobgraph.harness.StreamGraphSpecExporter;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

/**
 * {@code statetypes}: real restores where the state's types decide (the format of
 * shared/vectors/statetypes).
 *
 * <pre>
 *   statetypes --seed S --count N --out X.jsonl.gz --cases-dir DIR [--start I] [--scratch D]
 *       same-line cases (v1 and v2 on this build's Flink), case ids st-&lt;line&gt;-s&lt;S&gt;-&lt;index&gt;
 *   statetypes --phase v1 --target 2.3 --seed S --count N --out P.jsonl.gz --cases-dir DIR --scratch D
 *       cross-version, first half on this build's Flink: v1, snapshot, Flink's reading with v1's
 *       classes; the snapshots stay in the scratch folder for the second half
 *   statetypes --phase v2 --from P.jsonl.gz --out X.jsonl.gz --cases-dir DIR
 *       second half on this build's Flink: v2 restores from each snapshot
 * </pre>
 *
 * scripts/statetypes_cross.py runs both halves with the two builds. Programs, snapshot settings
 * and edits are deterministic in (seed, index); a case whose run breaks (v1 does not fill its
 * states, a start neither runs nor fails in 60 s) is retried with a derived seed.
 */
final class StMain {
    private StMain() {}

    static void run(String[] args) throws Exception {
        long seed = 1;
        int count = 10;
        int start = 0;
        String out = null;
        String casesDir = null;
        String phase = "all";
        String target = null;
        String from = null;
        String scratch = System.getProperty("java.io.tmpdir") + "/statetypes-" + ProcessHandle.current().pid();
        boolean keepScratch = false;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--seed": seed = Long.parseLong(args[++i]); break;
                case "--count": count = Integer.parseInt(args[++i]); break;
                case "--start": start = Integer.parseInt(args[++i]); break;
                case "--out": out = args[++i]; break;
                case "--cases-dir": casesDir = args[++i]; break;
                case "--phase": phase = args[++i]; break;
                case "--target": target = args[++i]; break;
                case "--from": from = args[++i]; break;
                case "--scratch": scratch = args[++i]; break;
                case "--keep-scratch": keepScratch = true; break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (out == null || casesDir == null) {
            throw new IllegalArgumentException("usage: statetypes --seed S --count N --out X.jsonl.gz --cases-dir DIR"
                    + " [--phase all|v1|v2] [--target LINE] [--from P.jsonl.gz] [--start I] [--scratch D]");
        }
        String line = StreamGraphSpecExporter.flinkLine();
        Path cases = Path.of(casesDir);
        Files.createDirectories(cases);
        Path scratchDir = Path.of(scratch);
        long t0 = System.currentTimeMillis();
        Map<String, Integer> verdicts = new TreeMap<>();
        int retries = 0;
        int done = 0;
        boolean cross = !phase.equals("all");
        String jarsRel = cross ? "jars/flink-" + line : "jars";
        StJars jars = new StJars(cases.resolve(jarsRel), StJars.legacyApiFor(line));
        try (StRunner runner = new StRunner(new CompatImpl());
                Writer w = new OutputStreamWriter(new GZIPOutputStream(new BufferedOutputStream(Files.newOutputStream(Path.of(out)))),
                        StandardCharsets.UTF_8)) {
            if (phase.equals("v2")) {
                if (from == null) {
                    throw new IllegalArgumentException("--phase v2 needs --from (the first half's output)");
                }
                for (Map<String, Object> rec : readLines(Path.of(from))) {
                    String caseId = (String) rec.get("case_id");
                    boolean ok = false;
                    for (int attempt = 0; attempt < 2 && !ok; attempt++) {
                        try {
                            runner.runV2(rec, jars, cases, jarsRel);
                            ok = true;
                        } catch (Throwable t) {
                            retries++;
                            log(caseId + " v2 attempt " + attempt + " failed", t);
                        }
                    }
                    @SuppressWarnings("unchecked")
                    Map<String, Object> p1 = (Map<String, Object>) rec.get("_phase1");
                    if (!keepScratch) {
                        Runner.deleteRecursively(Path.of((String) p1.get("case_dir")));
                    }
                    if (!ok) {
                        System.err.println(caseId + ": giving up");
                        continue;
                    }
                    write(w, ordered(rec));
                    done++;
                    report(rec, verdicts);
                }
            } else {
                String set = cross ? "cross" : "same";
                if (cross && target == null) {
                    throw new IllegalArgumentException("--phase v1 needs --target (the Flink line v2 runs on)");
                }
                String lineId = cross ? line + "to" + target : line;
                for (int index = start; index < start + count; index++) {
                    String caseId = String.format("st-%s-s%d-%05d", lineId, seed, index);
                    Map<String, Object> rec = null;
                    for (int attempt = 0; attempt < 4 && rec == null; attempt++) {
                        long caseSeed = Main.caseSeed(seed, index, attempt);
                        StPlan plan = StPlan.make(caseId, set, caseSeed, index);
                        Path caseDir = scratchDir.resolve(caseId + "-a" + attempt);
                        Runner.deleteRecursively(caseDir);
                        try {
                            rec = runner.runV1(plan, jars, cases, caseDir, index, jarsRel);
                            if (attempt > 0) {
                                ((Map<String, Object>) rec.get("meta")).put("attempt", attempt);
                            }
                            if (!cross) {
                                runner.runV2(rec, jars, cases, jarsRel);
                            }
                        } catch (Throwable t) {
                            retries++;
                            rec = null;
                            log(caseId + " attempt " + attempt + " failed", t);
                            Files.deleteIfExists(cases.resolve(caseId + ".savepoint.tar.gz"));
                        } finally {
                            if (!cross && !keepScratch) {
                                Runner.deleteRecursively(caseDir);
                            }
                        }
                    }
                    if (rec == null) {
                        System.err.println(caseId + ": giving up");
                        continue;
                    }
                    write(w, cross ? rec : ordered(rec));
                    done++;
                    if (cross) {
                        verdicts.merge("v1-only", 1, Integer::sum);
                        System.err.println(caseId + " v1 done");
                    } else {
                        report(rec, verdicts);
                    }
                }
            }
        }
        jars.writeCatalogue(cases.resolve("jars/catalogue.json"), StClasses.jarVariants());
        if (!keepScratch && !phase.equals("v1")) {
            try {
                Files.deleteIfExists(scratchDir); // the per-case folders are gone: only an empty root is left
            } catch (java.io.IOException ignored) {
                // not empty (another run's cases): left alone
            }
        }
        double secs = (System.currentTimeMillis() - t0) / 1000.0;
        System.err.printf("flink %s %s: %d cases in %.1f s (%.2f s/case), %s, case errors (retried) %d%n",
                StreamGraphSpecExporter.flinkVersionFull(), phase.equals("all") ? "same" : "phase " + phase, done, secs,
                secs / Math.max(1, done), verdicts, retries);
    }

    /**
     * {@code statetypes-respec --in X.jsonl.gz --cases-dir DIR --side v1|v2 --out SPECS.jsonl}: builds
     * the recorded program of one side of every case again, from the case's own jar and runtime
     * settings, with this build's Flink (the line that side ran on), and writes its spec as the
     * exporter writes it now, one {@code {"case_id", "side", "spec"}} line per case. Nothing runs:
     * the real restores stay as recorded; scripts/statetypes_respec.py checks that the spec is the
     * recorded one plus the exporter's new fields and splices it into the set.
     */
    static void respec(String[] args) throws Exception {
        String in = null;
        String casesDir = null;
        String side = null;
        String out = null;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--in": in = args[++i]; break;
                case "--cases-dir": casesDir = args[++i]; break;
                case "--side": side = args[++i]; break;
                case "--out": out = args[++i]; break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (in == null || casesDir == null || out == null || !("v1".equals(side) || "v2".equals(side))) {
            throw new IllegalArgumentException(
                    "usage: statetypes-respec --in X.jsonl.gz --cases-dir DIR --side v1|v2 --out SPECS.jsonl");
        }
        Path scratch = Files.createTempDirectory("statetypes-respec");
        long t0 = System.currentTimeMillis();
        int done = 0;
        try (StRunner runner = new StRunner(new CompatImpl(), false);
                Writer w = Files.newBufferedWriter(Path.of(out), StandardCharsets.UTF_8)) {
            for (Map<String, Object> rec : readLines(Path.of(in))) {
                String caseId = (String) rec.get("case_id");
                @SuppressWarnings("unchecked")
                Map<String, Object> prog = (Map<String, Object>) rec.get(side + "_program");
                @SuppressWarnings("unchecked")
                Map<String, Object> rt = (Map<String, Object>) rec.get("runtime");
                String desc = (String) ((List<?>) prog.get("args")).get(0);
                // the job's own jars: its job jar and (sets from seed 41) the support jar of its variant
                List<Path> own = new ArrayList<>();
                own.add(Path.of(casesDir).resolve((String) prog.get("jar")));
                for (Object o : (List<?>) prog.getOrDefault("classpath", List.of())) {
                    own.add(Path.of(casesDir).resolve((String) o));
                }
                List<Path> jobJars = StRunner.jobJars(own, desc);
                try (java.net.URLClassLoader cl = StRunner.loader(jobJars)) {
                    Configuration conf = runner.jobConf(rt, scratch, side.equals("v1"));
                    StRunner.Job j = runner.build(cl, jobJars, own.size(), desc, conf, caseId + "/" + side, false);
                    Map<String, Object> line = new LinkedHashMap<>();
                    line.put("case_id", caseId);
                    line.put("side", side);
                    line.put("spec", j.spec);
                    write(w, line);
                    done++;
                }
            }
        } finally {
            Runner.deleteRecursively(scratch);
        }
        System.err.printf("flink %s respec %s: %d specs in %.1f s%n", StreamGraphSpecExporter.flinkVersionFull(), side,
                done, (System.currentTimeMillis() - t0) / 1000.0);
    }

    static void log(String what, Throwable t) {
        System.err.println(what + ": " + t);
        for (Throwable x = t.getCause(); x != null && x != x.getCause(); x = x.getCause()) {
            System.err.println("   caused by " + x);
        }
    }

    static void report(Map<String, Object> rec, Map<String, Integer> verdicts) {
        String v = rec.get("verdict") + (rec.get("failure_stage") == null ? "" : "/" + rec.get("failure_stage"));
        verdicts.merge(v, 1, Integer::sum);
        System.err.printf("%s %s %s %s%n", rec.get("case_id"), v, ((Map<?, ?>) rec.get("subject")).get("edit"),
                rec.get("error_class") == null ? "" : rec.get("error_class") + ": " + truncate((String) rec.get("error_message"), 140));
    }

    static String truncate(String s, int n) {
        return s == null || s.length() <= n ? s : s.substring(0, n) + "...";
    }

    static final String[] ORDER = {
        "case_id", "set", "flink_version_v1", "flink_version_v2", "subject", "edits", "states_v1", "states_v2",
        "runtime", "job_config_v1", "v1_program", "v2_program", "verdict", "failure_stage", "error_class",
        "error_message", "error_chain", "task_states", "notes", "declared_types_v1", "declared_types_v2",
        "state_probe", "values_check", "records_before_savepoint", "records_after_restore", "savepoint", "v1", "v2",
        "v1_expected", "v2_expected", "meta"
    };

    /** The vectors' field order; the first half's hand-over (_phase1) is dropped. */
    static Map<String, Object> ordered(Map<String, Object> rec) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (String k : ORDER) {
            m.put(k, rec.get(k));
        }
        return m;
    }

    static void write(Writer w, Map<String, Object> rec) throws Exception {
        w.write(Json.write(rec));
        w.write('\n');
        w.flush();
    }

    static List<Map<String, Object>> readLines(Path p) throws Exception {
        List<Map<String, Object>> out = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(new GZIPInputStream(Files.newInputStream(p)),
                StandardCharsets.UTF_8))) {
            for (String l; (l = r.readLine()) != null; ) {
                if (!l.isBlank()) {
                    out.add(Json.readObject(l));
                }
            }
        }
        return out;
    }
}
