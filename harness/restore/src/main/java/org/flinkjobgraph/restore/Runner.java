package org.flinkjobgraph.restore;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.executiongraph.ArchivedExecutionGraph;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.graph.StreamingJobGraphGenerator;
import org.flinkjobgraph.harness.JobGraphExpected;
import org.flinkjobgraph.harness.StreamGraphSpecExporter;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One embedded MiniCluster for a whole run; per case: run v1, take a real savepoint (or a retained
 * checkpoint), edit the program, start v2 from it with allowNonRestoredState false (and true if
 * that failed), and record what Flink did.
 */
public final class Runner implements AutoCloseable {
    static final long TIMEOUT_MS = Cluster.TIMEOUT_MS;

    private final MiniCluster mc;
    private final Builder builder;
    private final Compat compat;
    private final Path scratch;
    private final String line;

    public Runner(Compat compat, Path scratch) throws Exception {
        this.builder = new Builder(compat);
        this.compat = compat;
        this.scratch = scratch;
        this.line = StreamGraphSpecExporter.flinkLine();
        Files.createDirectories(scratch);
        mc = Cluster.start();
    }

    @Override
    public void close() throws Exception {
        mc.close();
    }

    /** How v1 is snapshotted (chosen per case). */
    static final class Settings {
        String backend;
        boolean incremental;
        String storage;
        String threshold;
        String format;
        String takenBy;
        int checkpoints;
    }

    static Settings randomSettings(Random r) {
        Settings s = new Settings();
        s.backend = r.nextInt(100) < 55 ? "hashmap" : "rocksdb";
        s.incremental = s.backend.equals("rocksdb") && r.nextBoolean();
        s.storage = r.nextInt(100) < 10 ? "jobmanager" : "filesystem";
        s.threshold = s.storage.equals("jobmanager") ? null : (r.nextInt(100) < 25 ? "0b" : "1mb");
        int t = r.nextInt(100);
        s.takenBy = t < 14 ? "retained-checkpoint" : t < 60 ? "stop-with-savepoint" : "trigger-savepoint+cancel";
        if (s.takenBy.equals("retained-checkpoint")) {
            s.format = null;
            s.checkpoints = 1 + r.nextInt(2);
        } else {
            s.format = s.backend.equals("rocksdb") && r.nextBoolean() ? "NATIVE" : "CANONICAL";
        }
        return s;
    }

