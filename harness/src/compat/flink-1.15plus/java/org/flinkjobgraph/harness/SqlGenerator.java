package org.flinkjobgraph.harness;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.table.api.CompiledPlan;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.internal.TableEnvironmentImpl;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.TimestampType;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * Random Table/SQL programs (Flink 1.15+), built with the real planner and captured at submission
 * like a user's SQL job (the statement set's {@code execute()} reaches {@link
 * CaptureExecutorFactory}; nothing runs). `generate --sql [--batch]`.
 *
 * <p>A program: 1-3 datagen tables (bounded by number-of-rows or unbounded; event-time watermark
 * and/or a PROCTIME() column; sometimes their own scan.parallelism), sometimes a view over one of
 * them, and 1-4 INSERTs into blackhole / print tables (print sometimes with sink.parallelism) in
 * one statement set (or one executeSql INSERT, or a compiled plan). Queries: projection + filter,
 * group aggregation (also global, COUNT DISTINCT, HAVING), regular joins (inner / left), interval
 * joins, window TVF aggregations (TUMBLE / HOP / CUMULATE), deduplication (ROW_NUMBER = 1),
 * top-N, OVER aggregation, UNION ALL. Configuration: parallelism.default, max parallelism,
 * chaining off, chain-operators-with-different-max-parallelism, table.exec.resource.default-
 * parallelism, table.exec.uid.generation / uid.format / legacy-transformation-uids where the line
 * has them, mini-batch, two/one phase aggregation, distinct-agg split, sink keyed shuffle, and in
 * BATCH mode the scheduler, table.exec.shuffle-mode, multiple-input and broadcast-join options.
 */
public final class SqlGenerator {
    private final Random r;
    private final long caseSeed;
    private final boolean batch;
    final List<String> program = new ArrayList<>();
    private final List<Src> sources = new ArrayList<>();
    private int sinks = 0;
    private StreamTableEnvironment tEnv;

    /** A table (or view) queries can read. */
    private static final class Src {
        final String name;
        final boolean rowtime;
        final boolean proctime;
        /** Has (or reads a table with) 'scan.parallelism', which datagen on Flink 1.15 rejects. */
        boolean scanParallelism;

        Src(String name, boolean rowtime, boolean proctime) {
            this.name = name;
            this.rowtime = rowtime;
            this.proctime = proctime;
        }

        /** The time attribute to use, or null. */
        String time(Random r) {
            if (rowtime && proctime) {
                return r.nextBoolean() ? "ts" : "pt";
            }
            return rowtime ? "ts" : proctime ? "pt" : null;
        }
    }

    private SqlGenerator(long caseSeed, boolean batch) {
        this.r = new Random(caseSeed);
        this.caseSeed = caseSeed;
        this.batch = batch;
    }

    private boolean p(double x) {
        return r.nextDouble() < x;
    }

    private <T> T pick(List<T> xs) {
        return pick(r, xs);
    }

    private static <T> T pick(Random rnd, List<T> xs) {
        return xs.get(rnd.nextInt(xs.size()));
    }

    private void log(String s) {
        program.add(s);
    }

    private static boolean hasOption(String cls, String field) {
        try {
            Class.forName(cls).getField(field);
            return true;
        } catch (ReflectiveOperationException | LinkageError e) {
            return false;
        }
    }

    static final String EXEC_OPTS = "org.apache.flink.table.api.config.ExecutionConfigOptions";

    /** One generated program as a spec record with Flink's answer (Main.record). */
    public static Map<String, Object> record(
            String graphId, long seed, int index, long caseSeed, boolean batch) throws Exception {
        SqlGenerator g = new SqlGenerator(caseSeed, batch);
        StreamGraph sg = g.build();
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("kind", "SQL");
        if (batch) {
            meta.put("runtime_mode", "BATCH");
        }
        return Main.record(sg, graphId, seed, index, caseSeed, meta, g.program);
    }

