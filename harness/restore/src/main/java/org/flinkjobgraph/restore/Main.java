package org.flinkjobgraph.restore;

import org.flinkjobgraph.harness.Json;
import org.flinkjobgraph.harness.StreamGraphSpecExporter;

import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.GZIPOutputStream;

/**
 * CLI: {@code generate --seed S --count N --out cases.jsonl.gz --metadata-out metadata.tar.gz
 * [--start I] [--scratch DIR]}. Case ids are {@code sp-<line>-s<seed>-<index:05d>}; each case is
 * deterministic in (seed, index) up to Flink's own timing (records before the savepoint, state
 * sizes, HashMap order of the file).
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            // MiniCluster threads are not daemons: exit so a failed run does not linger
            t.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("statetypes")) {
            StMain.run(args);
            return;
        }
        if (args.length > 0 && args[0].equals("statetypes-respec")) {
            StMain.respec(args);
            return;
        }
        if (args.length > 0 && args[0].equals("statetypes-replay")) {
            StReplay.run(args);
            return;
        }
        if (args.length > 0 && args[0].equals("value-check")) {
            ValueCheck.run(args);
            return;
        }
        if (args.length == 0 || !args[0].equals("generate")) {
            System.err.println("usage: generate --seed S --count N --out F.jsonl.gz --metadata-out F.tar.gz"
                    + " [--start I] [--scratch DIR]\n   or: statetypes --seed S --count N --out F.jsonl.gz --cases-dir DIR"
                    + " [--phase all|v1|v2 --target LINE --from F.jsonl.gz] (see StMain)");
            System.exit(args.length > 0 && args[0].equals("version") ? 0 : 2);
        }
        long seed = 1;
        int count = 10;
        int start = 0;
        String out = null;
        String mdOut = null;
        String scratch = System.getProperty("java.io.tmpdir") + "/flink-restore-harness-" + ProcessHandle.current().pid();
        for (int i = 1; i < args.length; i += 2) {
            switch (args[i]) {
                case "--seed": seed = Long.parseLong(args[i + 1]); break;
                case "--count": count = Integer.parseInt(args[i + 1]); break;
                case "--start": start = Integer.parseInt(args[i + 1]); break;
                case "--out": out = args[i + 1]; break;
                case "--metadata-out": mdOut = args[i + 1]; break;
                case "--scratch": scratch = args[i + 1]; break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (out == null || mdOut == null) {
            throw new IllegalArgumentException("--out and --metadata-out are required");
        }
        String line = StreamGraphSpecExporter.flinkLine();
        Map<String, Integer> verdicts = new TreeMap<>();
        int retries = 0;
        long t0 = System.currentTimeMillis();
        Path scratchDir = Paths.get(scratch);
        try (Runner runner = new Runner(new CompatImpl(), scratchDir);
                Writer w = new OutputStreamWriter(
                        new GZIPOutputStream(new BufferedOutputStream(new FileOutputStream(out))),
                        StandardCharsets.UTF_8);
                Tar tar = new Tar(new GZIPOutputStream(new BufferedOutputStream(new FileOutputStream(mdOut))))) {
            for (int index = start; index < start + count; index++) {
                String caseId = String.format("sp-%s-s%d-%05d", line, seed, index);
                Map<String, Object> c = null;
                for (int attempt = 0; attempt < 4 && c == null; attempt++) {
                    long caseSeed = caseSeed(seed, index, attempt);
                    try {
                        c = runner.runCase(caseId, seed, index, attempt, caseSeed);
                    } catch (Throwable t) {
                        retries++;
                        System.err.println(caseId + " attempt " + attempt + " failed: " + t);
                        for (Throwable x = t.getCause(); x != null; x = x.getCause()) {
                            System.err.println("   caused by " + x);
                        }
                    }
                }
                if (c == null) {
                    System.err.println(caseId + ": giving up");
                    continue;
                }
                byte[] md = (byte[]) c.remove("_metadata");
                tar.add(caseId + ".metadata", md);
                w.write(Json.write(c));
                w.write('\n');
                w.flush();
                verdicts.merge(c.get("verdict") + "/" + c.get("verdict_allow_non_restored"), 1, Integer::sum);
                System.err.printf("%s %s/%s %s%n", caseId, c.get("verdict"), c.get("verdict_allow_non_restored"),
                        c.get("error_class") == null ? "" : c.get("failure_stage") + " " + c.get("error_class"));
            }
        }
        double secs = (System.currentTimeMillis() - t0) / 1000.0;
        System.err.printf("flink %s: %d cases in %.1f s (%.2f s/case), verdicts %s, case errors (retried) %d%n",
                StreamGraphSpecExporter.flinkVersionFull(), count, secs, secs / Math.max(1, count), verdicts, retries);
    }

    static long caseSeed(long seed, int index, int attempt) {
        long x = seed * 0x9E3779B97F4A7C15L + index * 0xBF58476D1CE4E5B9L + attempt * 0x94D049BB133111EBL;
        x ^= x >>> 31;
        x *= 0xD6E8FEB86659FD93L;
        x ^= x >>> 29;
        return x;
    }

    /** Minimal ustar writer (regular files only), so the harness needs no archive library. */
    static final class Tar implements AutoCloseable {
        private final OutputStream out;

        Tar(OutputStream out) {
            this.out = out;
        }

        void add(String name, byte[] data) throws IOException {
            byte[] h = new byte[512];
            put(h, 0, name, 100);
            put(h, 100, "0000644", 8);
            put(h, 108, "0000000", 8);
            put(h, 116, "0000000", 8);
            put(h, 124, String.format("%011o", data.length), 12);
            put(h, 136, String.format("%011o", System.currentTimeMillis() / 1000), 12);
            for (int i = 148; i < 156; i++) {
                h[i] = ' ';
            }
            h[156] = '0';
            put(h, 257, "ustar", 6);
            h[263] = '0';
            h[264] = '0';
            put(h, 265, "root", 32);
            put(h, 297, "root", 32);
            int sum = 0;
            for (byte b : h) {
                sum += b & 0xff;
            }
            put(h, 148, String.format("%06o", sum), 7);
            h[155] = ' ';
            out.write(h);
            out.write(data);
            int pad = (512 - data.length % 512) % 512;
            out.write(new byte[pad]);
        }

        private static void put(byte[] h, int off, String s, int len) {
            byte[] b = s.getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(b, 0, h, off, Math.min(b.length, len));
        }

        @Override
        public void close() throws IOException {
            out.write(new byte[1024]);
            out.close();
        }
    }
}
