package org.flinkjobgraph.testjobs;

import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableEnvironment;

/**
 * A SQL job: datagen -> filter -> group aggregation -> blackhole (executeSql INSERT). Arg "set":
 * a statement set with a second INSERT into a print table (one job with two sinks); arg "two":
 * two separate executeSql INSERTs (two jobs); "all": the set, then the two (three jobs).
 */
public final class SqlJob {
    private SqlJob() {}

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "one";
        TableEnvironment t = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        t.executeSql(
                "CREATE TABLE orders (id BIGINT, customer INT, amount DOUBLE) WITH ("
                        + " 'connector' = 'datagen', 'rows-per-second' = '5',"
                        + " 'fields.customer.min' = '1', 'fields.customer.max' = '20')");
        t.executeSql("CREATE TABLE totals (customer INT, total DOUBLE, n BIGINT) WITH ('connector' = 'blackhole')");
        t.executeSql("CREATE TABLE big (id BIGINT, amount DOUBLE) WITH ('connector' = 'print')");
        String agg =
                "INSERT INTO totals SELECT customer, SUM(amount), COUNT(*) FROM orders"
                        + " WHERE amount > 10 GROUP BY customer";
        String filter = "INSERT INTO big SELECT id, amount FROM orders WHERE amount > 1000";
        if (mode.equals("set") || mode.equals("all")) {
            StatementSet s = t.createStatementSet();
            s.addInsertSql(agg);
            s.addInsertSql(filter);
            s.execute();
        }
        if (mode.equals("two") || mode.equals("all")) {
            t.executeSql(agg);
            t.executeSql(filter).await();
        }
        if (mode.equals("one")) {
            t.executeSql(agg).await();
        }
    }
}
