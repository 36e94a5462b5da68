package org.flinkjobgraph.harness;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.AsyncDataStream;
import org.apache.flink.streaming.api.datastream.ConnectedStreams;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.transformations.PartitionTransformation;
import org.apache.flink.streaming.runtime.partitioner.BroadcastPartitioner;
import org.apache.flink.streaming.runtime.partitioner.ForwardPartitioner;
import org.apache.flink.streaming.runtime.partitioner.GlobalPartitioner;
import org.apache.flink.streaming.runtime.partitioner.RebalancePartitioner;
import org.apache.flink.streaming.runtime.partitioner.RescalePartitioner;
import org.apache.flink.streaming.runtime.partitioner.ShufflePartitioner;
import org.apache.flink.streaming.runtime.partitioner.StreamPartitioner;
import org.apache.flink.util.OutputTag;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Builds one random DataStream program from a seed with the real Flink API and returns its
 * StreamGraph (the program is never executed). {@link #program} lists the API calls made.
 */
public final class Generator {

    static final String[] OP_NAMES = {
        "Parse", "Enrich", "Filter", "Map", "Aggregate", "Window Agg", "Sessionize", "Split",
        "Decode", "Normalize", "Lookup", "Metrics", "Audit", "Route", "Score", "Validate",
        "Format", "Top-N", "Dedup", "Geo IP", "Fraud Check", "Filter Bots", "to JSON",
        "Join [left]", "Process", "a -> b", "x, y", "op (1)", "名字", "Ünïcödé step", "Flat Map"
    };
    static final String[] SOURCE_NAMES = {
        "Kafka Source", "Clicks", "Orders", "Users CDC", "Events", "Files", "Sequence"
    };
    static final String[] SINK_NAMES = {"Kafka Sink", "Elastic", "Files", "Print", "out", "Audit Sink"};
    static final String[] UID_PREFIX = {"uid-", "op_", "orders-", "v2/", "Step ", ""};
    static final String[] SSG = {"default", "ssg-a", "ssg-b", "io"};
    static final int[] PARS = {1, 2, 2, 3, 4, 4, 8};
    static final int[] MAX_PARS = {8, 16, 128, 256, 1024, 32768};
    /** H.par of a union of streams of different parallelisms. */
    static final int MIXED = -2;

    /** One stream the program can consume further. */
    static final class H {
        DataStream<Long> ds;
        int par; // effective parallelism, -1 = default (BATCH programs), MIXED = union of different ones
        boolean flip27Source;
        boolean legacySource;
        SingleOutputStreamOperator<Long> op; // for side outputs
        int uses;
        int sides;
        boolean isSource;

        H(DataStream<Long> ds, int par) {
            this.ds = ds;
            this.par = par;
        }
    }

    private final Compat c;
    private final Random r;
    public final List<String> program = new ArrayList<>();
    private StreamExecutionEnvironment env;
    private int envPar;
    private int envMaxPar = -1;
    private final List<H> pool = new ArrayList<>();
    private final Set<String> uids = new HashSet<>();
    private int counter;
    private int nodes;
    private boolean allowHybrid;
    /** A BATCH program (execution.runtime-mode=BATCH): bounded sources only, no iterations. */
    private final boolean batch;

    public Generator(Compat compat, long caseSeed) {
        this(compat, caseSeed, false);
    }

    public Generator(Compat compat, long caseSeed, boolean batch) {
        this.c = compat;
        this.r = new Random(caseSeed);
        this.batch = batch;
    }

    // ------------------------------------------------------------------ helpers

    private boolean p(double prob) {
        return r.nextDouble() < prob;
    }

    private <T> T pick(T[] a) {
        return a[r.nextInt(a.length)];
    }

    private <T> T pick(List<T> a) {
        return a.get(r.nextInt(a.size()));
    }

    private int pickInt(int[] a) {
        return a[r.nextInt(a.length)];
    }

    private String opName() {
        String n = pick(OP_NAMES);
        return p(0.3) ? n + "-" + (counter++) : n;
    }

    private String uid() {
        String u;
        do {
            u = pick(UID_PREFIX) + (counter++);
        } while (!uids.add(u));
        return u;
    }

    private String uidHash() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 32; i++) {
            sb.append("0123456789abcdef".charAt(r.nextInt(16)));
        }
        String h = sb.toString();
        return p(0.5) ? h.toUpperCase() : h;
    }

    private static int id(DataStream<?> ds) {
        return ds.getId();
    }

    private int effPar(int explicit) {
        return explicit > 0 ? explicit : envPar;
    }

    private void log(String s) {
        program.add(s);
    }

    /**
     * Optional settings of one node: each is drawn with its probability, applied and logged as
     * {@code <pre>.<method>(<value>)} ({@code pre} = "#<transformation id>").
     */
    private final class Settings {
        final String pre;

        Settings(String pre) {
            this.pre = pre;
        }

        /** With probability {@code prob}: a value drawn, applied and logged; else null (nothing drawn). */
        <T> T maybe(double prob, String method, Supplier<T> draw, Consumer<T> apply) {
            if (!p(prob)) {
                return null;
            }
            T v = draw.get();
            apply.accept(v);
            log(pre + "." + method + "(" + v + ")");
            return v;
        }

        /** With probability {@code prob}: a call without arguments, logged. Whether it was made. */
        boolean maybe(double prob, String method, Runnable apply) {
            if (!p(prob)) {
                return false;
            }
            apply.run();
            log(pre + "." + method + "()");
            return true;
        }
    }

    // ------------------------------------------------------------------ build

    /**
     * Resets Flink's static id counters (Transformation ids, 1.x iteration ids) so that node ids
     * start at 1 for every program and a case does not depend on the programs built before it
     * in the same JVM.
     */
    public static void resetFlinkCounters() {
        setStatic("org.apache.flink.api.dag.Transformation", "ID_COUNTER");
        setStatic("org.apache.flink.api.dag.Transformation", "idCounter");
        setStatic("org.apache.flink.streaming.api.transformations.StreamTransformation", "idCounter");
        setStatic("org.apache.flink.streaming.api.graph.StreamGraphGenerator", "iterationIdCounter");
    }

    private static void setStatic(String cls, String field) {
        try {
            java.lang.reflect.Field f = Class.forName(cls).getDeclaredField(field);
            f.setAccessible(true);
            Object v = f.get(null);
            if (v instanceof java.util.concurrent.atomic.AtomicInteger) {
                ((java.util.concurrent.atomic.AtomicInteger) v).set(0);
            } else {
                f.set(null, 0);
            }
        } catch (ClassNotFoundException | NoSuchFieldException e) {
            // not in this version
        } catch (ReflectiveOperationException e) {
            throw new RuntimeException("cannot reset " + cls + "." + field, e);
        }
    }

    /** Builds the program and returns its StreamGraph (throws if Flink rejects the program). */
    public StreamGraph build(int targetSize) {
        resetFlinkCounters();
        boolean noDiffMax = c.hasChainMaxParallelismOption() && p(0.09);
        allowHybrid = p(0.06);
        java.util.Map<String, String> conf = new java.util.TreeMap<>();
        if (batch) {
            batchConf(conf);
        }
        env = c.createEnv(noDiffMax, conf);
        if (noDiffMax) {
            log("conf chain-operators-with-different-max-parallelism=false");
        }
        envPar = pickInt(PARS);
        if (batch && p(0.4)) {
            envPar = -1; // parallelism.default unset: every node without its own parallelism has -1
        }
        env.setParallelism(envPar);
        log("env.setParallelism(" + envPar + ")");
        if (p(0.07)) {
            envMaxPar = pickInt(new int[] {128, 256, 1024});
            env.setMaxParallelism(envMaxPar);
            log("env.setMaxParallelism(" + envMaxPar + ")");
        }
        if (p(0.02)) {
            env.disableOperatorChaining();
            log("env.disableOperatorChaining()");
        }
        int initial = 1 + r.nextInt(Math.max(1, Math.min(6, targetSize / 6)));
        for (int i = 0; i < initial && nodes < targetSize; i++) {
            newSource();
        }
        int guard = 0;
        while (nodes < targetSize && guard++ < targetSize * 20) {
            step(targetSize);
        }
        finish();
        return env.getStreamGraph();
    }

    /**
     * The configuration of a BATCH program (SqlGenerator's too): runtime mode BATCH; the scheduler
     * is Flink's default for batch (the adaptive batch scheduler: a dynamic graph) or, in a quarter
     * of the programs, the default scheduler (a static graph); automatic parallelism is sometimes
     * switched off.
     */
    static void batchSettings(Random r, java.util.Map<String, String> conf) {
        conf.put("execution.runtime-mode", "BATCH");
        double x = r.nextDouble();
        if (x < 0.25) {
            conf.put("jobmanager.scheduler", "Default");
        } else if (x < 0.45) {
            // the default for BATCH from 1.17 on; 1.15/1.16 need it set for a dynamic graph
            conf.put("jobmanager.scheduler", "AdaptiveBatch");
        }
        if (r.nextDouble() < 0.2) {
            conf.put("execution.batch.adaptive.auto-parallelism.enabled", "false");
        }
    }

    /** batchSettings, hybrid exchanges sometimes allowed, and the configuration in the program log. */
    private void batchConf(java.util.Map<String, String> conf) {
        batchSettings(r, conf);
        if (p(0.15)) {
            allowHybrid = true; // hybrid exchanges are allowed in BATCH jobs
        }
        for (java.util.Map.Entry<String, String> e : conf.entrySet()) {
            log("conf " + e.getKey() + "=" + e.getValue());
        }
    }

    private void step(int targetSize) {
        if (pool.isEmpty()) {
            newSource();
            return;
        }
        double x = r.nextDouble();
        if ((x -= 0.05) < 0) {
            newSource();
        } else if ((x -= 0.30) < 0) {
            simpleOp(pickInput(), true);
        } else if ((x -= 0.10) < 0) {
            keyed(pickInput());
        } else if ((x -= 0.05) < 0) {
            async(p(0.3) ? pickLegacySourceOrInput() : pickInput());
        } else if ((x -= 0.05) < 0) {
            transformOne(pickInput());
        } else if ((x -= 0.06) < 0) {
            union();
        } else if ((x -= 0.07) < 0) {
            connect();
        } else if ((x -= 0.03) < 0 && c.hasMultipleInput()) {
            multipleInput();
        } else if ((x -= 0.02) < 0 && c.hasFlip27()) {
            transformOnSource();
        } else if ((x -= 0.07) < 0) {
            sideOutputs();
        } else if ((x -= 0.05) < 0) {
            fanOut();
        } else if ((x -= 0.015) < 0 && c.hasIterations() && !batch) {
            iterate();
        } else if ((x -= 0.07) < 0) {
            sink(pickInput());
        } else {
            simpleOp(pickInput(), true);
        }
    }

    /** Mostly the newest unconsumed stream (deep chains), sometimes an older one (fan-out). */
    private H pickInput() {
        List<H> unused = new ArrayList<>();
        for (H h : pool) {
            if (h.uses == 0) {
                unused.add(h);
            }
        }
        H h;
        if (!unused.isEmpty() && p(0.6)) {
            h = unused.get(unused.size() - 1);
        } else if (!unused.isEmpty() && p(0.6)) {
            h = pick(unused);
        } else {
            h = pick(pool);
        }
        h.uses++;
        return h;
    }

    private H pickLegacySourceOrInput() {
        if (batch) {
            return pickInput(); // legacy SourceFunctions are unbounded: BATCH rejects them
        }
        for (int i = pool.size() - 1; i >= 0; i--) {
            H h = pool.get(i);
            if (h.legacySource && h.uses == 0) {
                h.uses++;
                return h;
            }
        }
        if (p(0.5)) {
            H h = legacySourceHandle();
            h.uses++;
            return h;
        }
        return pickInput();
    }

    private H add(H h) {
        pool.add(h);
        return h;
    }

    // ------------------------------------------------------------------ sources

    private H newSource() {
        double x = r.nextDouble();
        if (!c.hasFlip27()) {
            // legacy only: addSource 60%, fromElements 20%, (legacy) sequence 20%
            x = x < 0.6 ? x * 0.35 / 0.6 : x < 0.8 ? 0.4 : 0.9;
        }
        if (x < 0.35 && batch) {
            // legacy SourceFunctions are unbounded, which BATCH rejects; a FLIP-27 source instead
            return flip27Handle(pick(SOURCE_NAMES), -1);
        } else if (x < 0.35) {
            return legacySourceHandle();
        } else if (x < 0.45) {
            SingleOutputStreamOperator<Long> s = c.legacyCollectionSource(env);
            log("#" + id(s) + "=fromElements");
            nodes++;
            H h = new H(s, 1);
            h.legacySource = true;
            h.isSource = true;
            h.op = s;
            sourceMods(s, h, false);
            return add(h);
        } else if (x < 0.85) {
            return flip27Handle(pick(SOURCE_NAMES) + (p(0.3) ? "-" + (counter++) : ""), -1);
        } else {
            SingleOutputStreamOperator<Long> s = c.fromSequence(env);
            log("#" + id(s) + "=fromSequence");
            nodes++;
            H h = new H(s, envPar);
            h.flip27Source = c.hasFlip27();
            h.legacySource = !c.hasFlip27();
            h.isSource = true;
            h.op = s;
            sourceMods(s, h, true);
            return add(h);
        }
    }

    private H legacySourceHandle() {
        boolean parallel = p(0.45);
        String name = p(0.4) ? pick(SOURCE_NAMES) + (p(0.3) ? "-" + (counter++) : "") : null;
        SingleOutputStreamOperator<Long> s = Fns.legacySource(env, parallel, name);
        log("#" + id(s) + "=addSource(" + (parallel ? "ParallelSourceFunction" : "SourceFunction")
                + ", " + name + ")");
        nodes++;
        H h = new H(s, parallel ? envPar : 1);
        h.legacySource = true;
        h.isSource = true;
        h.op = s;
        sourceMods(s, h, parallel);
        return add(h);
    }

    /** A FLIP-27 source; {@code forcedPar} > 0 fixes its parallelism. */
    private H flip27Handle(String name, int forcedPar) {
        SingleOutputStreamOperator<Long> s = c.flip27Source(env, name);
        log("#" + id(s) + "=fromSource(NumberSequenceSource, " + name + ")");
        nodes++;
        H h = new H(s, envPar);
        h.flip27Source = true;
        h.isSource = true;
        h.op = s;
        if (forcedPar > 0) {
            s.setParallelism(forcedPar);
            log("#" + id(s) + ".setParallelism(" + forcedPar + ")");
            h.par = forcedPar;
            Settings set = new Settings("#" + id(s));
            set.maybe(0.5, "uid", this::uid, s::uid);
            set.maybe(0.1, "setUidHash", this::uidHash, s::setUidHash);
        } else {
            sourceMods(s, h, true);
        }
        return add(h);
    }

    private void sourceMods(SingleOutputStreamOperator<Long> s, H h, boolean parallel) {
        Settings set = new Settings("#" + id(s));
        Integer par = parallel ? set.maybe(0.3, "setParallelism", () -> pickInt(PARS), s::setParallelism) : null;
        if (par != null) {
            h.par = par;
        }
        set.maybe(0.05, "setMaxParallelism", () -> pickInt(MAX_PARS), s::setMaxParallelism);
        set.maybe(0.04, "slotSharingGroup", () -> pick(SSG), s::slotSharingGroup);
        set.maybe(0.5, "uid", this::uid, s::uid);
        set.maybe(0.07, "setUidHash", this::uidHash, s::setUidHash);
        set.maybe(0.06, "disableChaining", s::disableChaining);
    }

    // ------------------------------------------------------------------ operators

    /** Random partitioning in front of a one-input operator. Returns the stream and whether the
     * operator's parallelism is locked to the input's (explicit FORWARD). */
    private DataStream<Long> maybePartition(H in, boolean[] locked, double prob) {
        locked[0] = false;
        if (!p(prob)) {
            return in.ds;
        }
        int slot = slot(r.nextDouble(), EXCHANGE_WEIGHTS);
        DataStream<Long> ds = in.ds;
        if (slot >= 0) {
            String how = EXCHANGES[slot].equals("forward") && in.par == MIXED ? "rebalance" : EXCHANGES[slot];
            locked[0] = how.equals("forward");
            return exchange(ds, how);
        } else if (!exchangeModes().isEmpty()) {
            String[] parts = {"FORWARD", "REBALANCE", "RESCALE", "SHUFFLE", "BROADCAST", "GLOBAL"};
            String part = pick(parts);
            if (part.equals("FORWARD") && in.par == MIXED) {
                part = "REBALANCE";
            }
            List<String> modes = exchangeModes();
            String mode = pick(modes);
            // keep the rejected HYBRID modes (streaming jobs) to a few percent of the programs
            if (mode.startsWith("HYBRID") && !allowHybrid) {
                mode = modes.get(0);
            }
            log("PartitionTransformation(" + part + ", " + mode + ")");
            locked[0] = part.equals("FORWARD");
            return partition(ds, part, mode);
        } else {
            return exchange(ds, "rebalance");
        }
    }

    /** maybePartition's exchanges and their probabilities (the rest: an explicit PartitionTransformation). */
    private static final String[] EXCHANGES = {
        "rebalance", "rescale", "shuffle", "broadcast", "global", "forward", "partitionCustom"
    };
    private static final double[] EXCHANGE_WEIGHTS = {0.30, 0.15, 0.12, 0.06, 0.06, 0.10, 0.11};

    /** The slot of {@code weights} a draw {@code x} falls in (the weights taken off in turn), -1 past them all. */
    private static int slot(double x, double[] weights) {
        for (int i = 0; i < weights.length; i++) {
            if ((x -= weights[i]) < 0) {
                return i;
            }
        }
        return -1;
    }

    /** The exchange named (a DataStream method: rebalance, rescale, ..., partitionCustom), logged. */
    private DataStream<Long> exchange(DataStream<Long> ds, String how) {
        log(how);
        switch (how) {
            case "rebalance": return ds.rebalance();
            case "rescale": return ds.rescale();
            case "shuffle": return ds.shuffle();
            case "broadcast": return ds.broadcast();
            case "global": return ds.global();
            case "forward": return ds.forward();
            case "partitionCustom": return ds.partitionCustom(new Fns.PartFn(), new Fns.KeySel());
            default: throw new IllegalArgumentException(how);
        }
    }

    /** The exchange modes of the line's PartitionTransformation (ExchangeModes) but UNDEFINED. */
    static List<String> exchangeModes() {
        List<String> out = new ArrayList<>();
        for (Enum<?> m : ExchangeModes.type().getEnumConstants()) {
            if (!m.name().equals("UNDEFINED")) {
                out.add(m.name());
            }
        }
        return out;
    }

    /** An explicit PartitionTransformation: the partitioner named, the line's exchange mode named. */
    static DataStream<Long> partition(DataStream<Long> in, String partitioner, String exchangeMode) {
        StreamPartitioner<Long> p;
        switch (partitioner) {
            case "FORWARD": p = new ForwardPartitioner<>(); break;
            case "REBALANCE": p = new RebalancePartitioner<>(); break;
            case "RESCALE": p = new RescalePartitioner<>(); break;
            case "SHUFFLE": p = new ShufflePartitioner<>(); break;
            case "BROADCAST": p = new BroadcastPartitioner<>(); break;
            case "GLOBAL": p = new GlobalPartitioner<>(); break;
            default: throw new IllegalArgumentException(partitioner);
        }
        return new DataStream<>(
                in.getExecutionEnvironment(),
                new PartitionTransformation<>(in.getTransformation(), p, Enum.valueOf(ExchangeModes.type(), exchangeMode)));
    }

    /** name/uid/parallelism/... on a freshly created operator. Returns the effective parallelism. */
    private int opMods(SingleOutputStreamOperator<Long> op, int par, boolean locked) {
        Settings set = new Settings("#" + id(op));
        set.maybe(0.45, "name", this::opName, op::name);
        Integer own = locked ? null : set.maybe(0.28, "setParallelism", () -> pickInt(PARS), op::setParallelism);
        set.maybe(0.08, "setMaxParallelism", () -> pickInt(MAX_PARS), op::setMaxParallelism);
        set.maybe(0.045, "slotSharingGroup", () -> pick(SSG), op::slotSharingGroup);
        set.maybe(0.5, "uid", this::uid, op::uid);
        set.maybe(0.07, "setUidHash", this::uidHash, op::setUidHash);
        if (!set.maybe(0.05, "disableChaining", op::disableChaining)) {
            set.maybe(0.04, "startNewChain", op::startNewChain);
        }
        if (!locked && set.maybe(0.012, "forceNonParallel", op::forceNonParallel)) {
            return 1;
        }
        return own != null ? own : par;
    }

    private H opHandle(SingleOutputStreamOperator<Long> op, int inPar, boolean locked) {
        nodes++;
        if (locked && inPar != envPar) {
            op.setParallelism(inPar);
            log("#" + id(op) + ".setParallelism(" + inPar + ")");
        }
        int par = opMods(op, locked ? inPar : envPar, locked);
        H h = new H(op, par);
        h.op = op;
        return add(h);
    }

    private H simpleOp(H in, boolean allowPartition) {
        boolean[] locked = new boolean[1];
        DataStream<Long> ds = allowPartition ? maybePartition(in, locked, 0.28) : in.ds;
        double x = r.nextDouble();
        String what = x < 0.40 ? "map" : x < 0.60 ? "filter" : x < 0.78 ? "flatMap" : "process";
        SingleOutputStreamOperator<Long> op = Fns.simple(ds, what);
        log("#" + id(op) + "=" + what);
        return opHandle(op, in.par, locked[0]);
    }

    private void keyed(H in) {
        log("keyBy");
        KeyedStream<Long, Long> ks = in.ds.keyBy(new Fns.KeySel());
        SingleOutputStreamOperator<Long> op;
        double x = r.nextDouble();
        String what;
        if (x < 0.25) {
            op = ks.reduce(new Fns.ReduceFn());
            what = "reduce";
        } else if (x < 0.40) {
            op = ks.sum(0);
            what = "sum(0)";
        } else if (x < 0.70) {
            op = ks.process(new Fns.KeyedProcFn());
            what = "keyed process";
        } else if (x < 0.85) {
            op = ks.countWindow(1 + r.nextInt(100)).reduce(new Fns.ReduceFn());
            what = "countWindow.reduce";
        } else {
            op = ks.map(new Fns.MapFn());
            what = "keyed map";
        }
        log("#" + id(op) + "=" + what);
        opHandle(op, in.par, false);
    }

    private void async(H in) {
        boolean[] locked = new boolean[1];
        DataStream<Long> ds = maybePartition(in, locked, 0.15);
        SingleOutputStreamOperator<Long> op;
        if (p(0.5)) {
            op = AsyncDataStream.unorderedWait(ds, new Fns.AsyncFn(), 1000, TimeUnit.MILLISECONDS);
        } else if (p(0.5)) {
            op = AsyncDataStream.orderedWait(ds, new Fns.AsyncFn(), 1000, TimeUnit.MILLISECONDS);
        } else {
            op = AsyncDataStream.unorderedWait(
                    ds, new Fns.AsyncFn(), 1000, TimeUnit.MILLISECONDS, 1 + r.nextInt(100));
        }
        log("#" + id(op) + "=async");
        opHandle(op, in.par, locked[0]);
    }

    private String strategy() {
        List<String> s = c.chainingStrategies();
        double x = r.nextDouble();
        if (x < 0.40 || s.size() == 1) {
            return "ALWAYS";
        } else if (x < 0.65) {
            return "HEAD";
        } else if (x < 0.85) {
            return "NEVER";
        }
        return s.contains("HEAD_WITH_SOURCES") ? "HEAD_WITH_SOURCES" : "HEAD";
    }

    private void transformOne(H in) {
        boolean[] locked = new boolean[1];
        DataStream<Long> ds = maybePartition(in, locked, 0.2);
        String name = opName();
        String st = strategy();
        SingleOutputStreamOperator<Long> op = c.transformOne(ds, name, st);
        log("#" + id(op) + "=transform(" + name + ", " + st + ")");
        opHandle(op, in.par, locked[0]);
    }

    /** A one-input HEAD_WITH_SOURCES operator directly behind a FLIP-27 source. */
    private void transformOnSource() {
        H src = flip27Handle(pick(SOURCE_NAMES), p(0.8) ? envPar : pickInt(PARS));
        src.uses++;
        String name = opName();
        SingleOutputStreamOperator<Long> op = c.transformOne(src.ds, name, "HEAD_WITH_SOURCES");
        log("#" + id(op) + "=transform(" + name + ", HEAD_WITH_SOURCES) on source");
        if (p(0.85) && src.par > 0) {
            op.setParallelism(src.par);
            log("#" + id(op) + ".setParallelism(" + src.par + ")");
        }
        nodes++;
        H h = new H(op, p(0.85) ? src.par : envPar);
        h.par = op.getParallelism() > 0 ? op.getParallelism() : envPar;
        h.op = op;
        new Settings("#" + id(op)).maybe(0.4, "uid", this::uid, op::uid);
        add(h);
    }

    private List<H> distinctInputs(int k) {
        List<H> out = new ArrayList<>();
        List<H> cand = new ArrayList<>();
        for (H h : pool) {
            if (h.uses == 0) {
                cand.add(h);
            }
        }
        while (out.size() < k && !cand.isEmpty()) {
            H h = cand.remove(cand.size() - 1 - (p(0.5) ? 0 : r.nextInt(cand.size())));
            out.add(h);
        }
        while (out.size() < k) {
            H h = p(0.5) && !pool.isEmpty() ? pick(pool) : newSource();
            if (!out.contains(h)) {
                out.add(h);
            } else {
                out.add(newSource());
            }
        }
        for (H h : out) {
            h.uses++;
        }
        return out;
    }

    private void union() {
        int k = 2 + r.nextInt(4);
        List<H> ins = distinctInputs(k);
        List<DataStream<Long>> streams = new ArrayList<>();
        int par = ins.get(0).par;
        for (H h : ins) {
            boolean[] locked = new boolean[1];
            DataStream<Long> ds = p(0.2) ? maybePartitionNoForward(h) : h.ds;
            streams.add(ds);
            if (h.par != par) {
                par = MIXED;
            }
        }
        @SuppressWarnings("unchecked")
        DataStream<Long>[] rest = streams.subList(1, streams.size()).toArray(new DataStream[0]);
        DataStream<Long> u = streams.get(0).union(rest);
        log("union of " + k);
        H h = new H(u, par);
        add(h);
        if (p(0.6)) {
            h.uses++;
            if (p(0.15)) {
                sink(h);
            } else {
                simpleOp(h, true);
            }
        }
    }

    private DataStream<Long> maybePartitionNoForward(H h) {
        double x = r.nextDouble();
        return exchange(h.ds, x < 0.4 ? "rebalance" : x < 0.6 ? "rescale" : x < 0.8 ? "shuffle" : x < 0.9 ? "broadcast" : "partitionCustom");
    }

    private void connect() {
        List<H> ins = distinctInputs(2);
        DataStream<Long> a = p(0.15) ? maybePartitionNoForward(ins.get(0)) : ins.get(0).ds;
        DataStream<Long> b = p(0.25) ? maybePartitionNoForward(ins.get(1)) : ins.get(1).ds;
        double x = r.nextDouble();
        SingleOutputStreamOperator<Long> op;
        String what;
        if (x < 0.22) {
            op = a.connect(b).map(new Fns.CoMapFn());
            what = "connect.map";
        } else if (x < 0.36) {
            op = a.connect(b).flatMap(new Fns.CoFlatMapFn());
            what = "connect.flatMap";
        } else if (x < 0.52) {
            op = a.connect(b).process(new Fns.CoProcFn());
            what = "connect.process";
        } else if (x < 0.66) {
            String name = opName();
            String st = strategy();
            ConnectedStreams<Long, Long> cs = a.connect(b);
            op = c.transformTwo(cs, name, st);
            what = "connect.transform(" + name + ", " + st + ")";
        } else if (x < 0.80) {
            op = a.connect(b).keyBy(new Fns.KeySel(), new Fns.KeySel()).process(new Fns.KeyedCoProcFn());
            what = "keyed connect.process";
        } else if (x < 0.90) {
            op = a.connect(b.broadcast(Fns.bcastDescriptor())).process(new Fns.BcastFn());
            what = "broadcast connect";
        } else {
            op = a.keyBy(new Fns.KeySel())
                    .connect(b.broadcast(Fns.bcastDescriptor()))
                    .process(new Fns.KeyedBcastFn());
            what = "keyed broadcast connect";
        }
        log("#" + id(op) + "=" + what);
        opHandle(op, envPar, false);
    }

    private void multipleInput() {
        int n = 2 + r.nextInt(3);
        String st = strategy();
        if (p(0.35)) {
            st = c.chainingStrategies().contains("HEAD_WITH_SOURCES") ? "HEAD_WITH_SOURCES" : st;
        }
        int par = p(0.5) ? envPar : pickInt(PARS);
        List<DataStream<Long>> inputs = new ArrayList<>();
        int fromSources = st.equals("HEAD_WITH_SOURCES") ? 1 + r.nextInt(n) : (p(0.3) ? 1 : 0);
        int fromPool = n - fromSources;
        for (H h : distinctInputsMaybe(fromPool)) {
            inputs.add(p(0.4) ? maybePartitionNoForward(h) : h.ds);
        }
        for (int i = 0; i < fromSources; i++) {
            H s = flip27Handle(pick(SOURCE_NAMES) + (p(0.2) ? "-" + (counter++) : ""),
                    p(0.8) ? par : pickInt(PARS));
            s.uses++;
            new Settings("#" + id(s.ds)).maybe(0.1, "slotSharingGroup", () -> pick(SSG), s.op::slotSharingGroup);
            inputs.add(inputs.isEmpty() || p(0.5) ? inputs.size() : r.nextInt(inputs.size()), s.ds);
        }
        String name = opName();
        String u = null;
        String hh = null;
        if (p(0.3)) {
            u = uid();
            log("multi.uid(" + u + ")");
        }
        if (p(0.07)) {
            hh = uidHash();
            log("multi.setUidHash(" + hh + ")");
        }
        SingleOutputStreamOperator<Long> op = c.multipleInput(env, inputs, name, st, par);
        if (u != null) {
            op.uid(u);
        }
        if (hh != null) {
            op.setUidHash(hh);
        }
        log("#" + id(op) + "=MultipleInputTransformation(" + name + ", " + st + ", n=" + n
                + ", p=" + par + ")");
        nodes++;
        H h = new H(op, par);
        h.op = op;
        add(h);
    }

    private List<H> distinctInputsMaybe(int k) {
        return k <= 0 ? new ArrayList<>() : distinctInputs(k);
    }

    private void sideOutputs() {
        List<H> ops = new ArrayList<>();
        for (H h : pool) {
            if (h.op != null && h.sides == 0 && !h.isSource) {
                ops.add(h);
            }
        }
        if (ops.isEmpty()) {
            H in = pickInput();
            boolean[] locked = new boolean[1];
            SingleOutputStreamOperator<Long> op = in.ds.process(new Fns.ProcFn());
            log("#" + id(op) + "=process");
            ops.add(opHandle(op, in.par, false));
        }
        H parent = p(0.5) ? ops.get(ops.size() - 1) : pick(ops);
        int k = 1 + r.nextInt(3);
        boolean late = false;
        for (int i = 0; i < k; i++) {
            String tag;
            if (!late && p(0.25)) {
                tag = "side-late";
                late = true;
            } else {
                tag = "side-" + (counter++);
            }
            DataStream<Long> side = parent.op.getSideOutput(new OutputTag<>(tag, Types.LONG));
            log("getSideOutput(" + tag + ") of #" + id(parent.op));
            add(new H(side, parent.par));
        }
        parent.sides = k;
    }

    private void fanOut() {
        H in = pickInput();
        int k = 2 + r.nextInt(3);
        log("fanOut x" + k);
        for (int i = 0; i < k; i++) {
            if (i > 0) {
                in.uses++;
            }
            if (p(0.2)) {
                sink(in);
            } else {
                simpleOp(in, p(0.5));
            }
        }
    }

    private void iterate() {
        H in = pickInput();
        if (in.par == MIXED) {
            simpleOp(in, true);
            return;
        }
        DataStream<Long> head = c.iterate(in.ds);
        log("iterate on #" + id(in.ds));
        SingleOutputStreamOperator<Long> body = head.map(new Fns.MapFn());
        body.setParallelism(in.par);
        log("#" + id(body) + "=map");
        SingleOutputStreamOperator<Long> fb = body.filter(new Fns.FilterFn());
        fb.setParallelism(in.par);
        log("#" + id(fb) + "=filter");
        c.closeWith(head, fb);
        log("closeWith(#" + id(fb) + ")");
        nodes += 4;
        H h = new H(body, in.par);
        h.op = body;
        add(h);
    }

    // ------------------------------------------------------------------ sinks

    private void sink(H in) {
        boolean[] locked = new boolean[1];
        DataStream<Long> ds = maybePartition(in, locked, 0.12);
        DataStreamSink<Long> s;
        double x = r.nextDouble();
        List<String> kinds = c.sinkV2Kinds();
        String what;
        if (x < 0.25) {
            s = ds.print();
            what = "print";
            nodes++;
        } else if (x < 0.5 || kinds.isEmpty()) {
            s = Fns.legacySink(ds);
            what = "addSink";
            nodes++;
        } else {
            String k = pick(kinds);
            s = c.sinkV2(ds, k);
            what = "sinkTo(" + k + ")";
            nodes += k.equals("full topology") ? 4 : k.equals("plain") || k.equals("DiscardingSink") ? 1 : 2;
        }
        log(what);
        String pre = "#" + s.getTransformation().getId();
        if (locked[0] && in.par != envPar) {
            s.setParallelism(in.par);
            log(pre + ".setParallelism(" + in.par + ")");
        }
        Settings set = new Settings(pre);
        set.maybe(0.5, "name", () -> pick(SINK_NAMES) + (p(0.25) ? "-" + (counter++) : ""), s::name);
        if (!locked[0]) {
            set.maybe(0.08, "setParallelism", () -> pickInt(PARS), s::setParallelism);
        }
        if (p(0.07) && Refl.has(s, "setMaxParallelism", 1)) { // not every line's DataStreamSink has it
            int mp = pickInt(MAX_PARS);
            Refl.call(s, "setMaxParallelism", null, mp);
            log(pre + ".setMaxParallelism(" + mp + ")");
        }
        set.maybe(0.02, "slotSharingGroup", () -> pick(SSG), s::slotSharingGroup);
        set.maybe(0.5, "uid", this::uid, s::uid);
        if (!what.startsWith("sinkTo")) {
            set.maybe(0.05, "setUidHash", this::uidHash, s::setUidHash);
        }
        set.maybe(0.04, "disableChaining", s::disableChaining);
    }

    private void finish() {
        List<H> open = new ArrayList<>();
        for (H h : pool) {
            if (h.uses == 0) {
                open.add(h);
            }
        }
        for (H h : open) {
            if (p(h.isSource ? 0.8 : 0.88)) {
                h.uses++;
                sink(h);
            }
        }
    }
}
