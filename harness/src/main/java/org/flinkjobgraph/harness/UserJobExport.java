package org.flinkjobgraph.harness;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

import java.io.File;
import java.io.PrintStream;
import java.io.Writer;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code export}: runs a user's Flink program main() so that every job it submits is captured as
 * a StreamGraph and written as a spec line, and nothing is executed (see {@link Capture} and, for
 * Flink 1.15+, CaptureExecutorFactory). Job configuration is passed the way {@code flink run} does
 * (-p, -D, a config file) and reaches the environments main() gets.
 */
public final class UserJobExport {
    private UserJobExport() {}

    /** How long main() may run before the export gives up on it (a main() that never submits). */
    static final int DEFAULT_TIMEOUT_SECONDS = 120;

    public static final String USAGE =
            "export --main-class CLASS [--jar JOB.jar] [--classpath DIR_OR_JAR]... [--graph-id ID] [--out FILE]\n"
                    + "         [-p N] [-D key=value]... [--config flink-conf.yaml|config.yaml] [--expected] [--first]\n"
                    + "         [--user-classes-package PREFIX]... [--user-classes-limit N] [--timeout SECONDS]\n"
                    + "         [-- PROGRAM ARGS...]";

    static final String HELP =
            "usage: "
                    + USAGE
                    + "\n\n"
                    + "Runs CLASS.main() with every job submission captured (one spec line per submitted job,\n"
                    + "graph ids ID#1, ID#2 ... when there are several; ID defaults to the job name).\n"
                    + "  --jar / --classpath  the job's jar and extra jars or folders of jars (connectors, formats)\n"
                    + "  -p N                 parallelism.default, like flink run -p\n"
                    + "  -D key=value         any Flink option (pipeline.max-parallelism, execution.runtime-mode,\n"
                    + "                       pipeline.operator-chaining.*, table.exec.* ...); repeatable\n"
                    + "  --config FILE        a flink-conf.yaml / config.yaml (-D and -p override it)\n"
                    + "  --expected           add Flink's own JobGraph answer to each line\n"
                    + "  --first              stop main() at the first submitted job (default: capture all)\n"
                    + "  --user-classes-package PREFIX  describe the --jar classes of this package in user_classes\n"
                    + "                       too (repeatable; '' or '*': every class); by default the main class's\n"
                    + "                       first " + UserClassFacts.Scope.PACKAGE_DEPTH + " package names (com.acme. for com.acme.orders.Job), the classes\n"
                    + "                       the job graph's types name, and the classes their fields name\n"
                    + "  --user-classes-limit N  classes of the --jar jars examined for user_classes at most\n"
                    + "                       (default " + UserClassFacts.DEFAULT_LIMIT + "; 0: leave user_classes out)\n"
                    + "  --timeout SECONDS    end the export when main() is still running after this long (default "
                    + DEFAULT_TIMEOUT_SECONDS + "; 0: no limit)\n"
                    + "  --out FILE           output (.gz compresses); default stdout\n";

    /** A user mistake: reported as one line, with the usage, never with a stack trace. */
    public static final class UsageError extends RuntimeException {
        public UsageError(String msg) {
            super(msg);
        }
    }

    /** A problem with the user's program or its classpath: reported as one line. */
    public static final class ExportError extends RuntimeException {
        public ExportError(String msg) {
            super(msg);
        }
    }

    static final class Args {
        String mainClass;
        String graphId;
        String out = "-";
        boolean expected;
        boolean help;
        String parallelism;
        String configFile;
        final Map<String, String> dynamic = new LinkedHashMap<>();
        final List<String> classpath = new ArrayList<>();
        /** The job's own jars (--jar): the ones whose classes user_classes describes. */
        final List<String> jobJars = new ArrayList<>();
        int userClassesLimit = UserClassFacts.DEFAULT_LIMIT;
        int timeoutSeconds = DEFAULT_TIMEOUT_SECONDS;
        /** --user-classes-package: packages user_classes describes besides the job's own. */
        final List<String> userClassesPackages = new ArrayList<>();
        final List<String> programArgs = new ArrayList<>();
    }

