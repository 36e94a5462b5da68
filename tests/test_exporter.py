"""The exporter (``flink-jobgraph export`` -> harness ``export``) on real Flink, built from Maven Central.

What must hold for a user's job, whatever API it uses: every job its main() submits is captured as
a StreamGraph and nothing runs. The test programs (harness/src/testjobs) would, if they ran,
connect to a socket this test listens on (127.0.0.1 only) and write files under a folder this test
watches; a trap executor in their jar would write a marker file if Flink ever picked it. Table/SQL
jobs are captured the same way and computed by the pipeline exactly as Flink builds them.

Builds the harness for Flink 2.3 and 1.20 (and 1.9 for its local-environment capture) with Maven on
first use (downloads in CI; a few seconds once built).
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from pipeline.export import harness as export_cmd

from .conftest import build_testjobs_jar

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "harness"
LINES = ("2.3", "1.20")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Per line: the harness jar (built through the front door's build step), the test programs as
    a thin jar (a user's jar), and the connector jar they need (flink-connector-files)."""
    out = {}
    root = tmp_path_factory.mktemp("exporter")
    for line in LINES:
        out[line] = build_testjobs_jar(root, line)
    return out


def export(built, line, main_class, *extra, args=(), env=None, connector=True):
    """``flink-jobgraph export`` as a user runs it; returns (exit code, spec lines, stderr)."""
    b = built[line]
    cmd = [sys.executable, "-m", "pipeline.cli", "export", "--jar", str(b["jar"]), "--main-class",
           f"org.flinkjobgraph.testjobs.{main_class}", "--flink", line, *extra]
    if connector:
        cmd += ["--classpath", str(b["connector"])]
    if args:
        cmd += ["--", *map(str, args)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})},
                       timeout=300)
    specs = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    return p.returncode, specs, p.stderr