    StreamGraph build() throws Exception {
        Generator.resetFlinkCounters();
        Map<String, String> conf = new TreeMap<>();
        if (batch) {
            Generator.batchSettings(r, conf);
        }
        if (new CompatImpl().hasChainMaxParallelismOption() && p(0.08)) {
            conf.put(Compat115Plus.CHAIN_MAX_PAR_KEY, "false");
        }
        for (Map.Entry<String, String> e : conf.entrySet()) {
            log("conf " + e.getKey() + "=" + e.getValue());
        }
        StreamExecutionEnvironment env =
                new StreamExecutionEnvironment(
                        CaptureExecutorFactory.LOADER,
                        CaptureEnvironments.merged(Configuration.fromMap(conf), null),
                        SqlGenerator.class.getClassLoader());
        int par = pick(List.of(1, 1, 2, 2, 3, 4, 4, 8));
        if (!(batch && p(0.4))) {
            env.setParallelism(par);
            log("env.setParallelism(" + par + ")");
        }
        if (p(0.1)) {
            int mp = pick(List.of(128, 256, 1024));
            env.setMaxParallelism(mp);
            log("env.setMaxParallelism(" + mp + ")");
        }
        if (p(0.04)) {
            env.disableOperatorChaining();
            log("env.disableOperatorChaining()");
        }
        EnvironmentSettings settings =
                batch ? EnvironmentSettings.inBatchMode() : EnvironmentSettings.inStreamingMode();
        tEnv = StreamTableEnvironment.create(env, settings);
        tableConf();

        int nSources = 1 + (p(0.5) ? 1 : 0) + (p(0.25) ? 1 : 0);
        for (int i = 0; i < nSources; i++) {
            source(i + 1);
        }
        if (p(0.25)) {
            Src base = pick(sources);
            String name = "v" + (sources.size() + 1);
            sql("CREATE TEMPORARY VIEW " + name + " AS SELECT * FROM " + base.name + " WHERE " + pred("", base));
            Src view = new Src(name, base.rowtime, base.proctime);
            view.scanParallelism = base.scanParallelism;
            sources.add(view);
        }
        int nInserts = pick(List.of(1, 1, 1, 2, 2, 3, 4));
        List<String> inserts = new ArrayList<>();
        for (int i = 0; i < nInserts; i++) {
            String q = query();
            inserts.add("INSERT INTO " + sink(q, r) + " " + q);
        }
        // BATCH multi-way joins (with join hints on Flink 1.16+, without on 1.15), the shape the
        // planner fuses into a MultipleInput operator. Drawn from a Random of their own, after everything else, so a
        // program without one is exactly the program earlier runs generated for the same seed.
        Random mr = new Random(caseSeed ^ 0x6d756c74694c4aL);
        if (batch && joinHints() && mr.nextDouble() < 0.25) {
            String q = multiWayJoin(mr, true, sources);
            inserts.add("INSERT INTO " + sink(q, mr) + " " + q);
        } else if (batch && !joinHints() && mr.nextDouble() < 0.25 && sources.stream().anyMatch(s -> !s.scanParallelism)) {
            // Flink 1.15 has no join hints: the join algorithm is picked with
            // table.exec.disabled-operators (and the broadcast threshold for broadcast joins), and
            // only tables without 'scan.parallelism' are joined (1.15's datagen rejects it).
            List<Src> usable = new ArrayList<>();
            for (Src s : sources) {
                if (!s.scanParallelism) {
                    usable.add(s);
                }
            }
            String joins = pick(mr, List.of("SHUFFLE", "BROADCAST", "MERGE", "DEFAULT"));
            if (joins.equals("SHUFFLE")) {
                setTable("table.exec.disabled-operators", "SortMergeJoin,NestedLoopJoin");
            } else if (joins.equals("BROADCAST")) {
                setTable("table.exec.disabled-operators", "ShuffleHashJoin,SortMergeJoin,NestedLoopJoin");
                setTable("table.optimizer.join.broadcast-threshold", String.valueOf(Long.MAX_VALUE));
            } else if (joins.equals("MERGE")) {
                setTable("table.exec.disabled-operators", "ShuffleHashJoin,NestedLoopJoin");
            }
            String q = multiWayJoin(mr, false, usable);
            inserts.add("INSERT INTO " + sink(q, mr) + " " + q);
        }
        double how = r.nextDouble();
        Capture.GRAPHS.clear();
        resetPlannerCounters();
        if (!batch && how < 0.15) {
            StatementSet set = tEnv.createStatementSet();
            for (String s : inserts) {
                set.addInsertSql(s);
                log("statementSet.addInsertSql: " + s);
            }
            CompiledPlan plan = set.compilePlan();
            log("statementSet.compilePlan().execute()");
            Generator.resetFlinkCounters();
            plan.execute();
        } else if (inserts.size() == 1 && how < 0.45) {
            log("executeSql: " + inserts.get(0));
            Generator.resetFlinkCounters();
            tEnv.executeSql(inserts.get(0));
        } else {
            StatementSet set = tEnv.createStatementSet();
            for (String s : inserts) {
                set.addInsertSql(s);
                log("statementSet.addInsertSql: " + s);
            }
            log("statementSet.execute()");
            Generator.resetFlinkCounters();
            set.execute();
        }
        if (Capture.GRAPHS.size() != 1) {
            throw new IllegalStateException("expected one submitted job, got " + Capture.GRAPHS.size());
        }
        StreamGraph sg = Capture.GRAPHS.get(0);
        Capture.GRAPHS.clear();
        return sg;
    }