    static Args parse(String[] a) {
        Args r = new Args();
        for (int i = 0; i < a.length; i++) {
            String k = a[i];
            if (k.equals("--")) {
                r.programArgs.addAll(Arrays.asList(a).subList(i + 1, a.length));
                break;
            }
            switch (k) {
                case "--help":
                case "-h":
                    r.help = true;
                    break;
                case "--expected":
                    r.expected = true;
                    break;
                case "--first":
                    Capture.stopAfterFirst = true;
                    break;
                case "--all": // the default since submissions are captured; kept for old scripts
                    break;
                case "--main-class":
                    r.mainClass = value(a, ++i, k);
                    break;
                case "--graph-id":
                    r.graphId = value(a, ++i, k);
                    break;
                case "--out":
                    r.out = value(a, ++i, k);
                    break;
                case "--jar":
                    r.jobJars.add(value(a, i + 1, k));
                    r.classpath.add(value(a, ++i, k));
                    break;
                case "--classpath":
                case "-cp":
                    r.classpath.add(value(a, ++i, k));
                    break;
                case "--user-classes-package":
                    r.userClassesPackages.add(value(a, ++i, k));
                    break;
                case "--user-classes-limit":
                    String lim = value(a, ++i, k);
                    if (!lim.matches("[0-9]+")) {
                        throw new UsageError(k + " expects a number, got " + lim);
                    }
                    r.userClassesLimit = Integer.parseInt(lim);
                    break;
                case "--timeout":
                    String secs = value(a, ++i, k);
                    if (!secs.matches("[0-9]{1,9}")) {
                        throw new UsageError(k + " expects a number of seconds, got " + secs);
                    }
                    r.timeoutSeconds = Integer.parseInt(secs);
                    break;
                case "-p":
                case "--parallelism":
                    r.parallelism = value(a, ++i, k);
                    if (!r.parallelism.matches("[1-9][0-9]*")) {
                        throw new UsageError(k + " expects a positive integer, got " + r.parallelism);
                    }
                    break;
                case "--config":
                    r.configFile = value(a, ++i, k);
                    break;
                case "-D":
                    dyn(r, value(a, ++i, k));
                    break;
                default:
                    if (k.startsWith("-D") && k.length() > 2) {
                        dyn(r, k.substring(2));
                    } else {
                        throw new UsageError("unexpected argument: " + k);
                    }
            }
        }
        return r;
    }

    private static String value(String[] a, int i, String key) {
        if (i >= a.length || (a[i].startsWith("--") && a[i].length() > 2)) {
            throw new UsageError(key + " needs a value");
        }
        return a[i];
    }

    private static void dyn(Args r, String kv) {
        int eq = kv.indexOf('=');
        if (eq <= 0) {
            throw new UsageError("-D expects key=value, got " + kv);
        }
        r.dynamic.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
    }

    /** Configuration main()'s environments get: config file, then -D, then -p (as flink run). */
    static Configuration configuration(Args a) throws Exception {
        Configuration conf = new Configuration();
        if (a.configFile != null) {
            conf = loadConfigFile(new File(a.configFile));
        }
        for (Map.Entry<String, String> e : a.dynamic.entrySet()) {
            conf.setString(e.getKey(), e.getValue());
        }
        if (a.parallelism != null) {
            conf.setString("parallelism.default", a.parallelism);
        }
        return conf;
    }

    /**
     * Reads a flink-conf.yaml / config.yaml with Flink's own parser (GlobalConfiguration loads a
     * folder: 1.x reads flink-conf.yaml, 1.19+ prefer config.yaml, 2.x read only config.yaml).
     */
    static Configuration loadConfigFile(File f) throws Exception {
        if (!f.isFile()) {
            throw new UsageError("--config " + f + ": no such file");
        }
        String name = f.getName();
        if (!name.equals("flink-conf.yaml") && !name.equals("config.yaml")) {
            String line = StreamGraphSpecExporter.flinkLine();
            boolean newFormat = line.startsWith("2.") || line.equals("1.19") || line.equals("1.20");
            name = newFormat ? "config.yaml" : "flink-conf.yaml";
        }
        Path dir = Files.createTempDirectory("flink-jobgraph-conf");
        Path copy = dir.resolve(name);
        Files.copy(f.toPath(), copy, StandardCopyOption.REPLACE_EXISTING);
        try {
            return GlobalConfiguration.loadConfiguration(dir.toString());
        } finally {
            Files.deleteIfExists(copy);
            Files.deleteIfExists(dir);
        }
    }

