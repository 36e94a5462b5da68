package org.flinkjobgraph.restore;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.executiongraph.ArchivedExecutionGraph;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamingJobGraphGenerator;
import org.flinkjobgraph.harness.DeclaredStates;
import org.flinkjobgraph.harness.JobGraphExpected;
import org.flinkjobgraph.harness.Refl;
import org.flinkjobgraph.harness.StreamGraphSpecExporter;
import org.flinkjobgraph.harness.SerializerModules;
import org.flinkjobgraph.harness.UserClassFacts;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;

/**
 * Runs statetypes cases on one embedded MiniCluster: v1 from its thin user jar (own class loader,
 * and the jar attached to the JobGraph, so Flink loads the user classes child-first from it),
 * records through every state, a real savepoint or retained checkpoint, the whole folder
 * archived, Flink's own reading of it; then v2 from its own jar restoring from it, left running
 * until every state was accessed, Flink's verdict, the failure stage and what the states held.
 * The two halves can run in different JVMs (different Flink lines): see {@link StMain}.
 */
final class StRunner implements AutoCloseable {
    static final long TIMEOUT_MS = Cluster.TIMEOUT_MS;
    static final long FILL_TIMEOUT_MS = 8_000;
    static final long ACCESS_TIMEOUT_MS = 20_000;
    static final String ABSENT = "absent";
    static final String INCONSISTENT = "inconsistent";
    /** The statetypes jobs' main class (the user jars' manifest, the programs, the export's scope). */
    static final String MAIN_CLASS = StClasses.PACKAGE + ".StJob";

    private final MiniCluster mc;
    private final Compat compat;
    final String line;
    private final List<JobID> submitted = new ArrayList<>();

    StRunner(Compat compat) throws Exception {
        this(compat, true);
    }

    /** {@code cluster} false: no MiniCluster, for building and exporting jobs only ({@code respec}). */
    StRunner(Compat compat, boolean cluster) throws Exception {
        this.compat = compat;
        this.line = StreamGraphSpecExporter.flinkLine();
        if (!cluster) {
            mc = null;
            return;
        }
        mc = Cluster.start();
    }

    @Override
    public void close() throws Exception {
        if (mc != null) {
            mc.close();
        }
    }

    // ------------------------------------------------------------------ probes

    /** What the running job reported (see statetypes.user.Probe). */
    static final class Probes {
        final AtomicLong count = new AtomicLong();
        final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
        final Map<String, Set<String>> written = new ConcurrentHashMap<>();
        final Map<String, Map<String, String>> probed = new ConcurrentHashMap<>();

        void drain() {
            for (String e; (e = events.poll()) != null; ) {
                String[] p = e.split("\\|", 5);
                String key = p[1] + "|" + p[2];
                if (p[0].equals("w")) {
                    written.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(p[3]);
                } else if (p[0].equals("p")) {
                    probed.computeIfAbsent(key, k -> new ConcurrentHashMap<>()).putIfAbsent(p[3], p[4]);
                }
            }
        }
    }

    static Probes install() {
        Probes p = new Probes();
        System.getProperties().put("statetypes.probe.count", p.count);
        System.getProperties().put("statetypes.probe.events", p.events);
        return p;
    }

    // ------------------------------------------------------------------ jobs

    static final class Job {
        StreamGraph sg;
        JobGraph jg;
        Map<String, Object> spec;
        Map<String, Object> expected;
        /** declared_types: the declaration run of the job's state functions (StDeclared); null in respec. */
        Map<String, Object> declared;
    }

    /**
     * The jars of a job: its own (the job jar, then the support jar of its user-class variant; a set
     * before seed 41: its one thin jar), plus flink-avro and its dependencies when it has Avro state.
     */
    static List<Path> jobJars(List<Path> own, String desc) throws IOException {
        List<Path> out = new ArrayList<>(own);
        if (usesAvro(desc)) {
            out.addAll(StJars.avroJars());
        }
        return out;
    }

    static boolean usesAvro(String desc) {
        for (StPlan.St s : StPlan.parse(desc).states()) {
            if (s.type.equals("AVRO")) {
                return true;
            }
        }
        return false;
    }

    static URLClassLoader loader(List<Path> jars) throws IOException {
        URL[] urls = new URL[jars.size()];
        for (int i = 0; i < urls.length; i++) {
            urls[i] = jars.get(i).toUri().toURL();
        }
        return new URLClassLoader(urls, StRunner.class.getClassLoader());
    }

