package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.graph.StreamGraph;

import java.io.BufferedWriter;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.zip.GZIPOutputStream;

/**
 * Command line of the harness.
 *
 * <pre>
 * generate --seed S --count N --out FILE.jsonl[.gz] [--min-size A] [--max-size B] [--start I] [--batch] [--sql]
 *          [--long-chain [--chain-min A] [--chain-max B]]
 * time     --seed S --count N ... | --plan FILE
 * export   --main-class CLASS [--jar JAR] [--classpath DIR_OR_JAR]... [-p N] [-D k=v]... [--config FILE] ...
 * selfcheck
 * version
 * </pre>
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h") || args[0].equals("help")) {
            usage();
            System.exit(args.length == 0 ? 2 : 0);
        }
        String cmd = args[0];
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        try {
            switch (cmd) {
                case "generate":
                    generate(rest);
                    break;
                case "export":
                    UserJobExport.run(rest);
                    System.exit(0); // threads the job's main() left running must not hold the export
                    break;
                case "time":
                    TimeJobGraphs.run(rest);
                    break;
                case "selfcheck":
                    System.exit(selfcheck());
                    break;
                case "version":
                    System.out.println(StreamGraphSpecExporter.flinkVersionFull());
                    break;
                default:
                    System.err.println("error: unknown command " + cmd);
                    usage();
                    System.exit(2);
            }
        } catch (UserJobExport.UsageError | IllegalArgumentException e) {
            debug(e);
            System.err.println("error: " + e.getMessage());
            usage();
            System.exit(2);
        } catch (UserJobExport.ExportError e) {
            debug(e);
            System.err.println("error: " + e.getMessage());
            System.exit(1);
        } catch (Throwable e) {
            debug(e);
            System.err.println("error: " + UserJobExport.describe(e) + " (HARNESS_DEBUG=1 shows the stack trace)");
            System.exit(1);
        }
    }

    private static void debug(Throwable t) {
        if (System.getenv("HARNESS_DEBUG") != null) {
            t.printStackTrace();
        }
    }

    static void usage() {
        System.err.println(
                "usage: java -jar flink-jobgraph-harness.jar COMMAND ...   (Flink "
                        + StreamGraphSpecExporter.flinkVersionFull()
                        + ")\n"
                        + "  generate --seed S --count N --out FILE.jsonl[.gz] [--min-size A] [--max-size B] [--start I] [--batch]\n"
                        + "           [--sql]\n"
                        + "           (--batch: programs in execution.runtime-mode=BATCH, bounded sources; Flink 1.15+)\n"
                        + "           (--sql: random Table/SQL programs (datagen -> joins, aggregations, windows ... -> blackhole/print),\n"
                        + "            captured at submission; with --batch in BATCH mode; Flink 1.15+)\n"
                        + "           [--long-chain [--chain-min A] [--chain-max B]]\n"
                        + "           (--long-chain: DataStream programs shaped like a compiled SQL job: table sources, runs of\n"
                        + "            chained Calc-like steps between keyBy/rebalance/global/join exchanges, sinks; the longest\n"
                        + "            chain has between A and B operators (default 50-500, uniform per program, A >= 10);\n"
                        + "            --min-size/--max-size do not apply; ids flink-<line>-longchain-s<seed>-<index>)\n"
                        + "  time --seed S --count N [--min-size A] [--max-size B] [--start I] [--long-chain ...] [--warmup W]\n"
                        + "  time --seed S --plan FILE [--warmup W]   (lines \"start count min max [generate options]\")\n"
                        + "  "
                        + UserJobExport.USAGE
                        + "\n"
                        + "  export --help      (what export captures in this Flink line)\n"
                        + "  selfcheck          (the seeds/003 IDs of SPEC section 3)\n"
                        + "  version");
    }

    static Map<String, String> opts(String[] a) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < a.length; i++) {
            if (a[i].equals("--")) {
                m.put("--", String.join("\u0000", Arrays.copyOfRange(a, i + 1, a.length)));
                break;
            }
            if (!a[i].startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument: " + a[i]);
            }
            String k = a[i].substring(2);
            if (i + 1 < a.length && !a[i + 1].startsWith("--")) {
                m.put(k, a[++i]);
            } else {
                m.put(k, "true");
            }
        }
        return m;
    }

    static Writer open(String path) throws Exception {
        OutputStream os = path.equals("-") ? System.out : new FileOutputStream(path);
        if (path.endsWith(".gz")) {
            os = new GZIPOutputStream(os, 1 << 16);
        }
        return new BufferedWriter(new OutputStreamWriter(os, StandardCharsets.UTF_8), 1 << 16);
    }

    /** Case seed of program {@code index} of run {@code seed}. */
    static long caseSeed(long seed, int index) {
        long z = seed * 0x9E3779B97F4A7C15L + index * 0xBF58476D1CE4E5B9L + 0x94D049BB133111EBL;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Target size: mostly 2-40 nodes, about 10% large ones (up to max). */
    static int targetSize(Random r, int min, int max) {
        int t;
        double x = r.nextDouble();
        if (x < 0.10 && max > 60) {
            t = 100 + r.nextInt(Math.max(1, Math.min(max, 560) - 99));
        } else if (x < 0.25) {
            t = 2 + r.nextInt(10);
        } else {
            t = 5 + r.nextInt(36);
        }
        return Math.max(min, Math.min(max, t));
    }

    /** Longest chain (operators) of long-chain program {@code index}: uniform in [min, max]. */
    static int longChainTarget(Random r, int min, int max) {
        return min + r.nextInt(max - min + 1);
    }

    /** --long-chain's --chain-min/--chain-max (defaults 50/500), checked. */
    static int[] chainRange(Map<String, String> o) {
        int a = Integer.parseInt(o.getOrDefault("chain-min", "50"));
        int b = Integer.parseInt(o.getOrDefault("chain-max", "500"));
        if (a < 10 || b < a) {
            throw new IllegalArgumentException("--chain-min must be at least 10 and at most --chain-max");
        }
        return new int[] {a, b};
    }

    static String graphId(String line, long seed, int index, boolean sql, boolean batch, boolean longChain) {
        return String.format(
                "flink-%s-%s%s%ss%d-%05d",
                line, sql ? "sql-" : "", batch ? "batch-" : "", longChain ? "longchain-" : "", seed, index);
    }

    static void generate(String[] args) throws Exception {
        Map<String, String> o = opts(args);
        long seed = Long.parseLong(o.getOrDefault("seed", "1"));
        int count = Integer.parseInt(o.getOrDefault("count", "100"));
        int start = Integer.parseInt(o.getOrDefault("start", "0"));
        int min = Integer.parseInt(o.getOrDefault("min-size", "2"));
        int max = Integer.parseInt(o.getOrDefault("max-size", "560"));
        String out = o.get("out");
        boolean batch = Boolean.parseBoolean(o.getOrDefault("batch", "false"));
        boolean sql = Boolean.parseBoolean(o.getOrDefault("sql", "false"));
        boolean longChain = Boolean.parseBoolean(o.getOrDefault("long-chain", "false"));
        if (out == null) {
            throw new IllegalArgumentException("--out is required");
        }
        int[] chain = longChain ? chainRange(o) : null;
        if (longChain && (sql || batch)) {
            throw new IllegalArgumentException("--long-chain makes STREAMING DataStream programs: not with --sql or --batch");
        }
        if (sql) {
            try {
                Class.forName("org.flinkjobgraph.harness.SqlGenerator");
            } catch (ClassNotFoundException e) {
                throw new IllegalArgumentException("--sql needs Flink 1.15+ (this harness has no Table/SQL planner)");
            }
        }
        Compat compat = new CompatImpl();
        String line = StreamGraphSpecExporter.flinkLine();
        long t0 = System.currentTimeMillis();
        int errors = 0;
        int retries = 0;
        Map<String, Integer> retryReasons = new TreeMap<>();
        try (Writer w = open(out)) {
            for (int i = start; i < start + count; i++) {
                long cs = caseSeed(seed, i);
                int target =
                        longChain
                                ? longChainTarget(new Random(cs), chain[0], chain[1])
                                : targetSize(new Random(cs), min, max);
                String graphId = graphId(line, seed, i, sql, batch, longChain);
                Map<String, Object> rec = null;
                for (int attempt = 0; attempt < 50 && rec == null; attempt++) {
                    long s = attempt == 0 ? cs : caseSeed(cs, attempt);
                    try {
                        rec = sql
                                ? sqlOne(graphId, seed, i, s, batch)
                                : longChain
                                        ? longChainOne(compat, graphId, seed, i, s, target)
                                        : one(compat, graphId, seed, i, s, target, batch);
                    } catch (Throwable t) {
                        retries++;
                        String k = t.getClass().getSimpleName() + ": " + String.valueOf(t.getMessage());
                        k = k.length() > 160 ? k.substring(0, 160) : k;
                        retryReasons.merge(k, 1, Integer::sum);
                        if (System.getenv("HARNESS_DEBUG") != null) {
                            t.printStackTrace();
                        }
                    }
                }
                if (rec == null) {
                    throw new IllegalStateException("no valid program for " + graphId);
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> exp = (Map<String, Object>) rec.get("expected");
                if (exp.containsKey("error")) {
                    errors++;
                }
                w.write(Json.write(rec));
                w.write('\n');
            }
        }
        long ms = System.currentTimeMillis() - t0;
        System.err.printf(
                "flink %s: wrote %d programs to %s in %.1fs (%d with a Flink error, %d generator retries)%n",
                StreamGraphSpecExporter.flinkVersionFull(), count, out, ms / 1000.0, errors, retries);
        for (Map.Entry<String, Integer> e : retryReasons.entrySet()) {
            System.err.println("  retry x" + e.getValue() + ": " + e.getKey());
        }
    }

    /** Rebuilds the seeds/003 "with uids" program and compares with the known IDs. */
    static int selfcheck() {
        Compat compat = new CompatImpl();
        Generator.resetFlinkCounters();
        org.apache.flink.streaming.api.environment.StreamExecutionEnvironment env =
                compat.createEnv(false);
        SeedJob.build(env);
        StreamGraph sg = env.getStreamGraph();
        Map<String, Object> exp = JobGraphExpected.compute(sg);
        String[][] want = {
            {"1", "64248066b88fd35e9203cd469ffb4a53", "64248066b88fd35e9203cd469ffb4a53"},
            {"2", "d216482dd1005af6d275607ff9eabe2c", "64248066b88fd35e9203cd469ffb4a53"},
            {"4", "77fec41789154996bfa76055dea29472", "77fec41789154996bfa76055dea29472"},
            {"5", "f0bb9ed0d20321fef7413e1942e21550", "77fec41789154996bfa76055dea29472"},
        };
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Object>> ops = (Map<String, Map<String, Object>>) exp.get("operators");
        int bad = 0;
        for (String[] w : want) {
            Map<String, Object> o = ops == null ? null : ops.get(w[0]);
            boolean ok = o != null && w[1].equals(o.get("operator_id")) && w[2].equals(o.get("jobvertex_id"));
            System.out.println((ok ? "ok   " : "FAIL ") + "node " + w[0] + " " + (o == null ? exp : o.get("operator_id") + " " + o.get("jobvertex_id")));
            if (!ok) {
                bad++;
            }
        }
        System.out.println("flink " + StreamGraphSpecExporter.flinkVersionFull() + ": " + (want.length - bad) + " passed, " + bad + " failed");
        return bad == 0 ? 0 : 1;
    }

    static Map<String, Object> one(
            Compat compat, String graphId, long seed, int index, long caseSeed, int target, boolean batch) {
        Generator g = new Generator(compat, caseSeed, batch);
        StreamGraph sg = g.build(target);
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("target_size", target);
        if (batch) {
            meta.put("runtime_mode", "BATCH");
        }
        return record(sg, graphId, seed, index, caseSeed, meta, g.program);
    }

    /**
     * A generated program's record (one output line): the spec of {@code sg}, whose job name
     * becomes the graph id, with Flink's answer as "expected" (sanity-checked: a failure throws
     * and the case is retried) and as "meta" seed, index, case_seed, the entries of {@code meta},
     * then the program in words.
     */
    static Map<String, Object> record(
            StreamGraph sg, String graphId, long seed, int index, long caseSeed, Map<String, Object> meta,
            List<String> program) {
        sg.setJobName(graphId);
        Map<String, Object> rec = StreamGraphSpecExporter.export(sg, graphId);
        Map<String, Object> exp = JobGraphExpected.compute(sg);
        sanityCheck(rec, exp);
        rec.put("expected", exp);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("seed", seed);
        m.put("index", index);
        m.put("case_seed", caseSeed);
        m.putAll(meta);
        m.put("program", new ArrayList<>(program));
        rec.put("meta", m);
        return rec;
    }

    /** Throws if Flink's answer does not fit the spec (JobGraphExpected.check). */
    static void sanityCheck(Map<String, Object> rec, Map<String, Object> exp) {
        String problem = JobGraphExpected.check(rec, exp);
        if (problem != null) {
            throw new IllegalStateException("sanity check failed: " + problem);
        }
    }

    /**
     * A long-chain program (LongChainGenerator): exported, Flink's answer, and the check that the
     * largest job vertex has exactly {@code longest} operators (otherwise this attempt throws and
     * the case is retried, in {@code time} too).
     */
    @SuppressWarnings("unchecked")
    static Map<String, Object> longChainOne(
            Compat compat, String graphId, long seed, int index, long caseSeed, int longest) {
        LongChainGenerator g = new LongChainGenerator(compat, caseSeed);
        StreamGraph sg = g.build(longest);
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("kind", "long-chain");
        meta.put("longest_chain", longest);
        Map<String, Object> rec = record(sg, graphId, seed, index, caseSeed, meta, g.program);
        checkLongestChain((Map<String, Object>) rec.get("expected"), longest);
        return rec;
    }

    /** Throws unless Flink's largest job vertex has {@code longest} operators. */
    static void checkLongestChain(Map<String, Object> exp, int longest) {
        int got = LongChainGenerator.longestChain(exp);
        if (got != longest) {
            throw new IllegalStateException("long chain: Flink's longest chain has " + got + " operators, wanted " + longest
                    + (exp.containsKey("error") ? " (" + exp.get("error") + ")" : ""));
        }
    }

    /** A random SQL program (SqlGenerator, Flink 1.15+ only: compiled from src/compat/flink-1.15plus). */
    @SuppressWarnings("unchecked")
    static Map<String, Object> sqlOne(String graphId, long seed, int index, long caseSeed, boolean batch)
            throws Throwable {
        Class<?> g;
        try {
            g = Class.forName("org.flinkjobgraph.harness.SqlGenerator");
        } catch (ClassNotFoundException e) {
            throw new IllegalArgumentException("--sql needs Flink 1.15+ (this harness has no Table/SQL planner)");
        }
        try {
            return (Map<String, Object>)
                    g.getMethod("record", String.class, long.class, int.class, long.class, boolean.class)
                            .invoke(null, graphId, seed, index, caseSeed, batch);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
    }

    static List<String> split(String joined) {
        if (joined == null || joined.isEmpty()) {
            return new ArrayList<>();
        }
        return Arrays.asList(joined.split("\u0000", -1));
    }
}