    Configuration jobConf(Settings s, Path caseDir, boolean v1) {
        Configuration c = new Configuration();
        c.set(StateBackendOptions.STATE_BACKEND, s.backend);
        c.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, s.incremental);
        c.set(CheckpointingOptions.CHECKPOINT_STORAGE, s.storage);
        c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, caseDir.resolve("checkpoints").toUri().toString());
        c.set(CheckpointingOptions.SAVEPOINT_DIRECTORY, caseDir.resolve("savepoints").toUri().toString());
        if (s.threshold != null) {
            c.set(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD, MemorySize.parse(s.threshold));
        }
        c.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        if (v1 && s.takenBy.equals("retained-checkpoint")) {
            compat.retainCheckpoints(c);
        }
        return c;
    }

    /**
     * What {@code flink run -s <pointer> [--allowNonRestoredState]} puts in the job's configuration
     * (the restore path and flag under the line's option keys, and the default restore mode).
     */
    static void restoreFrom(Configuration c, String pointer, boolean allowNonRestoredState) {
        SavepointRestoreSettings.toConfiguration(SavepointRestoreSettings.forPath(pointer, allowNonRestoredState), c);
    }

    /** The JobGraph Flink's client would submit, plus Flink's JobGraph answer in spec form. */
    static final class Job {
        Builder.Built built;
        JobGraph jobGraph;
        Map<String, Object> expected;
        Map<String, Object> spec;
    }

    Job job(Program p, Configuration conf, String caseId, String graphId) {
        Job j = new Job();
        j.built = builder.build(p, conf, caseId);
        j.spec = StreamGraphSpecExporter.export(j.built.streamGraph, graphId);
        j.jobGraph = StreamingJobGraphGenerator.createJobGraph(j.built.streamGraph);
        j.expected = JobGraphExpected.read(j.built.streamGraph, j.jobGraph);
        j.expected.remove("flink_version_full");
        // what the client does with execution.state-recovery.path / execution.savepoint.path
        j.jobGraph.setSavepointRestoreSettings(SavepointRestoreSettings.fromConfiguration(conf));
        return j;
    }

    /** Outcome of one start. */
    static final class Outcome {
        String verdict;
        Throwable error;
        String stage;
    }

    /** Jobs of the current case; whatever still runs when the case ends is cancelled. */
    private final List<JobID> submitted = new ArrayList<>();

    Outcome startAndObserve(JobGraph jg) throws Exception {
        JobID id = jg.getJobID();
        submitted.add(id);
        mc.submitJob(jg).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        boolean everDeployed = false;
        while (System.currentTimeMillis() < deadline) {
            JobStatus st = mc.getJobStatus(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            if (st.isGloballyTerminalState()) {
                JobResult res = mc.requestJobResult(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                Outcome o = new Outcome();
                o.verdict = "FAILED";
                if (res.getSerializedThrowable().isPresent()) {
                    o.error = res.getSerializedThrowable().get().deserializeError(Runner.class.getClassLoader());
                } else {
                    o.error = new IllegalStateException("job ended " + st + " without an error");
                }
                o.stage = stage(o.error, everDeployed);
                return o;
            }
            if (st == JobStatus.RUNNING) {
                ArchivedExecutionGraph g = mc.getArchivedExecutionGraph(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                boolean all = true;
                for (AccessExecutionVertex v : g.getAllExecutionVertices()) {
                    ExecutionState es = v.getExecutionState();
                    if (es != ExecutionState.CREATED && es != ExecutionState.SCHEDULED) {
                        everDeployed = true;
                    }
                    // a FLIP-27 reader that gets no split (more readers than saved splits) finishes
                    all &= es == ExecutionState.RUNNING || es == ExecutionState.FINISHED;
                }
                if (all) {
                    Outcome o = new Outcome();
                    o.verdict = "RESTORED";
                    return o;
                }
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("job " + id + " neither RUNNING nor failed after " + TIMEOUT_MS + " ms: "
                + executionStates(id));
    }

    String executionStates(JobID id) {
        try {
            Map<String, Integer> m = new java.util.TreeMap<>();
            for (AccessExecutionVertex v : mc.getArchivedExecutionGraph(id).get().getAllExecutionVertices()) {
                m.merge(v.getTaskNameWithSubtaskIndex().replaceAll(" \\(\\d+/\\d+\\).*", "") + "="
                        + v.getExecutionState(), 1, Integer::sum);
            }
            return m.toString();
        } catch (Exception e) {
            return e.toString();
        }
    }

    /**
     * job_init when the JobMaster refused the job (Flink wraps what fails while it starts, the
     * savepoint's restore included, in a JobInitializationException); otherwise a task failed.
     * Whether a poll saw a task deployed is no test: a task that fails at once (a key serializer
     * that cannot read the state) can end the job between two polls.
     */
    static String stage(Throwable t, boolean deployed) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            if (x.getClass().getSimpleName().equals("JobInitializationException")) {
                return "job_init";
            }
        }
        return "task";
    }

    void cancelAndWait(JobID id) throws Exception {
        Cluster.cancelAndWait(mc, id);
    }

    /** Waits until every subtask of a fresh (not restored) job runs. */
    void waitAllRunning(JobID id) throws Exception {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            JobStatus st = mc.getJobStatus(id).get();
            if (st.isGloballyTerminalState()) {
                JobResult res = mc.requestJobResult(id).get();
                Throwable t = res.getSerializedThrowable().isPresent()
                        ? res.getSerializedThrowable().get().deserializeError(Runner.class.getClassLoader())
                        : null;
                throw new IllegalStateException("v1 ended " + st, t);
            }
            if (st == JobStatus.RUNNING) {
                boolean all = true;
                for (AccessExecutionVertex v : mc.getArchivedExecutionGraph(id).get().getAllExecutionVertices()) {
                    ExecutionState es = v.getExecutionState();
                    all &= es == ExecutionState.RUNNING || es == ExecutionState.FINISHED;
                }
                if (all) {
                    return;
                }
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("v1 not running after " + TIMEOUT_MS + " ms: " + executionStates(id));
    }

    /** Runs one case; the returned map has the output line's fields plus "_metadata" bytes. */
    public Map<String, Object> runCase(String caseId, long seed, int index, int attempt, long caseSeed)
            throws Exception {
        long t0 = System.currentTimeMillis();
        Random r = new Random(caseSeed);
        Path caseDir = scratch.resolve(caseId + "-a" + attempt);
        deleteRecursively(caseDir);
        Files.createDirectories(caseDir);
        try {
            Program v1 = Program.random(r);
            Settings s = randomSettings(r);
            Job j1 = job(v1, jobConf(s, caseDir, true), caseId, caseId + "/v1");

            // ---- run v1 and snapshot it
            JobID id1 = j1.jobGraph.getJobID();
            submitted.add(id1);
            mc.submitJob(j1.jobGraph).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            waitAllRunning(id1);
            long tRunning = System.currentTimeMillis();
            long e0 = Fns.EMITTED.get();
            long waitUntil = System.currentTimeMillis() + 3000;
            Thread.sleep(250);
            while (Fns.EMITTED.get() - e0 < 20 && System.currentTimeMillis() < waitUntil) {
                Thread.sleep(20);
            }
            long records = Fns.EMITTED.get() - e0;
            String pointer = Cluster.snapshot(mc, id1, s.takenBy, s.format, s.checkpoints, caseDir);
            long tSavepoint = System.currentTimeMillis();
            String local = pointer.startsWith("file:") ? new java.net.URI(pointer).getPath() : pointer;
            byte[] metadata = Files.readAllBytes(new File(local, "_metadata").toPath());
            Map<String, Object> sp = new LinkedHashMap<>();
            sp.put("state_backend", s.backend);
            sp.put("incremental", s.incremental);
            sp.put("checkpoint_storage", s.storage);
            sp.put("inline_threshold", s.threshold);
            sp.put("format", s.format);
            sp.put("taken_by", s.takenBy);
            if (s.takenBy.equals("retained-checkpoint")) {
                sp.put("checkpoints_taken", s.checkpoints);
            }
            sp.put("records_before_savepoint", records);
            MetadataInfo.read(metadata, pointer, sp);

            // ---- edit
            Program v2 = v1.copy();
            List<Object> edits = new ArrayList<>();
            int x = r.nextInt(100);
            int nEdits = x < 10 ? 0 : x < 50 ? 1 : x < 75 ? 2 : x < 90 ? 3 : 4 + r.nextInt(2);
            for (int tries = 0; edits.size() < nEdits && tries < 40; tries++) {
                Map<String, Object> e = v2.randomEdit(r);
                if (e != null) {
                    edits.add(e);
                }
            }
            v2.fix();
            if (r.nextInt(100) < 22) {
                edits.addAll(uidHashRemediation(r, v1, v2, j1));
            }

            // ---- restore v2 from the snapshot
            Configuration c2 = jobConf(s, caseDir, false);
            restoreFrom(c2, pointer, false);
            Job j2 = job(v2, c2, caseId, caseId + "/v2");
            long tV2 = System.currentTimeMillis();
            Outcome o = startAndObserve(j2.jobGraph);
            if (o.verdict.equals("RESTORED")) {
                cancelAndWait(j2.jobGraph.getJobID());
            }
            Outcome oa = o;
            boolean anrsRun = false;
            if (o.verdict.equals("FAILED")) {
                restoreFrom(c2, pointer, true);
                Job j2a = job(v2, c2, caseId, caseId + "/v2");
                oa = startAndObserve(j2a.jobGraph);
                anrsRun = true;
                if (oa.verdict.equals("RESTORED")) {
                    cancelAndWait(j2a.jobGraph.getJobID());
                }
            }
            long tEnd = System.currentTimeMillis();

            Map<String, Object> out = new LinkedHashMap<>();
            out.put("case_id", caseId);
            out.put("flink_version", line);
            out.put("flink_version_full", StreamGraphSpecExporter.flinkVersionFull());
            out.put("v1", j1.spec);
            out.put("v2", j2.spec);
            out.put("savepoint_metadata", caseId + ".metadata");
            putOutcome(out, o, "", pointer, local);
            putOutcome(out, oa, "_allow_non_restored", pointer, local);
            out.put("verdict_allow_non_restored_run", anrsRun);
            out.put("edits", edits);
            out.put("savepoint", sp);
            out.put("v1_expected", j1.expected);
            out.put("v2_expected", j2.expected);
            Map<String, Object> meta = new LinkedHashMap<>();
            meta.put("seed", seed);
            meta.put("index", index);
            meta.put("attempt", attempt);
            meta.put("case_seed", caseSeed);
            meta.put("program_v1", v1.describe());
            meta.put("program_v2", v2.describe());
            Map<String, Object> logical = new LinkedHashMap<>();
            List<String> ids = new ArrayList<>(j1.built.nodesOf.keySet());
            for (String k : j2.built.nodesOf.keySet()) {
                if (!ids.contains(k)) {
                    ids.add(k);
                }
            }
            ids.sort(Comparator.comparingInt(k -> Integer.parseInt(k.substring(1))));
            for (String k : ids) {
                Program.Node n = v2.byId(k) != null ? v2.byId(k) : v1.byId(k);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("kind", n.kind);
                m.put("v1_nodes", nullIfEmpty(j1.built.nodesOf.get(k)));
                m.put("v2_nodes", nullIfEmpty(j2.built.nodesOf.get(k)));
                logical.put(k, m);
            }
            meta.put("logical_nodes", logical);
            Map<String, Object> timing = new LinkedHashMap<>();
            timing.put("v1_start_ms", tRunning - t0);
            timing.put("savepoint_ms", tSavepoint - tRunning);
            timing.put("v2_ms", tEnd - tV2);
            timing.put("case_ms", tEnd - t0);
            meta.put("timing", timing);
            out.put("meta", meta);
            out.put("_metadata", metadata);
            return out;
        } finally {
            for (JobID id : submitted) {
                try {
                    if (!mc.getJobStatus(id).get().isGloballyTerminalState()) {
                        cancelAndWait(id);
                    }
                } catch (Exception ignored) {
                    // unknown or already gone
                }
            }
            submitted.clear();
            deleteRecursively(caseDir);
        }
    }

    static List<Integer> nullIfEmpty(List<Integer> l) {
        return l == null || l.isEmpty() ? null : l;
    }

    /**
     * The ID v1 saved a node's state under. Flink writes operator state under the generated ID even
     * when setUidHash is set (the user-defined ID only helps matching on restore).
     */
    @SuppressWarnings("unchecked")
    static String savedId(Job j1, List<Integer> nodes) {
        if (nodes == null || nodes.size() != 1) {
            return null;
        }
        Map<String, Object> ops = (Map<String, Object>) j1.expected.get("operators");
        Map<String, Object> op = (Map<String, Object>) ops.get(String.valueOf(nodes.get(0)));
        if (op == null) {
            return null;
        }
        return (String) op.get("operator_id");
    }

    /** The setUidHash fix users apply: pin one operator, or every operator, to its v1 ID. */
    static List<Object> uidHashRemediation(Random r, Program v1, Program v2, Job j1) {
        List<Object> out = new ArrayList<>();
        boolean all = r.nextInt(100) < 60;
        List<Program.Node> cands = new ArrayList<>();
        for (Program.Node n : v2.real()) {
            if (v1.byId(n.id) == null || n.uidHash != null || n.kind.equals("SINK_DISCARD")
                    || n.kind.equals("SINK_STATEFUL")) {
                continue;
            }
            if (savedId(j1, j1.built.nodesOf.get(n.id)) != null) {
                cands.add(n);
            }
        }
        if (cands.isEmpty()) {
            return out;
        }
        List<Program.Node> chosen = all ? cands : List.of(Program.pick(r, cands));
        for (Program.Node n : chosen) {
            String id = savedId(j1, j1.built.nodesOf.get(n.id));
            n.uidHash = id;
            Map<String, Object> e = Program.edit("set_uid_hash", n);
            e.put("uid_hash", id);
            e.put("old_operator_id", id);
            e.put("remediation", all ? "all" : "pin");
            out.add(e);
        }
        return out;
    }

    static void putOutcome(Map<String, Object> out, Outcome o, String suffix, String pointer, String local) {
        out.put("verdict" + suffix, o.verdict);
        if (o.error == null) {
            out.put("error_class" + suffix, null);
            out.put("error_message" + suffix, null);
            out.put("error_chain" + suffix, null);
            out.put("failure_stage" + suffix, null);
            return;
        }
        Throwable root = o.error;
        List<String> chain = new ArrayList<>();
        for (Throwable t = o.error; t != null; t = t.getCause()) {
            chain.add(clean(t.toString(), pointer, local));
            root = t;
            if (t.getCause() == t) {
                break;
            }
        }
        out.put("error_class" + suffix, root.getClass().getName());
        out.put("error_message" + suffix, clean(root.getMessage(), pointer, local));
        out.put("error_chain" + suffix, chain);
        out.put("failure_stage" + suffix, o.stage);
    }

    static String clean(String s, String pointer, String local) {
        if (s == null) {
            return null;
        }
        s = s.replace(pointer, "<savepoint>");
        if (local != null) {
            s = s.replace("file:" + local, "<savepoint>").replace(local, "<savepoint>");
        }
        return s.replaceAll("(\\b[A-Za-z_$][\\w$.]*)@[0-9a-f]{3,}\\b", "$1@<hash>");
    }

    static void deleteRecursively(Path p) {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> w = Files.walk(p)) {
            w.sorted(Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
        } catch (Exception ignored) {
            // scratch only
        }
    }
}