    /** The planner numbers its exec nodes with a static counter (uids, names): reset per program. */
    private void resetPlannerCounters() throws Exception {
        Object planner = ((TableEnvironmentImpl) tEnv).getPlanner();
        Class<?> ctx =
                Class.forName(
                        "org.apache.flink.table.planner.plan.nodes.exec.ExecNodeContext",
                        true,
                        planner.getClass().getClassLoader());
        ctx.getMethod("resetIdCounter").invoke(null);
    }

    private void setTable(String k, String v) {
        tEnv.getConfig().set(k, v);
        log("table.conf " + k + "=" + v);
    }

    private void tableConf() {
        if (p(0.2)) {
            setTable("table.exec.resource.default-parallelism", String.valueOf(pick(List.of(1, 2, 3, 4, 6))));
        }
        if (hasOption(EXEC_OPTS, "TABLE_EXEC_UID_GENERATION") && p(0.75)) {
            setTable("table.exec.uid.generation", pick(List.of("PLAN_ONLY", "ALWAYS", "ALWAYS", "DISABLED")));
        }
        if (hasOption(EXEC_OPTS, "TABLE_EXEC_UID_FORMAT") && p(0.1)) {
            setTable("table.exec.uid.format", "<transformation>-<id>");
        }
        if (hasOption(EXEC_OPTS, "TABLE_EXEC_LEGACY_TRANSFORMATION_UIDS") && p(0.05)) {
            setTable("table.exec.legacy-transformation-uids", "true");
        }
        if (!batch && p(0.2)) {
            setTable("table.exec.mini-batch.enabled", "true");
            setTable("table.exec.mini-batch.allow-latency", "1 s");
            setTable("table.exec.mini-batch.size", "100");
        }
        if (p(0.15)) {
            setTable("table.optimizer.agg-phase-strategy", pick(List.of("ONE_PHASE", "TWO_PHASE")));
        }
        if (!batch && p(0.1)) {
            setTable("table.optimizer.distinct-agg.split.enabled", "true");
        }
        if (!batch && p(0.1)) {
            setTable("table.exec.sink.keyed-shuffle", pick(List.of("NONE", "FORCE")));
        }
        if (p(0.1)) {
            setTable("table.optimizer.reuse-source-enabled", "false");
        }
        if (batch) {
            if (p(0.3)) {
                setTable(
                        "table.exec.shuffle-mode",
                        pick(List.of("ALL_EDGES_BLOCKING", "FORWARD_EDGES_PIPELINED", "POINTWISE_EDGES_PIPELINED", "ALL_EDGES_PIPELINED")));
            }
            if (p(0.3)) {
                setTable("table.optimizer.multiple-input-enabled", "false");
            }
            if (p(0.3)) {
                setTable("table.optimizer.join.broadcast-threshold", "-1");
            }
        }
    }