class Listener:
    """A listening TCP socket on 127.0.0.1; ``attempted()`` tells whether anyone tried to connect."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def attempted(self) -> bool:
        try:
            conn, _ = self.sock.accept()  # a connection attempt waits in the backlog even if never accepted
        except BlockingIOError:
            return False
        conn.close()
        return True


@pytest.fixture()
def listener():
    lst = Listener()
    yield lst
    lst.sock.close()


def _no_side_effects(listener, sink_dir: Path, trap: Path) -> None:
    assert not listener.attempted(), "the job connected to the source socket: it ran"
    assert not sink_dir.exists(), "the job's sink wrote files: it ran"
    assert not trap.exists(), "a non-capturing executor received the job"


def test_listener_and_trap_detect_a_real_run(built, listener, tmp_path):
    """The checks below are meaningful: run without the exporter (same jars, no harness), the program
    reaches the trap executor; and the listener sees a connection attempt."""
    b = built["2.3"]
    lib = b["harness"].parent / "lib"
    cp = os.pathsep.join([str(b["jar"]), str(b["connector"]), str(lib / "*")])
    trap = tmp_path / "trap"
    p = subprocess.run(["java", "-cp", cp, "org.flinkjobgraph.testjobs.SocketToFileJob",
                        str(listener.port), str(tmp_path / "out"), "direct"],
                       capture_output=True, text=True, env={**os.environ, "FLINK_JOBGRAPH_TRAP_FILE": str(trap)},
                       timeout=120)
    assert p.returncode != 0 and "trap executor reached" in p.stderr, p.stderr[-2000:]
    assert trap.exists()  # without the exporter, Flink hands the job to the only executor it finds
    with socket.create_connection(("127.0.0.1", listener.port)):
        pass
    assert listener.attempted()  # and a connection attempt is seen


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("mode", ["context", "direct"])
def test_datastream_job_is_captured_and_never_runs(built, listener, tmp_path, line, mode):
    sink_dir, trap = tmp_path / "out", tmp_path / "trap"
    rc, specs, err = export(built, line, "SocketToFileJob", "--graph-id", "socket@v1", "--expected",
                            args=(listener.port, sink_dir, mode),
                            env={"FLINK_JOBGRAPH_TRAP_FILE": str(trap)})
    assert rc == 0, err
    assert [s["graph_id"] for s in specs] == ["socket@v1"]
    names = [n["name"] for n in specs[0]["nodes"]]
    assert names[0] == "Source: Socket Stream" and "Sink: Writer" in names
    assert {n["uid"] for n in specs[0]["nodes"]} >= {"socket-source", "non-empty", "file-sink"}
    assert specs[0]["expected"]["job_vertices"]
    assert "nothing was executed" in err
    _no_side_effects(listener, sink_dir, trap)


def test_datastream_v2_job_is_captured_and_never_runs(built, listener, tmp_path):
    sink_dir, trap = tmp_path / "out", tmp_path / "trap"
    rc, specs, err = export(built, "2.3", "V2SocketToFileJob", "-p", "3",
                            args=(listener.port, sink_dir), env={"FLINK_JOBGRAPH_TRAP_FILE": str(trap)})
    assert rc == 0, err
    assert [s["job_name"] for s in specs] == ["v2-socket-to-file"]
    assert max(n["parallelism"] for n in specs[0]["nodes"]) == 3  # the V2 environment got -p too
    _no_side_effects(listener, sink_dir, trap)


def test_every_submission_is_a_graph(built, listener, tmp_path):
    rc, specs, err = export(built, "2.3", "SocketToFileJob", "--graph-id", "two@v1",
                            args=(listener.port, tmp_path / "out", "twice"))
    assert rc == 0, err
    assert [(s["graph_id"], s["job_name"]) for s in specs] == [("two@v1#1", "socket-to-file"), ("two@v1#2", "second")]
    _no_side_effects(listener, tmp_path / "out", tmp_path / "trap")
    rc, specs, err = export(built, "2.3", "SocketToFileJob", "--first",
                            args=(listener.port, tmp_path / "out", "twice"))
    assert rc == 0 and [s["graph_id"] for s in specs] == ["socket-to-file"], err


def test_job_configuration_like_flink_run(built, listener, tmp_path):
    port, out = listener.port, tmp_path / "out"

    def pars(specs):
        nodes = specs[0]["nodes"]
        return {n["parallelism"] for n in nodes[1:]}, {n["max_parallelism"] for n in nodes}

    rc, specs, err = export(built, "2.3", "SocketToFileJob", "-p", "4", "-D", "pipeline.max-parallelism=64",
                            "--expected", args=(port, out))
    assert rc == 0, err
    assert pars(specs) == ({4}, {64})
    assert {v["max_parallelism"] for v in specs[0]["expected"]["job_vertices"]} == {64}
    rc, specs, err = export(built, "2.3", "SocketToFileJob", args=(port, out))
    assert rc == 0 and pars(specs) == ({1}, {-1}), err  # defaults: parallelism.default 1, no max
    conf = tmp_path / "job-conf.yaml"
    conf.write_text("parallelism.default: 2\npipeline.max-parallelism: 32\npipeline.operator-chaining.enabled: false\n")
    rc, specs, err = export(built, "2.3", "SocketToFileJob", "--config", str(conf), args=(port, out))
    assert rc == 0 and pars(specs) == ({2}, {32}) and specs[0]["chaining_enabled"] is False, err
    rc, specs, err = export(built, "2.3", "SocketToFileJob", "--config", str(conf), "-p", "3",
                            "-D", "pipeline.max-parallelism=16", args=(port, out))
    assert rc == 0 and pars(specs) == ({3}, {16}), err  # -p and -D override the file
    _no_side_effects(listener, out, tmp_path / "trap")


@pytest.mark.parametrize("line", LINES)
def test_dependencies_as_maven_coordinates(built, listener, tmp_path, line):
    """A thin jar whose connector is named by its Maven coordinates instead of a jar: resolved from
    Maven Central (through ~/.m2) with what it needs at runtime, minus what the harness ships."""
    rc, _, err = export(built, line, "SocketToFileJob", args=(listener.port, tmp_path / "out"), connector=False)
    assert rc == 1 and "class org.apache.flink.connector.file.sink.FileSink not found" in err
    cache = tmp_path / "deps"
    version = built[line]["connector"].name.removeprefix("flink-connector-files-").removesuffix(".jar")
    coord = f"org.apache.flink:flink-connector-files:{version}"
    rc, specs, err = export(built, line, "SocketToFileJob", "--maven", coord, "--graph-id", "socket@mvn",
                            args=(listener.port, tmp_path / "out"), connector=False,
                            env={export_cmd.DEPS_CACHE_ENV: str(cache)})
    assert rc == 0, err
    assert [s["graph_id"] for s in specs] == ["socket@mvn"] and "Sink: Writer" in {n["name"] for n in specs[0]["nodes"]}
    (folder,) = [p.parent for p in cache.glob("*/.resolved")]
    jars = sorted(p.name for p in (folder / "jars").glob("*.jar"))
    assert f"flink-connector-files-{version}.jar" in jars
    shipped = {export_cmd._artifact_id(j.name) for j in (built[line]["harness"].parent / "lib").glob("*.jar")}
    assert not shipped & {export_cmd._artifact_id(j) for j in jars}  # no second copy of Flink's own jars
    _no_side_effects(listener, tmp_path / "out", tmp_path / "trap")
    rc, _, err = export(built, line, "SocketToFileJob", "--maven", "org.apache.flink:flink-connector-files",
                        args=(listener.port, tmp_path / "out"), connector=False)
    assert rc == 2 and "--maven expects GROUP:ARTIFACT:VERSION" in err
    rc, _, err = export(built, line, "SocketToFileJob", "--maven", "org.flinkjobgraph.nope:no-such-artifact:0.0.1",
                        args=(listener.port, tmp_path / "out"), connector=False,
                        env={export_cmd.DEPS_CACHE_ENV: str(cache)})
    assert rc == 2 and "could not resolve org.flinkjobgraph.nope:no-such-artifact:0.0.1 from Maven" in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def built19(tmp_path_factory):
    """Flink 1.9: the harness, its test programs as a thin jar, and as a fat jar that also bundles
    flink-streaming-java (Flink's own LocalStreamEnvironment among its classes)."""
    jar = export_cmd.ensure_harness(export_cmd.harness_dir(), "1.9", quiet=True)
    classes = jar.parent / "test-classes"
    root = tmp_path_factory.mktemp("exporter19")
    thin, fat = root / "testjobs-1.9.jar", root / "testjobs-1.9-fat.jar"
    with zipfile.ZipFile(thin, "w") as t, zipfile.ZipFile(fat, "w") as f:
        for p in sorted(classes.rglob("*")):
            if p.is_file():
                t.write(p, p.relative_to(classes).as_posix())
                f.write(p, p.relative_to(classes).as_posix())
        (streaming,) = (jar.parent / "lib").glob("flink-streaming-java_*.jar")
        with zipfile.ZipFile(streaming) as z:
            for name in z.namelist():
                if name.startswith("org/apache/flink/") and name.endswith(".class"):
                    f.writestr(name, z.read(name))
    return {"thin": {"1.9": {"harness": jar, "jar": thin}}, "fat": {"1.9": {"harness": jar, "jar": fat}}}


def test_flink19_local_environments_are_captured_like_the_context_environment(built19, listener, tmp_path):
    """Flink 1.9 has no pluggable executors: a program that builds its own local environment
    (createLocalEnvironment(), createLocalEnvironment(p), new LocalStreamEnvironment(conf),
    createLocalEnvironmentWithWebUI) is captured at execute() by the harness's stand-in
    LocalStreamEnvironment, also when the job's fat jar bundles Flink's own. Nothing connects to
    the socket or writes the file, and the spec is the getExecutionEnvironment() variant's, byte
    for byte, so the pipeline computes the same job graph (Flink's, checked with --expected)."""
    from udfs.compute.one_graph import compute_one

    sink_dir = tmp_path / "out"

    def run(mode, *extra, jar="thin"):
        rc, specs, err = export(built19[jar], "1.9", "LocalEnvSocketToFileJob", "--graph-id", "local19", "--expected",
                                "-D", "pipeline.max-parallelism=64", *extra, args=(listener.port, sink_dir, mode),
                                connector=False)  # fmt: skip
        assert rc == 0 and "nothing was executed" in err, err
        return specs

    (base,) = run("context", "-p", "2")
    assert [(n["name"], n["parallelism"], n["max_parallelism"]) for n in base["nodes"]] == [
        ("Source: Socket Stream", 1, 64), ("Filter", 2, 64), ("Keyed Reduce", 2, 64), ("Sink: Unnamed", 2, 64),
    ]  # fmt: skip
    variants = {
        "createLocalEnvironment()": run("local", "-p", "2"),  # -p: Flink's default local parallelism
        "createLocalEnvironment(2)": run("local-2", "-p", "3"),  # the program's own setting wins
        "new LocalStreamEnvironment(conf)": run("new", "-p", "2"),
        "createLocalEnvironmentWithWebUI(conf)": run("webui", "-p", "2"),
        "fat jar, createLocalEnvironment()": run("local", "-p", "2", jar="fat"),
    }
    for what, specs in variants.items():
        assert specs == [base], what
    names = {n["id"]: n["name"] for n in base["nodes"]}
    _, ops, vertices, _ = compute_one(base)
    ours = {names[n]: o for n, o in zip(ops["node_id"], ops["operator_id"], strict=True)}
    flink = {names[int(k)]: v["operator_id"] for k, v in base["expected"]["operators"].items()}
    assert ours == flink and len(vertices) == len(base["expected"]["job_vertices"]) == 3
    # Flink's default for new LocalStreamEnvironment() without -p: parallelism 1
    (one,) = run("new")
    assert {n["parallelism"] for n in one["nodes"]} == {1}
    # a local environment clears its transformations after execute(): the second job is its own
    first, second = run("local-twice", "-p", "2")
    assert (first["graph_id"], second["graph_id"]) == ("local19#1", "local19#2")
    assert {k: v for k, v in first.items() if k != "graph_id"} == {k: v for k, v in base.items() if k != "graph_id"}
    assert [n["name"] for n in second["nodes"]] == ["Source: Socket Stream", "Sink: Print to Std. Out"]
    _no_side_effects(listener, sink_dir, tmp_path / "trap")


def test_sql_jobs_are_captured_and_computed_like_flink(built, spark, settings, tmp_path):
    """Flink 2.3 and 1.20; one compute run over both (Spark time is the expensive part)."""
    from devtools.conformance import compare_tables
    from pipeline.compute.run import Progress, compute

    inp = tmp_path / "in"
    inp.mkdir()
    graphs = []
    for line in LINES:
        # one main(): a statement set (one job, two INSERTs), then two executeSql INSERTs (two jobs)
        rc, specs, err = export(built, line, "SqlJob", "--graph-id", f"sql@{line}", "--expected",
                                "-D", "table.exec.resource.default-parallelism=2", args=("all",))
        assert rc == 0, err
        assert [g["graph_id"] for g in specs] == [f"sql@{line}#{i}" for i in (1, 2, 3)], err
        for g in specs:
            assert g["flink_version"] == line and g["job_type"] == "STREAMING" and g["expected"]["job_vertices"]
            assert "orders" in g["nodes"][0]["name"] and g["nodes"][0]["is_source"]
            assert {n["parallelism"] for n in g["nodes"]} == {2}  # table.exec.* reached the planner
        sinks = [[n["name"] for n in g["nodes"] if n["id"] not in {e["source"] for e in g["edges"]}] for g in specs]
        assert [len(s) for s in sinks] == [2, 1, 1], sinks
        graphs += specs
    (inp / "sql.jsonl").write_text("".join(json.dumps(g) + "\n" for g in graphs))
    out = str(tmp_path / "out")
    compute(spark, str(inp), out, settings, Progress(enabled=False))
    report = compare_tables(spark, out, graphs)
    assert report.graphs == len(graphs) == 6 and report.checked["operator_id"] > 0 and report.checked["job_edges"] > 0
    assert report.ok(), report.table() + "\n" + "\n".join(report.mismatches)


@pytest.mark.parametrize("line", LINES)
def test_an_operator_added_behind_a_uid_operator_moves_an_upstream_id(built, line):
    """Real Flink: adding D behind the uid operator U changes the ID of P, an input of U.

    Flink hashes a uid node as soon as its breadth-first walk reaches it, so D is queued and
    hashed before P and P's ``hashes.size()`` position moves by one. The pipeline reproduces
    both versions exactly, and this is why tests/test_properties.py states "adding a downstream
    operator keeps upstream IDs" only for graphs without uids upstream.
    """
    from udfs.compute.one_graph import compute_one

    rc, specs, err = export(built, line, "UidFirstJob", "--graph-id", "uid-first", "--expected", connector=False)
    assert rc == 0 and [g["graph_id"] for g in specs] == ["uid-first#1", "uid-first#2"], err
    flink, ours = [], []
    for g in specs:
        names = {n["id"]: n["name"] for n in g["nodes"]}
        flink.append({names[int(k)]: v["operator_id"] for k, v in g["expected"]["operators"].items()})
        _, ops, _, _ = compute_one(g)
        ours.append({names[int(k)]: v for k, v in zip(ops["node_id"], ops["operator_id"], strict=True)})
    assert ours == flink
    base, grown = flink
    assert set(grown) - set(base) == {"D"}
    assert base["P"] != grown["P"]
    kept = ("Source: A", "Source: B", "P1", "U")
    assert {k: base[k] for k in kept} == {k: grown[k] for k in kept}


def test_clear_one_line_errors(built, tmp_path):
    def one_line_error(err: str) -> None:
        assert "\tat " not in err and "Exception in thread" not in err, err
        assert any(x.startswith(("error: ", "flink-jobgraph export: ")) for x in err.splitlines()), err

    rc, specs, err = export(built, "2.3", "NoSubmitJob")
    assert rc == 1 and not specs and "returned without submitting a job" in err
    one_line_error(err)
    rc, _, err = export(built, "2.3", "MissingClassJob", connector=False)
    assert rc == 1
    assert "class org.apache.flink.connector.file.sink.FileSink not found: add the jar that provides it" in err
    one_line_error(err)
    java = ["java", "-jar", str(built["2.3"]["harness"])]
    p = subprocess.run([*java, "export", "--graph-id", "x"], capture_output=True, text=True)
    assert p.returncode == 2 and "error: --main-class is required" in p.stderr
    one_line_error(p.stderr)
    p = subprocess.run([*java, "export", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--classpath" in p.stdout and "Exception" not in p.stdout + p.stderr
    p = subprocess.run(java, capture_output=True, text=True)
    assert p.returncode == 2 and all(c in p.stderr for c in ("generate", "export", "selfcheck", "version", "time"))
    rc, _, err = export(built, "2.3", "NoSubmitJob", "--jar", str(tmp_path / "missing.jar"))
    assert rc == 2 and "missing.jar: no such file" in err
    rc, _, err = export(built, "1.20", "NoSubmitJob", "--flink", "3.7")
    assert rc == 2 and "'3.7' is not supported" in err
    rc, _, err = export(built, "2.3", "NoSubmitJob", env={"PATH": str(tmp_path)})
    assert rc == 2 and "java not found on PATH" in err


@pytest.mark.parametrize("line", LINES)
def test_a_main_that_waits_or_exits_before_submitting_ends_the_export_with_why(built, tmp_path, line):
    """A main() that waits before execute() (a socket, a file, a sleep) is stopped at --timeout with
    where it was; one that calls System.exit(3) first is named with its code; in a fleet loop the
    other jars' exports go on. The job's own exit after a submission leaves the export as it was."""
    fleet = ["WaitsBeforeSubmitJob", "ExitsBeforeSubmitJob", "NoSubmitJob", "UidFirstJob"]
    results = {}
    for main_class in fleet:  # what a CI step over a fleet of jars does, one export per jar
        results[main_class] = export(built, line, main_class, "--timeout", "3")
    rc, specs, err = results["WaitsBeforeSubmitJob"]
    assert rc == 1 and not specs, err
    assert (
        "error: org.flinkjobgraph.testjobs.WaitsBeforeSubmitJob.main() did not submit a job within 3 s (--timeout): "
        "stopped at org.flinkjobgraph.testjobs.WaitsBeforeSubmitJob.waitForever(WaitsBeforeSubmitJob.java:18), "
        "in java.lang.Thread.sleep; nothing was exported"
    ) in err
    rc, specs, err = results["ExitsBeforeSubmitJob"]
    assert rc == 1 and not specs, err
    assert err.splitlines() == [
        "usage: ExitsBeforeSubmitJob --input PATH",  # what the job printed
        "error: org.flinkjobgraph.testjobs.ExitsBeforeSubmitJob.main() exited with code 3 (System.exit) without "
        "submitting a job: nothing to export",
    ]  # and not the JDK's warning about the security manager that intercepts the exit
    assert results["NoSubmitJob"][0] == 1 and "returned without submitting a job" in results["NoSubmitJob"][2]
    rc, specs, err = results["UidFirstJob"]  # the jar after the stuck ones is exported
    assert rc == 0 and specs, err
    rc, specs, err = export(built, line, "ExitsBeforeSubmitJob", args=["--input", "x"])
    assert rc == 0 and [s["graph_id"] for s in specs] == ["exits-before-submit"], err
    # where the JVM allows no security manager (Java 24+; here forced), a shutdown hook still says it
    b = built[line]
    p = subprocess.run(["java", "-Djava.security.manager=disallow", "-jar", str(b["harness"]), "export", "--jar",
                        str(b["jar"]), "--main-class", "org.flinkjobgraph.testjobs.ExitsBeforeSubmitJob"],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 3 and p.stderr.splitlines()[-1] == (
        "error: org.flinkjobgraph.testjobs.ExitsBeforeSubmitJob.main() called System.exit before submitting a job "
        "(the export's exit code is main()'s): nothing to export"
    ), p.stderr


def test_export_timeout_default_and_the_jdk_warning_filter():
    from pipeline.cli import build_parser
    from pipeline.export.command import DEFAULT_TIMEOUT, harness_args, relay_stderr

    args = build_parser().parse_args(["export", "--jar", __file__, "--main-class", "a.B", "--flink", "2.3"])
    assert DEFAULT_TIMEOUT == 120 and harness_args(args)[-2:] == ["--timeout", "120"]
    bad = build_parser().parse_args(["export", "--jar", __file__, "--main-class", "a.B", "--flink", "2.3",
                                     "--timeout", "-1"])  # fmt: skip
    with pytest.raises(export_cmd.ExportError, match="--timeout expects a number of seconds >= 0, got -1"):
        harness_args(bad)
    jdk = [
        "WARNING: A terminally deprecated method in java.lang.System has been called\n",
        "WARNING: System::setSecurityManager has been called by {} (file:/x.jar)\n",
        "WARNING: Please consider reporting this to the maintainers of {}\n",
        "WARNING: System::setSecurityManager will be removed in a future release\n",
    ]
    ours = [x.format("org.flinkjobgraph.harness.MainRun") for x in jdk]
    theirs = [x.format("com.acme.Job") for x in jdk]  # the job's own call: its warning is shown
    sink = io.StringIO()
    relay_stderr(iter(["a\n", *ours, "b\n", *theirs, "c\n"]), sink)
    assert sink.getvalue() == "".join(["a\n", "b\n", *theirs, "c\n"])


def test_missing_maven_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(export_cmd.ExportError, match=r"Maven \(mvn\) not found on PATH"):
        export_cmd.ensure_harness(export_cmd.harness_dir(), "2.3", rebuild=True, quiet=True)


@pytest.mark.parametrize("line", LINES)
def test_state_backend_and_user_classes(built, line):
    """Graph fields ``state_backend`` and ``user_classes`` (docs/spec-extensions.md): the backend
    Flink starts the job with (Flink's default hashmap when nothing is set; ``-D``; the job's own
    ``env.configure``; 1.x ``env.setStateBackend`` winning over the configuration, as in
    StateBackendLoader.fromApplicationOrConfigOrDefault), and what TypeExtractor makes of the --jar's
    classes: never the --classpath's (the connector) nor Flink's."""
    job = "StateFactsJob"
    rc, specs, err = export(built, line, job, args=("none",))
    assert rc == 0, err
    spec = specs[0]
    assert spec["state_backend"] == "hashmap"
    classes = spec["user_classes"]
    prefix = "org.flinkjobgraph.testjobs.StateFactsJob"
    order = classes[f"{prefix}$Order"]
    assert order["kind"] == "pojo"
    assert order["fields"] == [
        {"name": "color", "type": f"{prefix}$Color"},
        {"name": "counts", "type": "java.util.Map<java.lang.String, java.lang.Long>"},
        {"name": "customer", "type": "java.lang.String"},
        {"name": "id", "type": "long"},
        {"name": "tags", "type": "java.util.List<java.lang.String>"},
    ]
    assert classes[f"{prefix}$Opaque"] == {
        "kind": "generic",
        "fields": [{"name": "x", "type": "long"}, {"name": "y", "type": "java.lang.String"}],
        "no_arg_constructor": "none",
    }
    assert classes[f"{prefix}$Color"] == {"kind": "enum", "enum_constants": ["RED", "GREEN", "BLUE"]}
    assert not {f"{prefix}$Marker", f"{prefix}$Inner", f"{prefix}$1"} & set(classes)
    # the --jar's classes only, never the connector's (--classpath) nor Flink's: the job jar's own classes
    # under org.apache.flink.training (named by the state-styles job's fields) are the job's
    assert all(c.startswith(("org.flinkjobgraph.testjobs.", "org.apache.flink.training.")) for c in classes)
    assert spec["user_classes_skipped"] >= 0 and "user classes:" in err
    rc, specs, err = export(built, line, job, "-D", "state.backend.type=rocksdb", args=("none",))
    assert rc == 0 and specs[0]["state_backend"] == "rocksdb", err
    rc, specs, err = export(built, line, job, args=("configure:rocksdb",))
    assert rc == 0 and specs[0]["state_backend"] == "rocksdb", err
    rc, specs, err = export(built, line, job, "-D", "state.backend.type=rocksdb", args=("object",))
    assert rc == 0, err
    assert specs[0]["state_backend"] == ("hashmap" if line.startswith("1.") else "rocksdb")  # 2.x: no such method
    rc, specs, err = export(built, line, job, "--user-classes-limit", "0", args=("none",))
    assert rc == 0 and "user_classes" not in specs[0], err


@pytest.mark.parametrize("line", LINES)
def test_user_classes_scope(built, line):
    """``user_classes`` describes the job's own packages (the main class's first two package names),
    the classes its job graph's types name (the element type; a window accumulator only the window
    operator's state descriptor names), and what their fields name; a jar class nothing names
    outside those packages only with ``--user-classes-package`` (docs/spec-extensions.md)."""
    rc, specs, err = export(built, line, "ScopeJob")
    assert rc == 0, err
    classes = specs[0]["user_classes"]
    model = "com.example.model."
    assert {model + "Event", model + "Detail", model + "Acc"} <= set(classes)
    assert model + "Unused" not in classes
    assert classes[model + "Event"]["fields"] == [
        {"name": "detail", "type": model + "Detail"},
        {"name": "id", "type": "long"},
    ]
    assert "org.flinkjobgraph.testjobs.StateFactsJob$Order" in classes  # the job's own packages
    assert "packages [org.flinkjobgraph.]" in err
    rc, specs, err = export(built, line, "ScopeJob", "--user-classes-package", "com.example")
    assert rc == 0 and model + "Unused" in specs[0]["user_classes"], err


def flink_avro_jar(line: str) -> Path:
    """The flink-avro jar of ``line`` from Maven Central (through the local Maven repository), in
    the version the restore harness pins for it (harness/restore/pom.xml: Central lacks some
    lines' newest patch). Fetched here, so a fresh machine checks it too instead of skipping."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    pom = ET.parse(HARNESS / "restore" / "pom.xml").getroot()
    version = pom.findtext("m:properties/m:flink.avro.version", namespaces=ns)
    for profile in pom.iterfind("m:profiles/m:profile", ns):
        if profile.findtext("m:id", namespaces=ns) == f"flink-{line}":
            version = profile.findtext("m:properties/m:flink.avro.version", default=version, namespaces=ns)
    jar = Path.home() / f".m2/repository/org/apache/flink/flink-avro/{version}/flink-avro-{version}.jar"
    if not jar.exists():
        subprocess.run(
            ["mvn", "-q", "dependency:get", f"-Dartifact=org.apache.flink:flink-avro:{version}", "-Dtransitive=false"],
            check=True,
        )
    assert jar.exists(), jar
    return jar


@pytest.mark.parametrize("line", LINES)
def test_serializer_modules(built, line):
    """``serializer_modules``: which optional modules with serializer snapshots the job's class
    path loads. flink-avro only when the job brings it; the table runtime (and the CEP library
    it depends on) is on the export's class path as in Flink's lib/; the 1.x Scala API is not."""
    rc, specs, err = export(built, line, "StateFactsJob", args=("none",))
    assert rc == 0, err
    modules = specs[0]["serializer_modules"]
    assert set(modules) == {"flink-avro", "flink-cep", "flink-scala", "flink-table-api-scala", "flink-table-runtime"}
    assert modules["flink-avro"] is False and modules["flink-table-runtime"] is True
    rc, specs, err = export(built, line, "StateFactsJob", "--classpath", str(flink_avro_jar(line)), args=("none",))
    assert rc == 0 and specs[0]["serializer_modules"]["flink-avro"] is True, err
