"""``flink-jobgraph export``: dump a user's Flink job from its jar and main class.

The JVM harness (:mod:`pipeline.export.harness`) runs the job's main() with every job
submission captured -- nothing is executed -- and writes one spec line per submitted job.
This module is the front door: its options, and the harness's command line for them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
from pathlib import Path
from typing import TextIO

from pipeline.export.harness import (
    HARNESS_ENV,
    ExportError,
    ensure_harness,
    harness_dir,
    java_command,
    resolve_maven,
)

DEFAULT_TIMEOUT = 120  # seconds main() may run; the harness's own default is the same
# What the harness may still do once main() is done (Flink's answer with --expected, the user
# classes of a fat jar, the spec lines) before the export is taken for stuck and stopped.
AFTER_MAIN_SECONDS = 300


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``export`` subcommand (added to pipeline/cli.py's parser)."""
    helptext = "run a Flink job's main() with every job submission captured (nothing runs) -> spec JSON lines"
    c = sub.add_parser("export", help=helptext, description=helptext)
    c.add_argument("--jar", required=True, help="the job's jar (thin or fat)")
    c.add_argument("--main-class", required=True, help="the job's main class, e.g. com.acme.OrdersJob")
    c.add_argument("--flink", required=True, help="Flink line the job is built for, e.g. 1.20 or 2.3")
    c.add_argument("--graph-id", help="graph_id of the job (ID#1, ID#2 ... if main() submits several); "
                   "default: the job name")
    c.add_argument("--out", default="-", help="output file (.gz compresses); default stdout")
    c.add_argument("-p", "--parallelism", type=int, help="parallelism.default, like flink run -p")
    c.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE",
                   help="a Flink option, like flink run -D (repeatable)")
    c.add_argument("--config", help="a flink-conf.yaml / config.yaml (-D and -p override it)")
    c.add_argument("--classpath", action="append", default=[], metavar="DIR_OR_JAR",
                   help="extra jar or folder of jars (connectors, formats); repeatable")
    c.add_argument("--maven", action="append", default=[], metavar="GROUP:ARTIFACT:VERSION",
                   help="a dependency from Maven Central with what it needs at runtime, e.g. "
                   "org.apache.flink:flink-connector-kafka:4.0.1-2.0 (repeatable; jars the harness "
                   "already has, Flink's own, are left out)")
    c.add_argument("--expected", action="store_true", help="add Flink's own JobGraph answer to each line")
    c.add_argument("--first", action="store_true", help="stop main() at its first submitted job")
    c.add_argument("--user-classes-package", action="append", default=[], metavar="PREFIX",
                   help="describe the --jar classes of this package too in the graph field user_classes "
                   "(repeatable; '' or '*': every class); by default the main class's first two package "
                   "names, the classes the job graph's types name and the classes their fields name")
    c.add_argument("--user-classes-limit", type=int, metavar="N",
                   help="classes of --jar examined for the graph field user_classes at most (default 20000; "
                   "0 leaves the field out): bounds the export of a fat jar")
    c.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"end the export with an error when main() is still running after SECONDS without "
                   f"submitting a job (one that waits on a socket or sleeps before execute()); default "
                   f"{DEFAULT_TIMEOUT}, 0: no limit")
    c.add_argument("--rebuild", action="store_true", help="rebuild the harness even if it looks current")
    c.add_argument("--harness-dir", help=f"harness sources (default: this checkout's harness/, or ${HARNESS_ENV})")
    c.add_argument("program_args", nargs="*", metavar="-- ARGS", help="arguments for the job's main()")
    return c