    private void sql(String s) {
        log("executeSql: " + s);
        tEnv.executeSql(s);
    }

    private void source(int i) {
        String name = "t" + i;
        boolean rowtime = batch ? p(0.7) : p(0.6);
        boolean proctime = !batch && (!rowtime || p(0.2)) && p(0.7);
        StringBuilder b = new StringBuilder("CREATE TABLE " + name + " (id BIGINT, k INT, v DOUBLE, s STRING, ts TIMESTAMP(3)");
        if (proctime) {
            b.append(", pt AS PROCTIME()");
        }
        if (rowtime) {
            b.append(", WATERMARK FOR ts AS ts - INTERVAL '").append(r.nextInt(10)).append("' SECOND");
        }
        b.append(") WITH ('connector' = 'datagen', 'fields.k.min' = '1', 'fields.k.max' = '")
                .append(pick(List.of(5, 20, 100)))
                .append("', 'fields.s.length' = '4'");
        if (batch || p(0.5)) {
            b.append(", 'number-of-rows' = '").append(pick(List.of(10, 100, 1000))).append("'");
        } else {
            b.append(", 'rows-per-second' = '").append(pick(List.of(1, 10, 100))).append("'");
        }
        boolean scanParallelism = p(0.2);
        if (scanParallelism) {
            b.append(", 'scan.parallelism' = '").append(pick(List.of(1, 2, 3, 4))).append("'");
        }
        b.append(")");
        sql(b.toString());
        Src src = new Src(name, rowtime, proctime);
        src.scanParallelism = scanParallelism;
        sources.add(src);
    }

    /** A sink table whose columns fit the query's result; returns its name. */
    private String sink(String query, Random r) {
        ResolvedSchema rs = tEnv.sqlQuery(query).getResolvedSchema();
        String name = "sink" + (++sinks);
        StringBuilder b = new StringBuilder("CREATE TABLE " + name + " (");
        for (int i = 0; i < rs.getColumnCount(); i++) {
            Column c = rs.getColumns().get(i);
            LogicalType t = c.getDataType().getLogicalType();
            if (t instanceof TimestampType) {
                t = new TimestampType(true, ((TimestampType) t).getPrecision());
            } else if (t instanceof LocalZonedTimestampType) {
                t = new LocalZonedTimestampType(true, ((LocalZonedTimestampType) t).getPrecision());
            } else {
                t = t.copy(true);
            }
            b.append(i == 0 ? "" : ", ").append('`').append(c.getName()).append("` ").append(t.asSerializableString());
        }
        b.append(") WITH (");
        if (r.nextDouble() < 0.5) {
            b.append("'connector' = 'blackhole'");
        } else {
            b.append("'connector' = 'print'");
            if (r.nextDouble() < 0.25) {
                b.append(", 'sink.parallelism' = '").append(pick(r, List.of(1, 2, 3, 4))).append("'");
            }
        }
        b.append(")");
        sql(b.toString());
        return name;
    }

    private String pred(String alias, Src s) {
        String a = alias.isEmpty() ? "" : alias + ".";
        switch (r.nextInt(4)) {
            case 0:
                return a + "v > " + pick(List.of("0.1", "0.5", "100"));
            case 1:
                return a + "k < " + (1 + r.nextInt(50));
            case 2:
                return a + "s LIKE '" + (char) ('a' + r.nextInt(6)) + "%'";
            default:
                return a + "id % " + (2 + r.nextInt(5)) + " = 0";
        }
    }

    private String where(Src s) {
        return p(0.5) ? " WHERE " + pred("", s) : "";
    }

    private String query() {
        for (int attempt = 0; attempt < 20; attempt++) {
            String q = tryQuery();
            if (q != null) {
                return q;
            }
        }
        return "SELECT id, k, v FROM " + pick(sources).name;
    }