    /**
     * Builds the job from its jars as {@code flink run} would ({@code own}: how many of {@code jars}
     * are the job's own, the rest are what it bundles) and exports its spec; {@code declare}: also
     * the declaration run of its state functions (declared_types).
     */
    Job build(ClassLoader cl, List<Path> jars, int own, String desc, Configuration conf, String graphId, boolean declare)
            throws Exception {
        Thread t = Thread.currentThread();
        ClassLoader prev = t.getContextClassLoader();
        t.setContextClassLoader(cl);
        try {
            resetNodeIds();
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
            compat.configureEnv(env, conf);
            Class<?> job = Class.forName(MAIN_CLASS, true, cl);
            String name = (String) job.getMethod("build", StreamExecutionEnvironment.class, String.class).invoke(null, env, desc);
            Job j = new Job();
            j.sg = env.getStreamGraph();
            j.sg.setJobName(name);
            j.spec = StreamGraphSpecExporter.export(j.sg, graphId, exportContext(conf, jars.subList(0, own), cl, j.sg));
            j.jg = StreamingJobGraphGenerator.createJobGraph(j.sg);
            try {
                j.expected = JobGraphExpected.read(j.sg, j.jg);
                j.expected.remove("flink_version_full");
            } catch (Throwable e) {
                j.expected = new LinkedHashMap<>();
                j.expected.put("error", e.toString());
            }
            for (Path jar : jars) {
                j.jg.addJar(new org.apache.flink.core.fs.Path(jar.toUri()));
            }
            j.jg.setSavepointRestoreSettings(SavepointRestoreSettings.fromConfiguration(conf));
            if (declare) {
                j.declared = StDeclared.read(j.sg, StPlan.parse(desc), cl);
            }
            return j;
        } finally {
            t.setContextClassLoader(prev);
        }
    }

    /**
     * What the exporter needs beyond the StreamGraph, as {@code flink-jobgraph export --jar JOB.jar
     * --jar SUPPORT.jar --classpath <flink-avro...>} gives it: the job's configuration, the facts of
     * the classes of its own jars ({@code ownJars}: the job jar and the support jar with the user
     * classes; flink-avro and its dependencies, bundled for Avro state, are dependencies, not the
     * job), in the scope export uses for the job's main class, the serializer modules its class
     * loader (Flink's, the job's jars and what it bundles) can load, and the states it declares
     * (DeclaredStates: the node field declared_states, where the line can read them).
     */
    static StreamGraphSpecExporter.Context exportContext(
            Configuration conf, List<Path> ownJars, ClassLoader cl, StreamGraph sg) {
        // the node field declared_states, as export computes it (before user_classes, which then
        // also describes the classes the declared states use); not on lines without shaded ASM 9
        DeclaredStates declared = DeclaredStates.supported() ? new DeclaredStates(cl) : null;
        UserClassFacts.Scope scope = UserClassFacts.Scope.of(MAIN_CLASS, List.of(), List.of(sg));
        if (declared != null) {
            scope.name(declared.typeObjects(sg));
        }
        List<java.io.File> files = new ArrayList<>();
        for (Path p : ownJars) {
            files.add(p.toFile());
        }
        UserClassFacts.Result classes = UserClassFacts.scan(files, cl, UserClassFacts.DEFAULT_LIMIT, scope);
        return new StreamGraphSpecExporter.Context(conf, classes, SerializerModules.probe(cl), declared);
    }

