package org.flinkjobgraph.restore;

import org.flinkjobgraph.harness.Json;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;

/**
 * Builds the thin user jars of the statetypes jobs: one jar per class variant, compiled here with
 * the JDK's compiler against the Flink of this build (the job's sources are resources of this
 * jar; lines marked {@code //#if LEGACY_API} / {@code //#else} / {@code //#endif} choose the
 * Flink 1.15 or the 1.19+ API). Jars are byte-for-byte deterministic (fixed entry times and
 * order), carry their sources under statetypes/user/src/, and have StJob as Main-Class.
 */
final class StJars {
    static final String[] JOB_SOURCES = {
        "Api", "AvroInfo", "BcastFn", "KeySel", "KeyedStateFn", "OpStateFn", "Probe", "StJob", "Vals", "WinFns"
    };
    static final FileTime TIME = FileTime.from(Instant.parse("2025-01-01T00:00:00Z"));

    private final Path dir;
    private final boolean legacyApi;
    private final Set<String> built = new LinkedHashSet<>();

    StJars(Path dir, boolean legacyApi) {
        this.dir = dir;
        this.legacyApi = legacyApi;
    }

    /** Flink 1.15 - 1.18 have no OpenContext / DataGeneratorSource: the legacy API sources. */
    static boolean legacyApiFor(String line) {
        String[] p = line.split("\\.");
        int major = Integer.parseInt(p[0]);
        int minor = Integer.parseInt(p[1]);
        return major == 1 && minor < 19;
    }

    Path dir() {
        return dir;
    }

    /** The jar of a variant, built on first use in this run. */
    synchronized Path jar(String variant) throws IOException {
        Path out = dir.resolve(variant + ".jar");
        if (built.contains(variant)) {
            return out;
        }
        Files.createDirectories(dir);
        Path work = Files.createTempDirectory("statetypes-jar-");
        try {
            Map<String, String> sources = new TreeMap<>();
            for (String s : JOB_SOURCES) {
                sources.put(s, preprocess(resource("/statetypes/user/" + s + ".java"), legacyApi));
            }
            for (StClasses.Def d : StClasses.jar(variant).values()) {
                sources.put(d.simple, StClasses.source(d));
            }
            Path src = work.resolve("src/statetypes/user");
            Files.createDirectories(src);
            List<String> args = new ArrayList<>(List.of("-d", work.resolve("classes").toString(), "--release", "11",
                    "-nowarn", "-g", "-proc:none", "-encoding", "UTF-8", "-classpath", classpath()));
            for (Map.Entry<String, String> e : sources.entrySet()) {
                Path f = src.resolve(e.getKey() + ".java");
                Files.write(f, e.getValue().getBytes(StandardCharsets.UTF_8));
                args.add(f.toString());
            }
            JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
            if (javac == null) {
                throw new IllegalStateException("no Java compiler: run the harness with a JDK, not a JRE");
            }
            StringWriter log = new StringWriter();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int rc = javac.run(null, null, err, args.toArray(new String[0]));
            if (rc != 0) {
                throw new IllegalStateException("compiling the user jar " + variant + " failed:\n" + err.toString(StandardCharsets.UTF_8) + log);
            }
            Map<String, byte[]> entries = new TreeMap<>();
            Path classes = work.resolve("classes");
            try (Stream<Path> w = Files.walk(classes)) {
                for (Path p : (Iterable<Path>) w.filter(Files::isRegularFile)::iterator) {
                    entries.put(classes.relativize(p).toString().replace(File.separatorChar, '/'), Files.readAllBytes(p));
                }
            }
            for (Map.Entry<String, String> e : sources.entrySet()) {
                entries.put("statetypes/user/src/" + e.getKey() + ".java", e.getValue().getBytes(StandardCharsets.UTF_8));
            }
            writeJar(out, entries, variant);
            built.add(variant);
            return out;
        } finally {
            Runner.deleteRecursively(work);
        }
    }

    /** jars/catalogue.json: every jar variant built so far -> class -> kind, fields, constants. */
    void writeCatalogue(Path file, List<String> variants) throws IOException {
        StringBuilder sb = new StringBuilder("{\n");
        Map<String, Object> cat = StClasses.catalogue(variants);
        int i = 0;
        for (Map.Entry<String, Object> e : cat.entrySet()) {
            sb.append(Json.write(e.getKey())).append(": ").append(Json.write(e.getValue()));
            sb.append(++i < cat.size() ? ",\n" : "\n");
        }
        sb.append("}\n");
        Files.createDirectories(file.getParent());
        Files.write(file, sb.toString().getBytes(StandardCharsets.UTF_8));
    }