    /** One random query, or null when the picked kind does not fit the tables. */
    private String tryQuery() {
        Src s = pick(sources);
        double x = r.nextDouble();
        if ((x -= 0.12) < 0) {
            String proj = pick(List.of("id, k, v", "id, v * 2 AS v2, UPPER(s) AS us", "k, s, ts", "id, k + 1 AS k1, CONCAT(s, 'x') AS sx"));
            return "SELECT " + proj + " FROM " + s.name + where(s);
        }
        if ((x -= 0.15) < 0) {
            String aggs = pick(List.of("COUNT(*) AS c", "COUNT(*) AS c, SUM(v) AS sv", "MAX(v) AS mv, MIN(id) AS mi", "COUNT(DISTINCT s) AS ds, SUM(v) AS sv", "AVG(v) AS av, COUNT(DISTINCT id) AS di"));
            if (p(0.15)) {
                return "SELECT " + aggs + " FROM " + s.name + where(s);
            }
            String key = pick(List.of("k", "s", "k, s", "MOD(k, 3)"));
            String sel = key.startsWith("MOD") ? "MOD(k, 3) AS km" : key;
            String having = p(0.2) ? " HAVING COUNT(*) > 1" : "";
            return "SELECT " + sel + ", " + aggs + " FROM " + s.name + where(s) + " GROUP BY " + key + having;
        }
        if ((x -= 0.12) < 0) {
            Src o = pick(sources);
            String kind = pick(List.of("JOIN", "JOIN", "LEFT JOIN"));
            String cond = p(0.7) ? "a.k = b.k" : "a.k = b.k AND a.s = b.s";
            String w = p(0.4) ? " WHERE " + pred("a", s) : "";
            return "SELECT a.id, a.k, a.v, b.id AS bid, b.v AS bv FROM " + s.name + " a " + kind + " " + o.name + " b ON " + cond + w;
        }
        if ((x -= 0.1) < 0) {
            Src o = pick(sources);
            String t = s.rowtime && o.rowtime ? "ts" : s.proctime && o.proctime ? "pt" : null;
            if (t == null) {
                return null;
            }
            if (batch && p(0.5)) {
                t = "ts";
            }
            int lo = 1 + r.nextInt(30);
            int hi = r.nextInt(10);
            return "SELECT a.id, a.k, b.id AS bid, a." + t + " AS a_t FROM " + s.name + " a, " + o.name + " b WHERE a.k = b.k AND a." + t
                    + " BETWEEN b." + t + " - INTERVAL '" + lo + "' SECOND AND b." + t + " + INTERVAL '" + hi + "' SECOND";
        }
        if ((x -= 0.16) < 0) {
            String t = s.time(r);
            if (t == null) {
                return null;
            }
            String win;
            switch (r.nextInt(3)) {
                case 0:
                    win = "TUMBLE(TABLE " + s.name + ", DESCRIPTOR(" + t + "), INTERVAL '" + pick(List.of(5, 10, 60)) + "' SECOND)";
                    break;
                case 1:
                    win = "HOP(TABLE " + s.name + ", DESCRIPTOR(" + t + "), INTERVAL '5' SECOND, INTERVAL '" + pick(List.of(10, 20, 60)) + "' SECOND)";
                    break;
                default:
                    win = "CUMULATE(TABLE " + s.name + ", DESCRIPTOR(" + t + "), INTERVAL '5' SECOND, INTERVAL '" + pick(List.of(10, 20, 60)) + "' SECOND)";
                    break;
            }
            String key = p(0.7) ? ", k" : "";
            String aggs = pick(List.of("COUNT(*) AS c", "COUNT(*) AS c, SUM(v) AS sv", "MAX(v) AS mv", "COUNT(DISTINCT s) AS ds"));
            return "SELECT window_start, window_end" + key + ", " + aggs + " FROM TABLE(" + win + ") GROUP BY window_start, window_end" + key;
        }
        if ((x -= 0.09) < 0) {
            String t = s.time(r);
            if (t == null) {
                if (!batch) {
                    return null;
                }
                t = "ts";
            }
            String dir = p(0.5) ? " DESC" : "";
            String key = pick(List.of("k", "s", "id"));
            return "SELECT id, k, v, s FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY " + key + " ORDER BY " + t + dir
                    + ") AS rn FROM " + s.name + ") WHERE rn = 1";
        }
        if ((x -= 0.09) < 0) {
            int n = 1 + r.nextInt(5);
            String part = p(0.8) ? "PARTITION BY " + pick(List.of("k", "s")) + " " : "";
            String withRn = p(0.5) ? ", rn" : "";
            return "SELECT id, k, v" + withRn + " FROM (SELECT *, ROW_NUMBER() OVER (" + part + "ORDER BY v " + pick(List.of("DESC", "ASC"))
                    + ") AS rn FROM " + s.name + ") WHERE rn <= " + n;
        }
        if ((x -= 0.07) < 0) {
            String t = s.time(r);
            if (t == null) {
                return null;
            }
            String frame = p(0.5) ? "ROWS BETWEEN " + (1 + r.nextInt(10)) + " PRECEDING AND CURRENT ROW" : "RANGE BETWEEN INTERVAL '" + (1 + r.nextInt(60)) + "' SECOND PRECEDING AND CURRENT ROW";
            return "SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY " + t + " " + frame + ") AS sv FROM " + s.name;
        }
        int n = 2 + (p(0.3) ? 1 : 0);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            Src u = pick(sources);
            b.append(i == 0 ? "" : " UNION ALL ").append("SELECT id, k, v FROM ").append(u.name).append(where(u));
        }
        return b.toString();
    }

    /** Join hints (BROADCAST, SHUFFLE_HASH, SHUFFLE_MERGE, NEST_LOOP) came with Flink 1.16. */
    private static boolean joinHints() {
        return !StreamGraphSpecExporter.flinkVersionFull().startsWith("1.15.");
    }

    /**
     * A BATCH join of 3-4 tables (or views) whose build sides are hinted (broadcast / shuffle hash /
     * sort-merge / nested loop, or no hint), joined on one key or two, sometimes aggregated or put
     * in a UNION ALL with another join or a plain scan.
     */
    private String multiWayJoin(Random mr, boolean hints, List<Src> srcs) {
        String q = hintedJoin(mr, hints, srcs);
        double x = mr.nextDouble();
        if (x < 0.3) {
            String other = mr.nextBoolean() ? hintedJoin(mr, hints, srcs) : "SELECT id, k, v AS bv FROM " + pick(mr, srcs).name;
            q = q + " UNION ALL " + other;
            if (mr.nextBoolean()) {
                q = "SELECT k, COUNT(*) AS c, SUM(bv) AS sv FROM (" + q + ") GROUP BY k";
            }
        } else if (x < 0.55) {
            q = "SELECT k, COUNT(*) AS c, MAX(bv) AS mb FROM (" + q + ") GROUP BY k";
        }
        return q;
    }

    private String hintedJoin(Random mr, boolean hints, List<Src> srcs) {
        int n = 2 + (mr.nextDouble() < 0.35 ? 1 : 0);
        String[] al = {"a", "b", "c", "d"};
        StringBuilder from = new StringBuilder(pick(mr, srcs).name + " a");
        List<String> built = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            String key = mr.nextDouble() < 0.75 ? "a.k = " + al[i] + ".k" : "a.s = " + al[i] + ".s";
            from.append(" JOIN ").append(pick(mr, srcs).name).append(' ').append(al[i]).append(" ON ").append(key);
            built.add(al[i]);
        }
        String hint = hints ? pick(mr, List.of("BROADCAST", "BROADCAST", "SHUFFLE_HASH", "SHUFFLE_MERGE", "NEST_LOOP", "")) : "";
        String h = "";
        if (!hint.isEmpty()) {
            List<String> hinted = mr.nextBoolean() ? built : built.subList(0, 1);
            h = "/*+ " + hint + "(" + String.join(", ", hinted) + ") */ ";
        }
        String where = mr.nextDouble() < 0.3 ? " WHERE a.v > 0.5" : "";
        return "SELECT " + h + "a.id, a.k, b.v AS bv FROM " + from + where;
    }
}
