package org.flinkjobgraph.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.deploy.SparkHadoopUtil;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF3;

/**
 * {@code read_head(path, offset, length)}: at most {@code length} bytes of a file from {@code offset}, read
 * where the task runs, through Hadoop's FileSystem with the session's Hadoop configuration (every scheme Spark
 * reads: file, hdfs, s3a, abfs, gs, dbfs ...).
 *
 * <p>Spark's file sources read whole files, and Python workers cannot reach Hadoop's FileSystem: the head of a
 * savepoint's state file (its serialization proxy, a few hundred bytes in front of possibly gigabytes of state)
 * needs a ranged read on the executor. Returns a struct (data binary, file_length long, error string): a
 * missing or unreadable file is an error string for that row, never a failed task.
 */
public final class ReadHead implements UDF3<String, Long, Integer, Row> {
    private static final long serialVersionUID = 1L;
    private transient Configuration conf;

    private Configuration conf() {
        if (conf == null) {
            SparkEnv env = SparkEnv.get();
            conf = env == null ? new Configuration() : SparkHadoopUtil.get().newConfiguration(env.conf());
        }
        return conf;
    }

    @Override
    public Row call(String uri, Long offset, Integer length) {
        if (uri == null) {
            return RowFactory.create(null, null, "no path");
        }
        long from = offset == null ? 0L : offset;
        int want = length == null ? 0 : length;
        try {
            Path path = new Path(uri);
            FileSystem fs = path.getFileSystem(conf());
            FileStatus status = fs.getFileStatus(path);
            if (!status.isFile()) {
                return RowFactory.create(null, null, "not a regular file");
            }
            long size = status.getLen();
            int n = (int) Math.max(0L, Math.min((long) want, size - from));
            byte[] data = new byte[n];
            try (FSDataInputStream in = fs.open(path)) {
                in.readFully(from, data);
            }
            return RowFactory.create(data, size, null);
        } catch (java.io.FileNotFoundException e) {
            return RowFactory.create(null, null, "file does not exist");
        } catch (Exception e) {
            String message = e.getMessage() == null ? e.getClass().getName() : e.getClass().getSimpleName() + ": " + e.getMessage();
            return RowFactory.create(null, null, message);
        }
    }
}