    /** Jars and folders of jars given with --jar / --classpath, as URLs. */
    static URL[] classpathUrls(List<String> entries) throws Exception {
        List<URL> urls = new ArrayList<>();
        for (String e : entries) {
            for (String part : e.split(File.pathSeparator)) {
                if (part.isEmpty()) {
                    continue;
                }
                File f = new File(part);
                if (!f.exists()) {
                    throw new UsageError("--classpath/--jar " + part + ": no such file or folder");
                }
                if (f.isDirectory()) {
                    File[] jars = f.listFiles((d, n) -> n.endsWith(".jar"));
                    if (jars != null && jars.length > 0) {
                        Arrays.sort(jars);
                        for (File j : jars) {
                            urls.add(j.toURI().toURL());
                        }
                    }
                    urls.add(f.toURI().toURL()); // a folder of classes works too
                } else {
                    urls.add(f.toURI().toURL());
                }
            }
        }
        return urls.toArray(new URL[0]);
    }

    static void run(String[] args) throws Exception {
        Args a = parse(args);
        if (a.help) {
            System.out.print(HELP);
            System.out.println("flink " + StreamGraphSpecExporter.flinkVersionFull() + ": " + new CompatImpl().captureGuarantee());
            return;
        }
        if (a.mainClass == null) {
            throw new UsageError("--main-class is required");
        }
        Configuration conf = configuration(a);
        ExportClassLoader loader =
                new ExportClassLoader(classpathUrls(a.classpath), UserJobExport.class.getClassLoader());
        Thread.currentThread().setContextClassLoader(loader);
        new CompatImpl().installCapture(conf, loader);

        Class<?> c;
        try {
            c = Class.forName(a.mainClass, false, loader);
        } catch (ClassNotFoundException e) {
            throw new ExportError(
                    "main class " + a.mainClass + " not found: give the job's jar with --jar (or --classpath)");
        }
        Method m;
        try {
            m = c.getMethod("main", String[].class);
        } catch (NoSuchMethodException e) {
            throw new ExportError(a.mainClass + " has no public static void main(String[])");
        }
        if (!Modifier.isStatic(m.getModifiers())) {
            throw new ExportError(a.mainClass + ".main(String[]) is not static");
        }

        // Whatever the program prints must not end up in the spec lines on stdout.
        PrintStream realOut = System.out;
        boolean toStdout = a.out.equals("-");
        if (toStdout) {
            System.setOut(System.err);
        }
        Throwable failure;
        try {
            failure = MainRun.run(m, a.programArgs.toArray(new String[0]), loader, a.mainClass, a.timeoutSeconds);
        } catch (MainRun.TimedOut t) {
            synchronized (Capture.class) {
                if (Capture.GRAPHS.isEmpty()) {
                    throw new ExportError(
                            a.mainClass + ".main() did not submit a job within " + a.timeoutSeconds
                                    + " s (--timeout): stopped " + t.where
                                    + "; nothing was exported (a main() that waits for a socket, a file or"
                                    + " a sleep before execute() cannot be exported as it is)");
                }
                System.err.println(
                        "warning: " + a.mainClass + ".main() was still running after " + a.timeoutSeconds
                                + " s (--timeout), " + t.where + ", having submitted " + Capture.GRAPHS.size()
                                + " job(s); the captured job(s) are written");
                failure = null;
            }
        } finally {
            if (toStdout) {
                System.setOut(realOut);
            }
        }
        List<StreamGraph> graphs;
        synchronized (Capture.class) {
            graphs = new ArrayList<>(Capture.GRAPHS);
        }
        Integer exit = failure == null ? null : MainRun.exitStatus(failure);
        if (exit != null) {
            if (graphs.isEmpty()) {
                throw new ExportError(
                        a.mainClass + ".main() exited with code " + exit
                                + " (System.exit) without submitting a job: nothing to export");
            }
            if (exit != 0) {
                System.err.println(
                        "warning: " + a.mainClass + ".main() exited with code " + exit + " (System.exit) after"
                                + " submitting " + graphs.size() + " job(s); the captured job(s) are written");
            }
            failure = null;
        }
        if (failure != null && find(failure, Capture.Stop.class) == null) {
            Throwable unsupported = find(failure, Capture.Unsupported.class);
            if (unsupported != null) {
                throw new ExportError(unsupported.getMessage());
            }
            String missing = missingClass(failure);
            if (missing != null) {
                throw new ExportError(
                        "class "
                                + missing
                                + " not found: add the jar that provides it with --classpath (e.g. the connector"
                                + " jar) or --maven GROUP:ARTIFACT:VERSION, or build a fat jar (Flink's own jars"
                                + " are already on the harness's classpath)");
            }
            if (graphs.isEmpty()) {
                throw new ExportError(a.mainClass + ".main() failed before submitting a job: " + describe(failure));
            }
            System.err.println(
                    "warning: "
                            + a.mainClass
                            + ".main() failed after submitting "
                            + graphs.size()
                            + " job(s) (it saw a job that finished at once, with no results): "
                            + describe(failure)
                            + "; the captured job(s) are written");
        }
        if (graphs.isEmpty()) {
            throw new ExportError(
                    a.mainClass
                            + ".main() returned without submitting a job (no execute(), executeAsync(),"
                            + " executeSql(INSERT ...), Table.execute*() or StatementSet.execute()): nothing to export");
        }
        DeclaredStates declared = declaredStates(loader, graphs);
        StreamGraphSpecExporter.Context ctx = new StreamGraphSpecExporter.Context(
                conf, userClasses(a, loader, graphs, declared), SerializerModules.probe(loader), declared);
        try (Writer w = Main.open(a.out)) {
            for (int i = 0; i < graphs.size(); i++) {
                StreamGraph sg = graphs.get(i);
                String id = a.graphId != null ? a.graphId : sg.getJobName();
                if (graphs.size() > 1) {
                    id = id + "#" + (i + 1);
                }
                Map<String, Object> rec = StreamGraphSpecExporter.export(sg, id, ctx);
                if (a.expected) {
                    rec.put("expected", JobGraphExpected.compute(sg));
                }
                w.write(Json.write(rec));
                w.write('\n');
            }
        }
        System.err.println(
                "captured " + graphs.size() + " job(s) from " + a.mainClass + " (Flink "
                        + StreamGraphSpecExporter.flinkVersionFull() + "); nothing was executed");
    }