def harness_args(args: argparse.Namespace) -> list[str]:
    """The harness's ``export`` arguments for the parsed command line."""
    jar = Path(args.jar)
    if not jar.is_file():
        raise ExportError(f"--jar {jar}: no such file")
    out = ["export", "--main-class", args.main_class, "--jar", str(jar.resolve()), "--out", args.out]
    for cp in args.classpath:
        if not Path(cp).exists():
            raise ExportError(f"--classpath {cp}: no such file or folder")
        out += ["--classpath", str(Path(cp).resolve())]
    if args.graph_id:
        out += ["--graph-id", args.graph_id]
    if args.parallelism is not None:
        if args.parallelism < 1:
            raise ExportError(f"-p expects a positive integer, got {args.parallelism}")
        out += ["-p", str(args.parallelism)]
    for kv in args.dynamic:
        if "=" not in kv:
            raise ExportError(f"-D expects KEY=VALUE, got {kv!r}")
        out += ["-D", kv]
    if args.config:
        if not Path(args.config).is_file():
            raise ExportError(f"--config {args.config}: no such file")
        out += ["--config", str(Path(args.config).resolve())]
    if args.expected:
        out.append("--expected")
    if args.first:
        out.append("--first")
    for prefix in getattr(args, "user_classes_package", None) or []:
        out += ["--user-classes-package", prefix]
    if getattr(args, "user_classes_limit", None) is not None:
        if args.user_classes_limit < 0:
            raise ExportError(f"--user-classes-limit expects a number >= 0, got {args.user_classes_limit}")
        out += ["--user-classes-limit", str(args.user_classes_limit)]
    timeout = getattr(args, "timeout", DEFAULT_TIMEOUT)
    if timeout < 0:
        raise ExportError(f"--timeout expects a number of seconds >= 0, got {timeout}")
    out += ["--timeout", str(timeout)]
    if args.program_args:
        out += ["--", *args.program_args]
    return out


def run(args: argparse.Namespace) -> int:
    """Exit code: 0 exported; 1 the job or the harness failed (its one-line error is on stderr); 2 usage."""
    try:
        hargs = harness_args(args)
        jar = ensure_harness(harness_dir(args.harness_dir), args.flink, rebuild=args.rebuild)
        cmd = java_command(jar)
        if args.maven:
            deps = resolve_maven(args.maven, jar)
            hargs[1:1] = ["--classpath", str(deps)]
    except ExportError as e:
        print(f"flink-jobgraph export: {e}", file=sys.stderr)
        return 2
    # The harness stops main() at --timeout itself; this limit only catches a harness that cannot
    # end (a shutdown hook of the job's that never returns).
    limit = args.timeout + AFTER_MAIN_SECONDS if args.timeout else None
    proc = subprocess.Popen([*cmd, *hargs], stderr=subprocess.PIPE, text=True, errors="replace")
    relay = threading.Thread(target=relay_stderr, args=(proc.stderr, sys.stderr), daemon=True)
    relay.start()
    try:
        code = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    relay.join(timeout=10)
    if code is None:
        print(f"flink-jobgraph export: {args.main_class}: the harness did not end within {limit} s "
              f"(--timeout {args.timeout} + {AFTER_MAIN_SECONDS} s after main()); stopped", file=sys.stderr)
        return 1
    return code


# Java 17 - 23 print this on every System.setSecurityManager, which the harness calls to intercept
# a main()'s System.exit (MainRun.java): not the user's business, and no way to silence it there.
_JDK_WARNING = (
    "WARNING: A terminally deprecated method in java.lang.System has been called",
    "WARNING: System::setSecurityManager has been called by org.flinkjobgraph.harness.MainRun ",
    "WARNING: Please consider reporting this to the maintainers of org.flinkjobgraph.harness.MainRun",
    "WARNING: System::setSecurityManager will be removed in a future release",
)


def relay_stderr(source: TextIO, sink: TextIO) -> None:
    """The harness's stderr, line by line as it comes, less the JDK's warning about the harness's
    own security manager (any other warning, a job's own setSecurityManager's too, passes)."""
    held: list[str] = []
    for line in source:
        if len(held) < len(_JDK_WARNING) and line.startswith(_JDK_WARNING[len(held)]):
            held.append(line)
            if len(held) == len(_JDK_WARNING):
                held = []  # the whole warning, about the harness: dropped
            continue
        sink.writelines(held)
        held = []
        sink.write(line)
        sink.flush()
    sink.writelines(held)
    sink.flush()
