package org.flinkjobgraph.harness;

import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * {@code generate --long-chain}: one DataStream program shaped like a compiled SQL job, built with
 * the real Flink API from a seed (never executed). {@link #program} lists the API calls made.
 *
 * <p>Shape: one to three table sources (each with a short run of chainable steps behind it,
 * merged by UNION ALL or by keyed joins), then 2-6 runs, each behind an exchange (keyBy into a
 * keyed "GroupAggregate/Rank/Deduplicate..." operator, a rebalance, a global exchange into a
 * parallelism-1 "SortLimit", or a keyed join with one more source), each run a straight line of
 * chainable one-input steps (map / filter / flatMap / process and custom operator factories with
 * {@code ChainingStrategy.ALWAYS}, named like the planner's "Calc", "WatermarkAssigner",
 * "ConstraintEnforcer" ... nodes, simplified "Calc[12]" or full "Calc(select=[...], where=[...])"
 * names), then the sink(s). Every operator of a run has the run's parallelism, the default slot
 * sharing group and the default chaining, so a run is one chain. One run (chosen at random, also
 * a source's run) has exactly {@code longest} operators in its chain (the source, or the sink,
 * counted when they are in it); every other chain is shorter (at most min(longest/4, 30) + 3
 * operators, a source's run at most 4).
 * A few runs fork a side INSERT (1-2 steps + a sink) that chains into the same vertex.
 *
 * <p>The planner's uids ({@code table.exec.uid.generation=ALWAYS}: "12_stream-exec-calc_1_calc")
 * are set in 30% of the programs; no uid hashes, no disabled chaining, no HYBRID exchanges, so
 * Flink accepts every program. {@link Main#longChainOne} checks Flink's answer: the largest job
 * vertex must hold {@code longest} operators (else the case is retried with a derived seed).
 */
public final class LongChainGenerator {

    static final String[] TABLES = {
        "orders", "clicks", "users", "payments", "shipments", "events", "sessions", "inventory", "rates", "ads"
    };
    static final String[] COLS = {
        "id", "user_id", "amount", "ts", "region", "status", "price", "qty", "name", "category", "currency",
        "score", "item_id", "country", "device"
    };
    /** Chainable one-input planner nodes (Calc most often). */
    static final String[] STEP_KINDS = {
        "Calc", "Calc", "Calc", "Calc", "Calc", "Calc", "WatermarkAssigner", "Correlate", "Expand",
        "ConstraintEnforcer", "DropUpdateBefore", "StreamRecordTimestampInserter", "MiniBatchAssigner",
        "TableFunctionScan"
    };
    /** Keyed planner nodes behind a hash exchange. */
    static final String[] KEYED_KINDS = {
        "GroupAggregate", "GlobalGroupAggregate", "Deduplicate", "Rank", "ChangelogNormalize", "OverAggregate",
        "WindowAggregate", "GroupWindowAggregate", "IncrementalGroupAggregate"
    };
    static final String[] GLOBAL_KINDS = {"SortLimit", "Rank", "Limit", "GroupAggregate"};
    static final String[] JOIN_TYPES = {"InnerJoin", "LeftOuterJoin", "RightOuterJoin", "FullOuterJoin"};

    private final Compat c;
    private final Random r;
    public final List<String> program = new ArrayList<>();
    private StreamExecutionEnvironment env;
    private int envPar;
    private boolean plannerUids;
    private boolean simpleNames;
    private int plannerId;
    private int nodes;

    public LongChainGenerator(Compat compat, long caseSeed) {
        this.c = compat;
        this.r = new Random(caseSeed);
    }

    /** Number of stream nodes the program has (as built). */
    public int nodes() {
        return nodes;
    }

    // ------------------------------------------------------------------ helpers

    private boolean p(double prob) {
        return r.nextDouble() < prob;
    }

    private <T> T pick(T[] a) {
        return a[r.nextInt(a.length)];
    }

    private void log(String s) {
        program.add(s);
    }

    private static int id(DataStream<?> ds) {
        return ds.getId();
    }

    private String cols(int k) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < k; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            String col = pick(COLS);
            if (p(0.2)) {
                sb.append('(').append(col).append(" * ").append(1 + r.nextInt(9)).append(") AS EXPR$").append(i);
            } else {
                sb.append(col);
            }
        }
        return sb.toString();
    }

    /** The planner's node name: simplified "Kind[12]" or the full description. */
    private String name(String kind, int pid) {
        if (simpleNames) {
            return kind + "[" + pid + "]";
        }
        switch (kind) {
            case "Calc":
                return p(0.5)
                        ? "Calc(select=[" + cols(1 + r.nextInt(5)) + "])"
                        : "Calc(select=[" + cols(1 + r.nextInt(5)) + "], where=[(" + pick(COLS) + " > "
                                + r.nextInt(1000) + ")])";
            case "WatermarkAssigner":
                return "WatermarkAssigner(rowtime=[ts], watermark=[(ts - 5000:INTERVAL SECOND)])";
            case "ConstraintEnforcer":
                return "ConstraintEnforcer[NotNullEnforcer(fields=[" + pick(COLS) + "])]";
            case "Correlate":
                return "Correlate(invocation=[SPLIT($cor0." + pick(COLS) + ")], correlate=[table(SPLIT($cor0."
                        + pick(COLS) + "))], joinType=[INNER])";
            default:
                return kind + "(select=[" + cols(1 + r.nextInt(4)) + "])";
        }
    }

    private static String kebab(String kind) {
        return kind.replaceAll("([a-z])([A-Z])", "$1-$2").toLowerCase();
    }

    /** Planner id, name, parallelism and (sometimes) the planner's uid of a new operator. */
    private void mods(SingleOutputStreamOperator<Long> op, String kind, int par) {
        int pid = ++plannerId;
        String n = name(kind, pid);
        op.name(n);
        op.setParallelism(par);
        String pre = "#" + id(op);
        log(pre + ".name(" + n + ")");
        log(pre + ".setParallelism(" + par + ")");
        if (plannerUids) {
            String u = pid + "_stream-exec-" + kebab(kind) + "_1_" + kebab(kind).replace("-", "");
            op.uid(u);
            log(pre + ".uid(" + u + ")");
        }
        nodes++;
    }

    // ------------------------------------------------------------------ build

    /**
     * Builds the program whose longest chain has {@code longest} operators and returns its
     * StreamGraph.
     */
    public StreamGraph build(int longest) {
        Generator.resetFlinkCounters();
        env = c.createEnv(false);
        envPar = Generator.PARS[r.nextInt(Generator.PARS.length)];
        env.setParallelism(envPar);
        log("env.setParallelism(" + envPar + ")");
        if (p(0.1)) {
            int mp = new int[] {128, 256, 1024}[r.nextInt(3)];
            env.setMaxParallelism(mp);
            log("env.setMaxParallelism(" + mp + ")");
        }
        plannerUids = p(0.3);
        simpleNames = p(0.7);
        int runs = 2 + r.nextInt(5);
        int longAt = r.nextInt(runs + 1); // 0: the first source's run, k: the k-th run behind an exchange
        int other = Math.max(1, Math.min(longest / 4, 30)); // the other runs: 1..other operators
        log("long-chain runs=" + runs + " longest=" + longest + " at run " + longAt);

        // sources, each with a short run (or the long one) of chained steps behind it
        double x = r.nextDouble();
        int nSrc = x < 0.6 ? 1 : x < 0.85 ? 2 : 3;
        List<DataStream<Long>> srcs = new ArrayList<>();
        for (int s = 0; s < nSrc; s++) {
            boolean isLong = longAt == 0 && s == 0;
            srcs.add(sourceRun(isLong ? longest - 1 : 1 + r.nextInt(3)));
        }

        DataStream<Long> cur = srcs.get(0);
        for (int k = 1; k <= runs; k++) {
            boolean last = k == runs;
            boolean isLong = k == longAt;
            int len = isLong ? longest : 1 + r.nextInt(other);
            int par = p(0.75) ? envPar : Generator.PARS[r.nextInt(Generator.PARS.length)];
            SingleOutputStreamOperator<Long> head;
            if (k == 1 && srcs.size() > 1) {
                head = merge(srcs, par);
            } else {
                head = exchange(cur, par);
                par = head.getParallelism();
            }
            // the sink ends the last run's chain: it is one of the run's operators
            int steps = len - 1 - (last ? 1 : 0);
            boolean fork = !isLong && len + 3 < longest && p(0.15);
            int forkAt = fork ? r.nextInt(Math.max(1, steps + 1)) : -1;
            DataStream<Long> d = head;
            for (int i = 0; i < Math.max(0, steps); i++) {
                if (i == forkAt) {
                    sideInsert(d, par);
                }
                d = step(d, par);
            }
            if (forkAt >= Math.max(0, steps)) {
                sideInsert(d, par);
            }
            cur = d;
        }
        // the final INSERT: chained behind the last run (its own parallelism only if that run is not the long one)
        int sinkPar = longAt != runs && p(0.15) ? Generator.PARS[r.nextInt(Generator.PARS.length)] : -1;
        sink(cur, sinkPar > 0 ? sinkPar : parOf(cur));
        return env.getStreamGraph();
    }

    private int parOf(DataStream<Long> d) {
        int par = d.getParallelism();
        return par > 0 ? par : envPar;
    }

    /** A table source and {@code steps} chained steps behind it. */
    private DataStream<Long> sourceRun(int steps) {
        String table = pick(TABLES);
        int pid = ++plannerId;
        String n = simpleNames
                ? table + "[" + pid + "]"
                : "TableSourceScan(table=[[default_catalog, default_database, " + table + "]], fields=["
                        + cols(2 + r.nextInt(4)) + "])";
        int par = p(0.7) ? envPar : Generator.PARS[r.nextInt(Generator.PARS.length)];
        SingleOutputStreamOperator<Long> s;
        if (c.hasFlip27() && p(0.85)) {
            s = c.flip27Source(env, n);
            log("#" + id(s) + "=fromSource(NumberSequenceSource, " + n + ")");
        } else {
            s = Fns.legacySource(env, true, n);
            log("#" + id(s) + "=addSource(ParallelSourceFunction, " + n + ")");
        }
        s.setParallelism(par);
        log("#" + id(s) + ".setParallelism(" + par + ")");
        if (plannerUids) {
            String u = pid + "_stream-exec-table-source-scan_1_source";
            s.uid(u);
            log("#" + id(s) + ".uid(" + u + ")");
        }
        nodes++;
        DataStream<Long> d = s;
        for (int i = 0; i < steps; i++) {
            d = step(d, par);
        }
        return d;
    }

    /** One chainable step (parallelism {@code par}, forward from its input). */
    private SingleOutputStreamOperator<Long> step(DataStream<Long> in, int par) {
        String kind = pick(STEP_KINDS);
        SingleOutputStreamOperator<Long> op;
        String what;
        double x = r.nextDouble();
        boolean flat = kind.equals("Correlate") || kind.equals("Expand") || kind.equals("TableFunctionScan");
        if (!flat && x < 0.35) {
            op = c.transformOne(in, kind, "ALWAYS");
            what = "transform(" + kind + ", ALWAYS)";
        } else {
            what = flat ? "flatMap" : x < 0.65 ? "map" : x < 0.85 ? "filter" : "process";
            op = Fns.simple(in, what);
        }
        log("#" + id(op) + "=" + what);
        mods(op, kind, par);
        return op;
    }

    /** The exchange in front of a run and the run's head operator. */
    private SingleOutputStreamOperator<Long> exchange(DataStream<Long> in, int par) {
        double x = r.nextDouble();
        SingleOutputStreamOperator<Long> op;
        String kind;
        if (x < 0.55) {
            log("keyBy");
            KeyedStream<Long, Long> ks = in.keyBy(new Fns.KeySel());
            kind = pick(KEYED_KINDS);
            if (p(0.2)) {
                op = ks.reduce(new Fns.ReduceFn());
                log("#" + id(op) + "=reduce");
            } else {
                op = ks.process(new Fns.KeyedProcFn());
                log("#" + id(op) + "=keyed process");
            }
        } else if (x < 0.70) {
            log("rebalance");
            kind = "Calc";
            op = in.rebalance().map(new Fns.MapFn());
            log("#" + id(op) + "=map");
        } else if (x < 0.80) {
            log("global");
            kind = pick(GLOBAL_KINDS);
            op = in.global().process(new Fns.ProcFn());
            log("#" + id(op) + "=process");
            par = 1;
        } else {
            // a join with one more table (and its own short run)
            DataStream<Long> other = sourceRun(1 + r.nextInt(3));
            return join(in, other, par);
        }
        mods(op, kind, par);
        return op;
    }

    /** Keyed two-input join of two streams (hash exchanges on both sides). */
    private SingleOutputStreamOperator<Long> join(DataStream<Long> a, DataStream<Long> b, int par) {
        SingleOutputStreamOperator<Long> op;
        String kind;
        if (p(0.8)) {
            op = a.connect(b).keyBy(new Fns.KeySel(), new Fns.KeySel()).process(new Fns.KeyedCoProcFn());
            kind = "Join";
            log("#" + id(op) + "=keyed connect.process");
        } else {
            op = a.keyBy(new Fns.KeySel()).connect(b.keyBy(new Fns.KeySel())).process(new Fns.KeyedCoProcFn());
            kind = "IntervalJoin";
            log("#" + id(op) + "=keyBy.connect(keyBy).process");
        }
        mods(op, kind, par);
        if (!simpleNames) {
            String n = kind + "(joinType=[" + pick(JOIN_TYPES) + "], where=[(" + pick(COLS) + " = " + pick(COLS)
                    + "0)], select=[" + cols(2 + r.nextInt(4)) + "])";
            op.name(n);
            log("#" + id(op) + ".name(" + n + ")");
        }
        return op;
    }

    /** Several sources into the first run: UNION ALL (head = a step on the union) or joins. */
    private SingleOutputStreamOperator<Long> merge(List<DataStream<Long>> srcs, int par) {
        if (p(0.5)) {
            @SuppressWarnings("unchecked")
            DataStream<Long>[] rest = srcs.subList(1, srcs.size()).toArray(new DataStream[0]);
            DataStream<Long> u = srcs.get(0).union(rest);
            log("union of " + srcs.size());
            return step(u, par);
        }
        DataStream<Long> a = srcs.get(0);
        for (int i = 1; i < srcs.size() - 1; i++) {
            a = join(a, srcs.get(i), par);
        }
        return join(a, srcs.get(srcs.size() - 1), par);
    }

    /** A second INSERT forking off a run: 1-2 chained steps and a sink, all in the run's chain. */
    private void sideInsert(DataStream<Long> from, int par) {
        log("fork");
        DataStream<Long> d = from;
        int k = 1 + r.nextInt(2);
        for (int i = 0; i < k; i++) {
            d = step(d, par);
        }
        sink(d, par);
    }

    private void sink(DataStream<Long> in, int par) {
        List<String> kinds = c.sinkV2Kinds();
        DataStreamSink<Long> s;
        String what;
        double x = r.nextDouble();
        if (x < 0.4 && kinds.contains("plain")) {
            s = c.sinkV2(in, "plain");
            what = "sinkTo(plain)";
        } else if (x < 0.55 && kinds.contains("DiscardingSink")) {
            s = c.sinkV2(in, "DiscardingSink");
            what = "sinkTo(DiscardingSink)";
        } else if (x < 0.7) {
            s = in.print();
            what = "print";
        } else {
            s = Fns.legacySink(in);
            what = "addSink";
        }
        log(what);
        String pre = "#" + s.getTransformation().getId();
        int pid = ++plannerId;
        String table = pick(TABLES) + "_out";
        String n = simpleNames
                ? table + "[" + pid + "]"
                : "Sink(table=[default_catalog.default_database." + table + "], fields=[" + cols(2 + r.nextInt(4))
                        + "])";
        s.name(n);
        s.setParallelism(par);
        log(pre + ".name(" + n + ")");
        log(pre + ".setParallelism(" + par + ")");
        if (plannerUids) {
            String u = pid + "_stream-exec-sink_1_" + (p(0.5) ? "sink" : "writer");
            s.uid(u);
            log(pre + ".uid(" + u + ")");
        }
        nodes++;
    }

    /** Operators in the largest job vertex of Flink's answer (0 for an error). */
    @SuppressWarnings("unchecked")
    public static int longestChain(Map<String, Object> expected) {
        Object ops = expected.get("operators");
        if (!(ops instanceof Map)) {
            return 0;
        }
        Map<Object, Integer> per = new HashMap<>();
        int best = 0;
        for (Object o : ((Map<String, Object>) ops).values()) {
            Object v = ((Map<String, Object>) o).get("jobvertex_id");
            int n = per.merge(v, 1, Integer::sum);
            best = Math.max(best, n);
        }
        return best;
    }
}