    /**
     * The facts of the --jar jars' classes (graph field user_classes, one scan for every captured
     * graph: they share the jar), with the job's class loader, in the scope of the job's own
     * packages and the classes the graphs name ({@link UserClassFacts.Scope}); null when there is no
     * --jar or the limit is 0. Its scope and cost are reported on stderr.
     */
    /**
     * The node field declared_states of every captured graph (DeclaredStates: descriptor objects,
     * the functions' bytecode, V2 declarations), computed before user_classes so that the classes
     * the declared states use are described too; null when the line cannot read declarations.
     * Count and cost on stderr.
     */
    static DeclaredStates declaredStates(ClassLoader loader, List<StreamGraph> graphs) {
        if (!DeclaredStates.supported()) {
            System.err.println("declared states: not read on Flink " + StreamGraphSpecExporter.flinkLine()
                    + " (no shaded ASM 9 on its class path)");
            return null;
        }
        long t0 = System.nanoTime();
        DeclaredStates d = new DeclaredStates(loader);
        int states = 0;
        int unresolved = 0;
        try {
            for (StreamGraph sg : graphs) {
                for (List<Map<String, Object>> l : d.of(sg).values()) {
                    for (Map<String, Object> e : l) {
                        states++;
                        if (e.get("unresolved") != null) {
                            unresolved++;
                        }
                    }
                }
            }
        } catch (RuntimeException | LinkageError e) {
            // a failure outside any one operator (each operator's is an unresolved entry of its own)
            System.err.println("warning: declared states not written: " + describe(e));
            if (System.getenv("HARNESS_DEBUG") != null) {
                e.printStackTrace();
            }
            return null;
        }
        System.err.printf("declared states: %d (%d unresolved) in %d ms%n", states, unresolved,
                (System.nanoTime() - t0) / 1_000_000);
        return d;
    }