    /**
     * StreamNode ids count up JVM-wide (Transformation's static counter); every job is built as
     * if it were the first of its JVM, so v1 and v2 number their nodes alike (from 1), as a user
     * building the job with {@code flink run} would see.
     */
    static void resetNodeIds() {
        try {
            java.lang.reflect.Field f;
            try {
                f = org.apache.flink.api.dag.Transformation.class.getDeclaredField("ID_COUNTER");
                f.setAccessible(true);
                ((java.util.concurrent.atomic.AtomicInteger) f.get(null)).set(0);
            } catch (NoSuchFieldException e) {
                f = org.apache.flink.api.dag.Transformation.class.getDeclaredField("idCounter");
                f.setAccessible(true);
                f.set(null, 0);
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot reset the StreamNode id counter", e);
        }
    }

    Configuration jobConf(Map<String, Object> rt, Path caseDir, boolean v1) {
        Configuration c = new Configuration();
        c.set(StateBackendOptions.STATE_BACKEND, (String) rt.get("state_backend"));
        c.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, Boolean.TRUE.equals(rt.get("incremental")));
        c.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, caseDir.resolve("checkpoints").toUri().toString());
        c.set(CheckpointingOptions.SAVEPOINT_DIRECTORY, caseDir.resolve("savepoints").toUri().toString());
        c.set(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD, MemorySize.parse((String) rt.get("inline_threshold")));
        c.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        if (v1 && "retained-checkpoint".equals(rt.get("taken_by"))) {
            compat.retainCheckpoints(c);
        }
        return c;
    }

    /** The job's configuration as recorded (scratch directories left out). */
    static Map<String, Object> confRecord(Configuration c) {
        Map<String, Object> m = new TreeMap<>();
        for (Map.Entry<String, String> e : c.toMap().entrySet()) {
            if (!e.getKey().contains("dir")) {
                m.put(e.getKey(), e.getValue());
            }
        }
        return new LinkedHashMap<>(m);
    }

    void submit(JobGraph jg) throws Exception {
        submitted.add(jg.getJobID());
        mc.submitJob(jg).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }

    boolean allRunning(JobID id) throws Exception {
        boolean all = true;
        for (AccessExecutionVertex v : mc.getArchivedExecutionGraph(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS).getAllExecutionVertices()) {
            ExecutionState es = v.getExecutionState();
            all &= es == ExecutionState.RUNNING || es == ExecutionState.FINISHED;
        }
        return all;
    }

    Throwable error(JobID id, ClassLoader cl) throws Exception {
        JobResult res = mc.requestJobResult(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        if (res.getSerializedThrowable().isPresent()) {
            return res.getSerializedThrowable().get().deserializeError(cl);
        }
        return new IllegalStateException("job ended without an error");
    }

    void cancelAndWait(JobID id) throws Exception {
        Cluster.cancelAndWait(mc, id);
    }

    void cleanupJobs() {
        for (JobID id : submitted) {
            try {
                if (!mc.getJobStatus(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS).isGloballyTerminalState()) {
                    cancelAndWait(id);
                }
            } catch (Exception ignored) {
                // gone
            }
        }
        submitted.clear();
    }

    /** "FAILED | Source: Numbers: CANCELED CANCELED | Agg1 -> Discard: Writer: FAILED CANCELED". */
    String taskStates(JobID id) {
        try {
            ArchivedExecutionGraph g = mc.getArchivedExecutionGraph(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            StringBuilder sb = new StringBuilder(String.valueOf(g.getState()));
            for (AccessExecutionJobVertex jv : g.getVerticesTopologically()) {
                sb.append(" | ").append(jv.getName()).append(':');
                for (AccessExecutionVertex v : jv.getTaskVertices()) {
                    sb.append(' ').append(v.getExecutionState());
                }
            }
            return sb.toString();
        } catch (Exception e) {
            return e.toString();
        }
    }

    /** job_init (refused by the JobMaster), task_restore (a task failed before it ran), task_running. */
    String stage(JobID id, Throwable t) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            if (x.getClass().getSimpleName().equals("JobInitializationException")) {
                return "job_init";
            }
            if (x.getCause() == x) {
                break;
            }
        }
        String stage = "job_init";
        long first = Long.MAX_VALUE;
        try {
            ArchivedExecutionGraph g = mc.getArchivedExecutionGraph(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            for (AccessExecutionVertex v : g.getAllExecutionVertices()) {
                if (v.getExecutionState() == ExecutionState.FAILED) {
                    long at = v.getStateTimestamp(ExecutionState.FAILED);
                    if (at < first) {
                        first = at;
                        stage = v.getStateTimestamp(ExecutionState.RUNNING) > 0 ? "task_running" : "task_restore";
                    }
                }
            }
        } catch (Exception ignored) {
            // no graph: refused before scheduling
        }
        return stage;
    }

    // ------------------------------------------------------------------ types

    static TypeSerializer<?> serializer(TypeInformation<?> info) {
        ExecutionConfig ec = new ExecutionConfig();
        Method withSerializerConfig = null;
        for (Method m : info.getClass().getMethods()) {
            if (m.getName().equals("createSerializer") && m.getParameterCount() == 1
                    && m.getParameterTypes()[0].getSimpleName().equals("SerializerConfig")) {
                withSerializerConfig = m;
            }
        }
        try {
            if (withSerializerConfig != null) {
                return (TypeSerializer<?>) withSerializerConfig.invoke(info, Refl.call(ec, "getSerializerConfig", null));
            }
            return (TypeSerializer<?>) info.getClass().getMethod("createSerializer", ExecutionConfig.class).invoke(info, ec);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw new RuntimeException(e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
        }
    }

    static Map<String, Object> declared(TypeInformation<?> info) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type_info", info.toString());
        m.put("type_info_class", info.getClass().getName());
        try {
            m.put("serializer", StMeta.tree(serializer(info).snapshotConfiguration(), new ArrayList<>(), "declared"));
        } catch (Throwable e) {
            m.put("serializer", StMeta.error(e));
        }
        return m;
    }

    static TypeInformation<?> userInfo(ClassLoader cl, String method, String type) throws Exception {
        Class<?> vals = Class.forName("statetypes.user.Vals", true, cl);
        return (TypeInformation<?>) vals.getMethod(method, String.class).invoke(null, type);
    }

    static Map<String, Object> classDef(String jarVariant, String simple) {
        return StClasses.classDef(StClasses.jar(jarVariant).get(simple));
    }

    /** The states list of the vectors (states_v1 / states_v2). */
    static List<Object> statesList(StPlan.Prog p, String jarVariant) {
        List<Object> out = new ArrayList<>();
        for (StPlan.St st : p.states()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("operator_key", st.seg.key());
            m.put("operator_uid", st.seg.uid());
            m.put("operator_name", st.seg.f.get("name"));
            m.put("probe_key", st.probeKey());
            m.put("backend", st.backend);
            m.put("state_name", st.name);
            m.put("state_kind", st.kind);
            m.put("key_type", st.keyType);
            m.put("key_class", "POJO".equals(st.keyType) ? "PojoK" : null);
            m.put("value_type", st.type);
            String vc = StPlan.CLASS_OF.get(st.type);
            m.put("value_class", vc);
            if (st.kind.equals("MAP") || st.kind.equals("BROADCAST")) {
                m.put("map_user_key_type", "STRING");
            }
            if (st.kind.equals("REDUCING")) {
                m.put("stored_as", "TUPLE2<LONG, " + st.type + ">");
            }
            m.put("registration", st.registration);
            if (st.style != null) {
                m.put("style", StStyles.style(st.style));
                m.put("type_expr", StStyles.expr(st.style));
                m.put("ttl", st.ttl);
                m.put("ttl_config", StStyles.ttlConfig(st.ttl));
            }
            if (vc != null) {
                m.put("value_class_def", classDef(jarVariant, vc));
            }
            if ("POJO".equals(st.keyType)) {
                m.put("key_class_def", classDef(jarVariant, "PojoK"));
            }
            out.add(m);
        }
        return out;
    }

    // ------------------------------------------------------------------ phase v1

    /** Runs v1 and snapshots it; returns the partial record (with "_phase1" for phase v2). */
    Map<String, Object> runV1(StPlan plan, StJars jars, Path casesDir, Path caseDir, int index, String jarsRel)
            throws Exception {
        long t0 = System.currentTimeMillis();
        Files.createDirectories(caseDir);
        Path jar1 = jars.jar(plan.jarV1);
        Map<String, Object> rec = new LinkedHashMap<>();
        String desc1 = plan.v1.describe();
        String jobRel1 = jobJarRel(plan.caseId, "v1", plan.jarV1);
        Path job1 = casesDir.resolve(jobRel1);
        jars.jobJar(job1, desc1, plan.jarV1, plan.caseId);
        List<Path> jobJars1 = jobJars(List.of(job1, jar1), desc1);
        try (URLClassLoader cl1 = loader(jobJars1)) {
            Configuration conf1 = jobConf(plan.runtime, caseDir, true);
            Job j1 = build(cl1, jobJars1, 2, desc1, conf1, plan.caseId + "/v1", true);
            long tBuilt = System.currentTimeMillis();
            Probes probes = install();
            JobID id = j1.jg.getJobID();
            submit(j1.jg);
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (true) {
                JobStatus st = mc.getJobStatus(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                if (st.isGloballyTerminalState()) {
                    throw new IllegalStateException("v1 ended " + st, error(id, cl1));
                }
                if (st == JobStatus.RUNNING && allRunning(id)) {
                    break;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("v1 not running after " + TIMEOUT_MS + " ms: " + taskStates(id));
                }
                Thread.sleep(20);
            }
            long tRunning = System.currentTimeMillis();
            // every state must hold values of every key (keyed) / instance (operator, broadcast)
            List<StPlan.St> states = plan.v1.states();
            deadline = System.currentTimeMillis() + FILL_TIMEOUT_MS;
            while (true) {
                probes.drain();
                List<String> missing = new ArrayList<>();
                for (StPlan.St s : states) {
                    Set<String> w = probes.written.get(s.probeKey());
                    int n = w == null ? 0 : w.size();
                    if (n < s.expected(plan.v1)) {
                        missing.add(s.probeKey() + " " + n + "/" + s.expected(plan.v1));
                    }
                }
                if (missing.isEmpty()) {
                    break;
                }
                JobStatus st = mc.getJobStatus(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                if (st.isGloballyTerminalState()) {
                    throw new IllegalStateException("v1 ended " + st, error(id, cl1));
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("v1 states not filled: " + missing + " in " + desc1 + ": " + taskStates(id));
                }
                Thread.sleep(20);
            }
            long tFilled = System.currentTimeMillis();
            String pointer = snapshot(plan.runtime, id, caseDir);
            long records = probes.count.get();
            long tSnap = System.currentTimeMillis();
            Path local = Path.of(pointer.startsWith("file:") ? new URI(pointer).getPath() : pointer);
            byte[] metadata = Files.readAllBytes(local.resolve("_metadata"));
            Map<String, Object> sp = new LinkedHashMap<>();
            sp.put("archive", plan.caseId + ".savepoint.tar.gz");
            sp.put("dir_name", local.getFileName().toString());
            sp.put("files", archive(local, casesDir.resolve(plan.caseId + ".savepoint.tar.gz")));
            List<Object> facts = new ArrayList<>();
            sp.put("meta_read_by_v1_flink", StMeta.read(metadata, pointer, cl1, facts));
            sp.put("facts_read_by_v1_flink", facts);
            Map<String, Object> declared1 = j1.declared;
            long tInspect = System.currentTimeMillis();

            rec.put("case_id", plan.caseId);
            rec.put("set", plan.set);
            rec.put("flink_version_v1", StreamGraphSpecExporter.flinkVersionFull());
            rec.put("subject", plan.subject);
            rec.put("edits", plan.edits);
            rec.put("states_v1", statesList(plan.v1, plan.jarV1));
            rec.put("states_v2", statesList(plan.v2, plan.jarV2));
            rec.put("runtime", plan.runtime);
            rec.put("job_config_v1", confRecord(conf1));
            Map<String, Object> prog1 = program(jobRel1, jarsRel, plan.jarV1, desc1);
            prog1.put("bundled_jars", names(jobJars1, 2));
            rec.put("v1_program", prog1);
            rec.put("v2_program", program(null, jarsRel, plan.jarV2, plan.v2.describe()));
            rec.put("declared_types_v1", declared1);
            rec.put("records_before_savepoint", records);
            rec.put("savepoint", sp);
            rec.put("v1", j1.spec);
            rec.put("v1_expected", j1.expected);
            Map<String, Object> meta = new LinkedHashMap<>();
            meta.put("index", index);
            meta.put("case_seed", plan.caseSeed);
            Map<String, Object> timing = new LinkedHashMap<>();
            Map<String, Object> tv1 = new LinkedHashMap<>();
            tv1.put("build_ms", tBuilt - t0);
            tv1.put("v1_start_ms", tRunning - tBuilt);
            tv1.put("fill_ms", tFilled - tRunning);
            tv1.put("savepoint_ms", tSnap - tFilled);
            tv1.put("inspect_ms", tInspect - tSnap);
            timing.put("v1", tv1);
            meta.put("timing", timing);
            meta.put("program_v1", desc1);
            rec.put("meta", meta);
            Map<String, Object> p1 = new LinkedHashMap<>();
            p1.put("pointer", pointer);
            p1.put("case_dir", caseDir.toString());
            p1.put("v2_description", plan.v2.describe());
            p1.put("jar_v2", plan.jarV2);
            p1.put("job_jar_v1", jobRel1);
            List<Object> expected = new ArrayList<>();
            for (StPlan.St s : plan.v2.states()) {
                expected.add(List.of(s.probeKey(), s.expected(plan.v2)));
            }
            p1.put("v2_states", expected);
            List<Object> v1states = new ArrayList<>();
            for (StPlan.St s : plan.v1.states()) {
                v1states.add(List.of(s.seg.key(), s.name));
            }
            p1.put("v1_states", v1states);
            rec.put("_phase1", p1);
            return rec;
        } finally {
            cleanupJobs();
        }
    }

    /** The jars a job bundles besides its {@code own} (Maven file names; empty for jobs without Avro). */
    static List<Object> names(List<Path> jobJars, int own) {
        List<Object> out = new ArrayList<>();
        for (Path p : jobJars.subList(own, jobJars.size())) {
            out.add(p.getFileName().toString());
        }
        return out;
    }

    /**
     * A job jar's place in the set folder: {@code jobs/<case>/<side>/<variant>.jar}, the job jar of
     * that side, compiled against the support jar of that variant (the file name is the variant, as
     * the whole thin jar's was before seed 41: readers that take the variant from the jar's name
     * still find it).
     */
    static String jobJarRel(String caseId, String side, String variant) {
        return "jobs/" + caseId + "/" + side + "/" + variant + ".jar";
    }

    /**
     * The program of one side: {@code jar} the job jar (StJob and the generated state functions;
     * null until it is built), {@code classpath} the job's other own jar (the support jar of its
     * user-class variant), both relative to the set folder.
     */
    static Map<String, Object> program(String jobRel, String jarsRel, String variant, String desc) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("jar", jobRel);
        m.put("jar_variant", variant);
        m.put("classpath", List.of(jarsRel + "/" + variant + ".jar"));
        m.put("main_class", MAIN_CLASS);
        m.put("args", List.of(desc));
        return m;
    }

    String snapshot(Map<String, Object> rt, JobID id, Path caseDir) throws Exception {
        int n = ((Number) rt.getOrDefault("checkpoints_taken", 1)).intValue();
        return Cluster.snapshot(mc, id, (String) rt.get("taken_by"), (String) rt.get("savepoint_format"), n, caseDir);
    }

    /**
     * The whole snapshot folder as tar.gz (entries under its own folder name). A retained
     * checkpoint's files in the job's shared/ and taskowned/ folders (incremental RocksDB) are
     * put into the folder too, flat by file name. Returns the files list (path, bytes).
     */
    static List<Object> archive(Path dir, Path tarGz) throws IOException {
        Map<String, Path> files = new TreeMap<>();
        try (Stream<Path> w = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) w.filter(Files::isRegularFile)::iterator) {
                files.put(dir.relativize(p).toString(), p);
            }
        }
        if (dir.getFileName().toString().startsWith("chk-")) {
            for (String sub : new String[] {"shared", "taskowned"}) {
                Path d = dir.getParent().resolve(sub);
                if (Files.isDirectory(d)) {
                    try (Stream<Path> w = Files.walk(d)) {
                        for (Path p : (Iterable<Path>) w.filter(Files::isRegularFile)::iterator) {
                            files.putIfAbsent(p.getFileName().toString(), p);
                        }
                    }
                }
            }
        }
        List<Object> out = new ArrayList<>();
        Files.createDirectories(tarGz.getParent());
        try (Main.Tar tar = new Main.Tar(new GZIPOutputStream(new BufferedOutputStream(Files.newOutputStream(tarGz))))) {
            for (Map.Entry<String, Path> e : files.entrySet()) {
                byte[] data = Files.readAllBytes(e.getValue());
                tar.add(dir.getFileName() + "/" + e.getKey(), data);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("path", e.getKey());
                m.put("bytes", data.length);
                out.add(m);
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ phase v2

    /** Restores v2 from the snapshot phase v1 took; completes the record in place. */
    @SuppressWarnings("unchecked")
    void runV2(Map<String, Object> rec, StJars jars, Path casesDir, String jarsRel) throws Exception {
        long t0 = System.currentTimeMillis();
        Map<String, Object> p1 = (Map<String, Object>) rec.get("_phase1");
        String caseId = (String) rec.get("case_id");
        String pointer = (String) p1.get("pointer");
        Path caseDir = Path.of((String) p1.get("case_dir"));
        String jarVariant = (String) p1.get("jar_v2");
        String desc2 = (String) p1.get("v2_description");
        Map<String, Object> rt = (Map<String, Object>) rec.get("runtime");
        Path jar2 = jars.jar(jarVariant);
        Map<String, Object> prog2 = (Map<String, Object>) rec.get("v2_program");
        // v2's job jar; where it is byte for byte v1's (no declaration changed, the same variant),
        // v1's is the one
        String jobRel2 = jobJarRel(caseId, "v2", jarVariant);
        Path job2 = casesDir.resolve(jobRel2);
        jars.jobJar(job2, desc2, jarVariant, caseId);
        Path job1 = casesDir.resolve((String) p1.get("job_jar_v1"));
        if (job1.getFileName().equals(job2.getFileName()) && Files.isRegularFile(job1)
                && java.util.Arrays.equals(Files.readAllBytes(job1), Files.readAllBytes(job2))) {
            Files.delete(job2);
            Files.delete(job2.getParent());
            job2 = job1;
            jobRel2 = (String) p1.get("job_jar_v1");
        }
        prog2.put("jar", jobRel2);
        prog2.put("classpath", List.of(jarsRel + "/" + jarVariant + ".jar"));
        Path local = Path.of(pointer.startsWith("file:") ? new URI(pointer).getPath() : pointer);
        List<Path> jobJars2 = jobJars(List.of(job2, jar2), desc2);
        prog2.put("bundled_jars", names(jobJars2, 2));
        try (URLClassLoader cl2 = loader(jobJars2)) {
            Configuration conf2 = jobConf(rt, caseDir, false);
            SavepointRestoreSettings.toConfiguration(SavepointRestoreSettings.forPath(pointer, false), conf2);
            Job j2 = build(cl2, jobJars2, 2, desc2, conf2, caseId + "/v2", true);
            long tBuilt = System.currentTimeMillis();
            Probes probes = install();
            JobID id = j2.jg.getJobID();
            submit(j2.jg);
            String verdict = null;
            Throwable err = null;
            String stage = null;
            long tRunning = 0;
            long complete = 0;
            boolean incomplete = false;
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            List<Object> expected = (List<Object>) p1.get("v2_states");
            while (verdict == null) {
                JobStatus st = mc.getJobStatus(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                probes.drain();
                if (st.isGloballyTerminalState()) {
                    verdict = "FAILED";
                    err = error(id, cl2);
                    stage = stage(id, err);
                    break;
                }
                long now = System.currentTimeMillis();
                if (tRunning == 0 && st == JobStatus.RUNNING && allRunning(id)) {
                    tRunning = now;
                }
                if (tRunning > 0) {
                    boolean all = true;
                    for (Object o : expected) {
                        List<Object> e = (List<Object>) o;
                        Map<String, String> got = probes.probed.get((String) e.get(0));
                        all &= got != null && got.size() >= ((Number) e.get(1)).intValue();
                    }
                    if (all && complete == 0) {
                        complete = now;
                    }
                    if (complete > 0 && now - complete > 300) {
                        verdict = "RESTORED";
                    } else if (now - tRunning > ACCESS_TIMEOUT_MS) {
                        verdict = "RESTORED";
                        incomplete = true;
                    }
                } else if (now > deadline) {
                    throw new IllegalStateException("v2 neither running nor failed after " + TIMEOUT_MS + " ms: " + taskStates(id));
                }
                if (verdict == null) {
                    Thread.sleep(20);
                }
            }
            long tDone = System.currentTimeMillis();
            String tasks = verdict.equals("FAILED") ? taskStates(id) : null;
            long after = probes.count.get();
            Map<String, Object> afterRestore = null;
            if (verdict.equals("RESTORED")) {
                // what v2 keeps: its own savepoint (canonical) right after the probe, read with its classes
                String p2 = mc.triggerSavepoint(id, caseDir.resolve("after-restore").toUri().toString(), true,
                        org.apache.flink.core.execution.SavepointFormatType.CANONICAL).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                mc.requestJobResult(id).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
                Path l2 = Path.of(p2.startsWith("file:") ? new URI(p2).getPath() : p2);
                afterRestore = StLoss.afterRestore(StMeta.read(Files.readAllBytes(l2.resolve("_metadata")), p2, cl2,
                        new ArrayList<>()), operatorKeys(j2, StPlan.parse(desc2)));
            }
            long tAfter = System.currentTimeMillis();
            probes.drain();
            byte[] metadata = Files.readAllBytes(local.resolve("_metadata"));
            List<Object> facts = new ArrayList<>();
            Map<String, Object> sp = (Map<String, Object>) rec.get("savepoint");
            sp.put("meta_read_by_v2_flink", StMeta.read(metadata, pointer, cl2, facts));
            sp.put("facts_read_by_v2_flink", facts);
            if (afterRestore != null) {
                sp.put("after_restore", afterRestore);
            }
            Map<String, Object> declared2 = j2.declared;
            long tInspect = System.currentTimeMillis();

            rec.put("flink_version_v2", StreamGraphSpecExporter.flinkVersionFull());
            rec.put("verdict", verdict);
            rec.put("failure_stage", stage);
            putError(rec, err, pointer, local.toString());
            rec.put("task_states", tasks);
            Map<String, Object> probe = new TreeMap<>();
            for (Map.Entry<String, Map<String, String>> e : new TreeMap<>(probes.probed).entrySet()) {
                Map<String, Object> counts = new TreeMap<>();
                for (String outcome : e.getValue().values()) {
                    String o = outcome.contains(":") ? outcome.substring(0, outcome.indexOf(':')) : outcome;
                    counts.merge(o, 1, (a, b) -> (Integer) a + (Integer) b);
                }
                probe.put(e.getKey(), new LinkedHashMap<>(counts));
            }
            String valuesCheck = null;
            if (verdict.equals("RESTORED")) {
                valuesCheck = StLoss.classify(rec, probes.probed, expected, afterRestore);
            } else {
                for (String side : new String[] {"states_v1", "states_v2"}) {
                    for (Object o : (List<Object>) rec.get(side)) {
                        ((Map<String, Object>) o).put("restored", null);
                    }
                }
            }
            rec.put("notes", notes(rec, probes, expected, verdict, incomplete));
            rec.put("declared_types_v2", declared2);
            rec.put("state_probe", new LinkedHashMap<>(probe));
            rec.put("values_check", valuesCheck);
            rec.put("records_after_restore", after);
            rec.put("v2", j2.spec);
            rec.put("v2_expected", j2.expected);
            Map<String, Object> timing = (Map<String, Object>) ((Map<String, Object>) rec.get("meta")).get("timing");
            Map<String, Object> tv2 = new LinkedHashMap<>();
            tv2.put("build_ms", tBuilt - t0);
            if (tRunning > 0) {
                tv2.put("v2_running_ms", tRunning - tBuilt);
            }
            tv2.put("v2_ms", tDone - tBuilt);
            if (afterRestore != null) {
                tv2.put("after_savepoint_ms", tAfter - tDone);
            }
            tv2.put("inspect_ms", tInspect - tAfter);
            timing.put("v2", tv2);
            ((Map<String, Object>) rec.get("meta")).put("program_v2", desc2);
        } finally {
            cleanupJobs();
        }
    }

    @SuppressWarnings("unchecked")
    static List<Object> notes(Map<String, Object> rec, Probes probes, List<Object> expected, String verdict, boolean incomplete) {
        List<Object> out = new ArrayList<>();
        Set<String> v2 = new LinkedHashSet<>();
        for (Object o : (List<Object>) rec.get("states_v2")) {
            Map<String, Object> s = (Map<String, Object>) o;
            v2.add(s.get("operator_key") + "|" + s.get("state_name"));
        }
        Set<String> v1 = new LinkedHashSet<>();
        for (Object o : (List<Object>) rec.get("states_v1")) {
            Map<String, Object> s = (Map<String, Object>) o;
            v1.add(s.get("operator_key") + "|" + s.get("state_name"));
        }
        if (verdict.equals("RESTORED")) {
            for (Object o : (List<Object>) rec.get("states_v1")) {
                Map<String, Object> s = (Map<String, Object>) o;
                if (!v2.contains(s.get("operator_key") + "|" + s.get("state_name"))) {
                    Map<String, Object> r = (Map<String, Object>) s.get("restored");
                    Object kept = r == null ? null : r.get("kept_in_next_savepoint");
                    out.add("state '" + s.get("state_name") + "' of operator '" + s.get("operator_key")
                            + "' is in the savepoint but v2 does not register it: its values are never read"
                            + (Boolean.TRUE.equals(kept) ? " (v2's own savepoint still holds the state)"
                                    : Boolean.FALSE.equals(kept) ? " and v2's own savepoint no longer holds them" : "")
                            + " (allowNonRestoredState is not needed for state of a mapped operator)");
                }
            }
            for (Object o : (List<Object>) rec.get("states_v2")) {
                Map<String, Object> s = (Map<String, Object>) o;
                if (!v1.contains(s.get("operator_key") + "|" + s.get("state_name"))) {
                    Map<String, String> got = probes.probed.get((String) s.get("probe_key"));
                    long absent = got == null ? 0 : got.values().stream().filter(ABSENT::equals).count();
                    out.add("state '" + s.get("state_name") + "' of operator '" + s.get("operator_key")
                            + "' is new in v2: starts empty (probe: " + absent + " first accesses found no state)");
                }
            }
        }
        if (verdict.equals("RESTORED")) {
            for (Object o : (List<Object>) rec.get("states_v1")) {
                Map<String, Object> s = (Map<String, Object>) o;
                Map<String, Object> r = (Map<String, Object>) s.get("restored");
                if (r != null && r.get("lost_fields") != null) {
                    out.add("state '" + s.get("state_name") + "' of operator '" + s.get("operator_key") + "': values came back"
                            + " without the fields " + r.get("lost_fields") + " of v1's " + s.get("value_class")
                            + " (v2's class has none of that name): their saved values are lost");
                }
            }
        }
        for (Map.Entry<String, Map<String, String>> e : new TreeMap<>(probes.probed).entrySet()) {
            for (Map.Entry<String, String> w : new TreeMap<>(e.getValue()).entrySet()) {
                if (w.getValue().contains(":")) { // inconsistent, or present with fields at their default
                    long n = e.getValue().values().stream().filter(x -> x.contains(":")).count();
                    out.add("state " + e.getKey() + " (" + n + " of " + e.getValue().size() + " first accesses, e.g. "
                            + w.getKey() + "): " + w.getValue());
                    break;
                }
            }
        }
        if (incomplete) {
            for (Object o : expected) {
                List<Object> e = (List<Object>) o;
                Map<String, String> got = probes.probed.get((String) e.get(0));
                int n = got == null ? 0 : got.size();
                if (n < ((Number) e.get(1)).intValue()) {
                    out.add("probe incomplete: state " + e.get(0) + " was accessed for " + n + " of " + e.get(1)
                            + " keys/instances within " + ACCESS_TIMEOUT_MS / 1000 + " s of running");
                }
            }
        }
        return out;
    }

    /** Operator id (hex) -> the program's operator key, for the operators of {@code p} that hold state. */
    @SuppressWarnings("unchecked")
    static Map<String, String> operatorKeys(Job j, StPlan.Prog p) {
        Map<String, String> out = new LinkedHashMap<>();
        Object ops = j.expected.get("operators");
        if (!(ops instanceof Map)) {
            return out;
        }
        for (StPlan.Seg s : p.segs) {
            if (!(s.kind.equals("keyed") || s.kind.equals("ost") || s.kind.equals("win") || s.kind.equals("bc"))) {
                continue;
            }
            for (org.apache.flink.streaming.api.graph.StreamNode n : j.sg.getStreamNodes()) {
                boolean match = s.uid() != null ? s.uid().equals(n.getTransformationUID())
                        : n.getTransformationUID() == null && s.f.get("name").equals(n.getOperatorName());
                Object o = ((Map<String, Object>) ops).get(String.valueOf(n.getId()));
                if (match && o instanceof Map) {
                    out.put((String) ((Map<String, Object>) o).get("operator_id"), s.key());
                }
            }
        }
        return out;
    }

    static void putError(Map<String, Object> out, Throwable err, String pointer, String local) {
        if (err == null) {
            out.put("error_class", null);
            out.put("error_message", null);
            out.put("error_chain", null);
            return;
        }
        Throwable root = err;
        List<Object> chain = new ArrayList<>();
        for (Throwable t = err; t != null; t = t.getCause()) {
            chain.add(Runner.clean(t.toString(), pointer, local));
            root = t;
            if (t.getCause() == t) {
                break;
            }
        }
        out.put("error_class", root.getClass().getName());
        out.put("error_message", Runner.clean(root.getMessage(), pointer, local));
        out.put("error_chain", chain);
    }

    static void deleteRecursively(Path p) {
        Runner.deleteRecursively(p);
    }

    static Comparator<String> byName() {
        return Comparator.naturalOrder();
    }
}
