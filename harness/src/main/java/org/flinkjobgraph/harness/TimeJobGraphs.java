package org.flinkjobgraph.harness;

import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamingJobGraphGenerator;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * {@code time --seed S --count N [--min-size A] [--max-size B] [--start I] [--long-chain [--chain-min A]
 * [--chain-max B]] [--warmup W]} (or {@code time --seed S --plan FILE}, one {@code "start count min max
 * [generate options]"} line per generate call, e.g. {@code "1000000 100 2 560 --long-chain --chain-min 50
 * --chain-max 500"}, all timed in one JVM with one warm-up): Flink's
 * own cost of the JobGraph for the programs {@code generate} writes with the same arguments.
 *
 * <p>Each case is rebuilt exactly as {@link Main#generate} builds it (same case seed, same target
 * size, same retry loop: an attempt counts only if the StreamGraph builds, exports, and Flink's
 * answer passes {@link JobGraphExpected#check}), so the timed StreamGraphs are the ones in the
 * fleet file. Only {@code StreamingJobGraphGenerator.createJobGraph(streamGraph)} is timed (what
 * {@link JobGraphExpected#compute} calls); program construction, export, reading the answer back
 * and the check run outside the clock. Before the timed pass, a warm-up pass runs createJobGraph
 * over the first {@code W} (default 200) cases, so JIT compilation is not timed.
 *
 * <p>Prints one JSON line on stdout: programs, stream_nodes, flink_seconds (sum over all
 * programs, wall clock), flink_cpu_seconds (thread CPU time of the same calls), per_node_us, per_program_us, p50/p99/max per program, flink_errors (programs Flink
 * rejects in createJobGraph, timed too), retries, warmup_programs, gc_seconds (GC time during the
 * timed pass, all JVM work included), wall_seconds of the whole command.
 */
final class TimeJobGraphs {
    private TimeJobGraphs() {}

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** One case of the fleet as generate builds it, plus the createJobGraph time in ns. */
    private static final class Timed {
        long nanos;
        long cpuNanos;
        int nodes;
        boolean flinkError;
        int retries;
    }

    /**
     * One {@code generate} invocation's cases: --start, --count, --min-size, --max-size and
     * --long-chain (with --chain-min/--chain-max: then {@code min}/{@code max} are the chain range).
     */
    private static final class Chunk {
        final int start;
        final int count;
        final int min;
        final int max;
        final boolean longChain;

        Chunk(int start, int count, int min, int max, boolean longChain) {
            this.start = start;
            this.count = count;
            this.min = min;
            this.max = max;
            this.longChain = longChain;
        }

        /** The chunk of "start count min max" and the generate options that follow them. */
        static Chunk of(int start, int count, int min, int max, Map<String, String> o) {
            for (String k : o.keySet()) {
                if (!k.equals("long-chain") && !k.equals("chain-min") && !k.equals("chain-max")) {
                    throw new IllegalArgumentException("time: generate option --" + k + " is not supported in a plan");
                }
            }
            if (Boolean.parseBoolean(o.getOrDefault("long-chain", "false"))) {
                int[] range = Main.chainRange(o);
                return new Chunk(start, count, range[0], range[1], true);
            }
            return new Chunk(start, count, min, max, false);
        }
    }

    static void run(String[] args) throws Exception {
        Map<String, String> o = Main.opts(args);
        long seed = Long.parseLong(o.getOrDefault("seed", "1"));
        int warmup = Integer.parseInt(o.getOrDefault("warmup", "200"));
        List<Chunk> chunks = new ArrayList<>();
        if (o.containsKey("plan")) {
            // several generate invocations (same seed) timed in one JVM: lines "start count min max"
            for (String ln : Files.readAllLines(Paths.get(o.get("plan")))) {
                ln = ln.trim();
                if (ln.isEmpty() || ln.startsWith("#")) {
                    continue;
                }
                String[] f = ln.split("\\s+");
                Map<String, String> extra = Main.opts(java.util.Arrays.copyOfRange(f, 4, f.length));
                chunks.add(Chunk.of(Integer.parseInt(f[0]), Integer.parseInt(f[1]),
                        Integer.parseInt(f[2]), Integer.parseInt(f[3]), extra));
            }
        } else {
            Map<String, String> extra = new LinkedHashMap<>();
            for (String k : new String[] {"long-chain", "chain-min", "chain-max"}) {
                if (o.containsKey(k)) {
                    extra.put(k, o.get(k));
                }
            }
            chunks.add(Chunk.of(
                    Integer.parseInt(o.getOrDefault("start", "0")),
                    Integer.parseInt(o.getOrDefault("count", "100")),
                    Integer.parseInt(o.getOrDefault("min-size", "2")),
                    Integer.parseInt(o.getOrDefault("max-size", "560")),
                    extra));
        }
        Compat compat = new CompatImpl();
        String line = StreamGraphSpecExporter.flinkLine();
        long wall0 = System.nanoTime();

        // warm-up: the first cases again, createJobGraph not counted
        int w = 0;
        for (Chunk c : chunks) {
            for (int i = c.start; i < c.start + c.count && w < warmup; i++, w++) {
                one(compat, line, seed, i, c);
            }
        }

        long gc0 = gcMillis();
        long total = 0;
        long cpu = 0;
        long nodes = 0;
        int count = 0;
        int errors = 0;
        int retries = 0;
        List<Long> per = new ArrayList<>();
        for (Chunk c : chunks) {
            for (int i = c.start; i < c.start + c.count; i++) {
                Timed t = one(compat, line, seed, i, c);
                total += t.nanos;
                cpu += t.cpuNanos;
                nodes += t.nodes;
                count++;
                errors += t.flinkError ? 1 : 0;
                retries += t.retries;
                per.add(t.nanos);
            }
        }
        long gcMs = gcMillis() - gc0;
        Collections.sort(per);

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("programs", count);
        out.put("stream_nodes", nodes);
        out.put("flink_seconds", total / 1e9);
        out.put("flink_cpu_seconds", cpu / 1e9);
        out.put("per_node_us", nodes == 0 ? 0.0 : total / 1e3 / nodes);
        out.put("cpu_per_node_us", nodes == 0 ? 0.0 : cpu / 1e3 / nodes);
        out.put("per_program_us", count == 0 ? 0.0 : total / 1e3 / count);
        out.put("p50_program_us", pct(per, 0.50) / 1e3);
        out.put("p99_program_us", pct(per, 0.99) / 1e3);
        out.put("max_program_us", per.isEmpty() ? 0.0 : per.get(per.size() - 1) / 1e3);
        out.put("flink_errors", errors);
        out.put("retries", retries);
        out.put("warmup_programs", w);
        out.put("gc_seconds", gcMs / 1e3);
        out.put("wall_seconds", (System.nanoTime() - wall0) / 1e9);
        out.put("flink_version", StreamGraphSpecExporter.flinkVersionFull());
        out.put("seed", seed);
        if (chunks.size() == 1) {
            Chunk c = chunks.get(0);
            out.put("start", c.start);
            out.put(c.longChain ? "chain_min" : "min_size", c.min);
            out.put(c.longChain ? "chain_max" : "max_size", c.max);
        } else {
            out.put("chunks", chunks.size());
        }
        out.put("java", System.getProperty("java.version"));
        out.put("cpus", Runtime.getRuntime().availableProcessors());
        out.put("max_heap_mb", Runtime.getRuntime().maxMemory() >> 20);
        System.out.println(Json.write(out));
    }

    private static long pct(List<Long> sorted, double q) {
        if (sorted.isEmpty()) {
            return 0;
        }
        int k = (int) Math.min(sorted.size() - 1, Math.round(q * (sorted.size() - 1)));
        return sorted.get(k);
    }

    private static long gcMillis() {
        long s = 0;
        for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) {
            s += Math.max(0, b.getCollectionTime());
        }
        return s;
    }

    /** Case {@code i}: the same attempt loop as Main.generate / Main.one, timing createJobGraph. */
    private static Timed one(Compat compat, String line, long seed, int i, Chunk c) {
        long cs = Main.caseSeed(seed, i);
        int target = c.longChain
                ? Main.longChainTarget(new Random(cs), c.min, c.max)
                : Main.targetSize(new Random(cs), c.min, c.max);
        String graphId = Main.graphId(line, seed, i, false, false, c.longChain);
        int retries = 0;
        for (int attempt = 0; attempt < 50; attempt++) {
            long s = attempt == 0 ? cs : Main.caseSeed(cs, attempt);
            try {
                Timed t = attempt(compat, graphId, s, target, c.longChain);
                t.retries = retries;
                return t;
            } catch (Throwable t) {
                retries++;
            }
        }
        throw new IllegalStateException("no valid program for " + graphId);
    }

    private static Timed attempt(Compat compat, String graphId, long caseSeed, int target, boolean longChain) {
        StreamGraph sg = longChain
                ? new LongChainGenerator(compat, caseSeed).build(target)
                : new Generator(compat, caseSeed).build(target);
        sg.setJobName(graphId);
        // as in Main.one: export first (it is what the fleet file holds), then Flink's answer
        Map<String, Object> rec = StreamGraphSpecExporter.export(sg, graphId);
        Timed t = new Timed();
        t.nodes = sg.getStreamNodes().size();
        JobGraph jg = null;
        Throwable err = null;
        // createJobGraph(StreamGraph) serializes the StreamConfigs on a direct executor: all its
        // work is on this thread, so the thread's CPU time is its cost without other load
        long c0 = THREADS.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        try {
            jg = StreamingJobGraphGenerator.createJobGraph(sg);
        } catch (Throwable e) {
            err = e;
        }
        t.nanos = System.nanoTime() - t0;
        t.cpuNanos = THREADS.getCurrentThreadCpuTime() - c0;
        Map<String, Object> exp;
        if (err != null) {
            exp = new LinkedHashMap<>();
            exp.put("error", JobGraphExpected.rootError(err));
            t.flinkError = true;
        } else {
            exp = JobGraphExpected.read(sg, jg);
        }
        // as Main.record / Main.longChainOne: same retries
        Main.sanityCheck(rec, exp);
        if (longChain) {
            Main.checkLongestChain(exp, target);
        }
        return t;
    }
}