    static UserClassFacts.Result userClasses(Args a, ClassLoader loader, List<StreamGraph> graphs, DeclaredStates declared) {
        if (a.jobJars.isEmpty() || a.userClassesLimit == 0) {
            return null;
        }
        long t0 = System.nanoTime();
        List<File> jars = new ArrayList<>();
        for (String j : a.jobJars) {
            jars.add(new File(j));
        }
        UserClassFacts.Scope scope = UserClassFacts.Scope.of(a.mainClass, a.userClassesPackages, graphs);
        if (declared != null) {
            for (StreamGraph sg : graphs) {
                scope.name(declared.typeObjects(sg));
            }
        }
        UserClassFacts.Result r = UserClassFacts.scan(jars, loader, a.userClassesLimit, scope);
        System.err.printf(
                "user classes: %d described, %d skipped, %d examined in %d ms (packages %s, %d classes named by the"
                        + " job graph)%n",
                r.classes.size(), r.skipped, r.examined, (System.nanoTime() - t0) / 1_000_000, scope.describe(),
                scope.namedCount());
        return r;
    }

    static <T extends Throwable> T find(Throwable t, Class<T> type) {
        for (int depth = 0; t != null && depth < 50; depth++, t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        return null;
    }

    /** Name of the class whose absence caused {@code t}, or null. */
    static String missingClass(Throwable t) {
        for (int depth = 0; t != null && depth < 50; depth++, t = t.getCause()) {
            if (t instanceof NoClassDefFoundError || t instanceof ClassNotFoundException) {
                String msg = String.valueOf(t.getMessage());
                if (msg.startsWith("Could not initialize class ")) {
                    continue; // a static initialiser failed; the class itself exists
                }
                return msg.replace('/', '.');
            }
        }
        return null;
    }

    static String describe(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String s = t.getClass().getName() + ": " + t.getMessage();
        if (root != t) {
            s += " (caused by " + root.getClass().getName() + ": " + root.getMessage() + ")";
        }
        return s;
    }

    // ------------------------------------------------------------------ Flink 1.9

    /** Environment returned by getExecutionEnvironment() while a user's main() runs (1.9 only). */
    public static class CapturingEnvironment extends StreamExecutionEnvironment {
        // no @Override on purpose: the set of execute methods differs between Flink versions
        public JobExecutionResult execute(String jobName) throws Exception {
            StreamGraph sg = getStreamGraph();
            if (jobName != null) {
                sg.setJobName(jobName);
            }
            return capture(sg);
        }

        public JobExecutionResult execute(StreamGraph streamGraph) throws Exception {
            return capture(streamGraph);
        }

        private JobExecutionResult capture(StreamGraph sg) {
            Capture.submitted(sg);
            return null;
        }
    }

    /**
     * Flink 1.9 has no pluggable executors: a context environment factory returns a
     * {@link CapturingEnvironment} whose execute() captures. Only -p and the parallelism /
     * max-parallelism options are applied.
     */
    static void installLegacy(Configuration conf) throws Exception {
        Method init = null;
        for (Method m : StreamExecutionEnvironment.class.getDeclaredMethods()) {
            if (m.getName().equals("initializeContextEnvironment") && m.getParameterCount() == 1) {
                init = m;
            }
        }
        if (init == null) {
            throw new IllegalStateException("this Flink has no initializeContextEnvironment");
        }
        String par = conf.getString("parallelism.default", null);
        String maxPar = conf.getString("pipeline.max-parallelism", null);
        Class<?> factoryType = init.getParameterTypes()[0];
        Object factory =
                Proxy.newProxyInstance(
                        factoryType.getClassLoader(),
                        new Class<?>[] {factoryType},
                        (proxy, method, x) -> {
                            if (method.getName().equals("toString")) {
                                return "CapturingEnvironmentFactory";
                            }
                            if (method.getName().equals("hashCode")) {
                                return 0;
                            }
                            if (method.getName().equals("equals")) {
                                return proxy == x[0];
                            }
                            CapturingEnvironment env = new CapturingEnvironment();
                            if (par != null) {
                                env.setParallelism(Integer.parseInt(par));
                            }
                            if (maxPar != null) {
                                env.setMaxParallelism(Integer.parseInt(maxPar));
                            }
                            return env;
                        });
        init.setAccessible(true);
        init.invoke(null, factory);
    }
}