    private void writeJar(Path out, Map<String, byte[]> entries, String variant) throws IOException {
        Manifest mf = new Manifest();
        Attributes a = mf.getMainAttributes();
        a.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        a.put(Attributes.Name.MAIN_CLASS, StRunner.MAIN_CLASS);
        a.putValue("Created-By", "flink-jobgraph statetypes harness");
        a.putValue("Statetypes-Variant", variant);
        a.putValue("Statetypes-Api", legacyApi ? "flink-1.15" : "flink-1.19+");
        Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
        try (OutputStream fo = Files.newOutputStream(tmp); JarOutputStream jar = new JarOutputStream(fo)) {
            put(jar, "META-INF/", null);
            ByteArrayOutputStream m = new ByteArrayOutputStream();
            mf.write(m);
            put(jar, JarFile.MANIFEST_NAME, m.toByteArray());
            Set<String> dirs = new LinkedHashSet<>();
            for (String name : entries.keySet()) {
                for (int i = name.indexOf('/'); i >= 0; i = name.indexOf('/', i + 1)) {
                    dirs.add(name.substring(0, i + 1));
                }
            }
            for (String d : new java.util.TreeSet<>(dirs)) {
                put(jar, d, null);
            }
            for (Map.Entry<String, byte[]> e : entries.entrySet()) {
                put(jar, e.getKey(), e.getValue());
            }
        }
        Files.move(tmp, out, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    private static void put(JarOutputStream jar, String name, byte[] data) throws IOException {
        JarEntry e = new JarEntry(name);
        e.setLastModifiedTime(TIME);
        e.setCreationTime(TIME);
        e.setLastAccessTime(TIME);
        e.setTime(TIME.toMillis());
        jar.putNextEntry(e);
        if (data != null) {
            jar.write(data);
        }
        jar.closeEntry();
    }

    static String resource(String name) throws IOException {
        try (InputStream in = StJars.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IOException("missing resource " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** Keeps the lines of the chosen API: //#if LEGACY_API ... //#else ... //#endif. */
    static String preprocess(String text, boolean legacyApi) {
        StringBuilder out = new StringBuilder();
        int state = 0; // 0 outside, 1 in the if branch, 2 in the else branch
        for (String line : text.split("\n", -1)) {
            String t = line.trim();
            if (t.equals("//#if LEGACY_API")) {
                state = 1;
                continue;
            }
            if (t.equals("//#else") && state == 1) {
                state = 2;
                continue;
            }
            if (t.equals("//#endif") && state != 0) {
                state = 0;
                continue;
            }
            if (state == 0 || (state == 1) == legacyApi) {
                out.append(line).append('\n');
            }
        }
        return out.substring(0, out.length() - 1);
    }

    private static String cp;
    private static List<Path> avro;

    /**
     * flink-avro and what it needs beyond Flink (the build's lib-avro/): a job with Avro state
     * bundles them, as a user's fat jar would; no other job has them.
     */
    static synchronized List<Path> avroJars() throws IOException {
        if (avro != null) {
            return avro;
        }
        List<Path> out = new ArrayList<>();
        try {
            Path self = Path.of(StJars.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            Path dir = (Files.isRegularFile(self) ? self.getParent() : self.getParent().getParent()).resolve("lib-avro");
            if (Files.isDirectory(dir)) {
                try (Stream<Path> l = Files.list(dir)) {
                    l.filter(p -> p.toString().endsWith(".jar")).sorted().forEach(out::add);
                }
            }
        } catch (java.net.URISyntaxException e) {
            throw new IOException(e);
        }
        if (out.isEmpty()) {
            throw new IOException("no lib-avro/ beside the harness jar: build with mvn -f harness/restore/pom.xml package");
        }
        avro = out;
        return avro;
    }

    /** This build's runtime class path: the jar's manifest Class-Path (lib/*.jar), or java.class.path. */
    static synchronized String classpath() throws IOException {
        if (cp != null) {
            return cp;
        }
        List<String> parts = new ArrayList<>();
        try {
            Path self = Path.of(StJars.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (Files.isRegularFile(self)) {
                parts.add(self.toString());
                try (JarFile jf = new JarFile(self.toFile())) {
                    String classPath = jf.getManifest().getMainAttributes().getValue(Attributes.Name.CLASS_PATH);
                    if (classPath != null) {
                        for (String p : classPath.trim().split("\\s+")) {
                            parts.add(self.getParent().resolve(p).toString());
                        }
                    }
                }
            }
        } catch (java.net.URISyntaxException e) {
            throw new IOException(e);
        }
        for (String p : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!p.isEmpty() && !parts.contains(p)) {
                parts.add(p);
            }
        }
        for (Path p : avroJars()) { // the job's sources refer to Avro (used only by Avro jobs)
            parts.add(p.toString());
        }
        cp = String.join(File.pathSeparator, parts);
        return cp;
    }

    static String stackTrace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }
}
