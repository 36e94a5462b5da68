"""The export harness (``harness/``, Java, one Maven profile per Flink line): found, built
with Maven when missing or older than its sources, and started with ``java``; and a job's
Maven dependencies resolved from Maven Central. Every usual mistake (no java, no mvn, an
unknown line, a failed build) is an :class:`ExportError` with a one-line message.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HARNESS_ENV = "FLINK_JOBGRAPH_HARNESS"
JAR_NAME = "flink-jobgraph-harness.jar"
# Module opens 1.9's ClosureCleaner needs on Java 17 (java -jar honours the manifest's Add-Opens;
# repeated here so a harness started any other way behaves the same).
ADD_OPENS = ("java.base/java.lang", "java.base/java.util")
DEPS_CACHE_ENV = "FLINK_JOBGRAPH_DEPS_CACHE"
COORDINATE = re.compile(r"^[\w.\-]+:[\w.\-]+(:[\w.\-]+){1,2}$")  # group:artifact[:classifier]:version


class ExportError(Exception):
    """A problem the user can fix; printed as one line."""


def harness_dir(override: str | None = None) -> Path:
    """The harness sources: --harness-dir, $FLINK_JOBGRAPH_HARNESS, or the checkout this module is in."""
    raw = override or os.environ.get(HARNESS_ENV)
    d = Path(raw) if raw else Path(__file__).resolve().parents[2] / "harness"
    if not (d / "pom.xml").is_file():
        raise ExportError(
            f"harness sources not found at {d} (no pom.xml): run from a flink-jobgraph checkout, "
            f"or pass --harness-dir / set {HARNESS_ENV}"
        )
    return d


def supported_lines(hdir: Path) -> list[str]:
    """Flink lines with a Maven profile (``flink-<line>``) in the harness pom."""
    return re.findall(r"<profile><id>flink-([0-9.]+)</id>", (hdir / "pom.xml").read_text(encoding="utf-8"))


def harness_jar(hdir: Path, line: str) -> Path:
    return hdir / "target" / f"flink-{line}" / JAR_NAME


def _newest_source(hdir: Path) -> float:
    """Newest mtime among the files a build of the harness reads (restore/ is a separate project)."""
    newest = (hdir / "pom.xml").stat().st_mtime
    for p in (hdir / "src").rglob("*"):
        if p.is_file():
            newest = max(newest, p.stat().st_mtime)
    return newest


def ensure_harness(hdir: Path, line: str, rebuild: bool = False, quiet: bool = False) -> Path:
    """The harness jar of ``line``, built with Maven when missing or older than its sources."""
    lines = supported_lines(hdir)
    if line not in lines:
        raise ExportError(f"Flink line {line!r} is not supported; supported: {', '.join(lines)}")
    jar = harness_jar(hdir, line)
    if not rebuild and jar.is_file() and jar.stat().st_mtime >= _newest_source(hdir):
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ExportError(
            "Maven (mvn) not found on PATH: it builds the harness for Flink "
            f"{line} (Debian: apt-get install maven), or build it yourself: "
            f"mvn -q -f {hdir / 'pom.xml'} -Pflink-{line} package"
        )
    if not quiet:
        print(f"building the harness for Flink {line} (first build downloads Flink from Maven Central) ...",
              file=sys.stderr)
    cmd = [mvn, "-q", "-f", str(hdir / "pom.xml"), f"-Pflink-{line}", "package"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not jar.is_file():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise ExportError(f"harness build failed ({' '.join(cmd)}):\n{tail}")
    # Maven leaves the jar as it was when only the test programs changed (src/testjobs): mark it
    # built now, or every later export would build again
    os.utime(jar)
    return jar


def _artifact_id(jar_name: str) -> str:
    """``flink-core-2.3.0.jar`` -> ``flink-core``: the name up to the first ``-<digit>``."""
    m = re.match(r"^(.+?)-\d", jar_name)
    return m.group(1) if m else jar_name.removesuffix(".jar")


def _pom(coordinates: list[str]) -> str:
    deps = []
    for c in coordinates:
        parts = c.split(":")
        group, artifact, version = parts[0], parts[1], parts[-1]
        classifier = f"<classifier>{parts[2]}</classifier>" if len(parts) == 4 else ""
        deps.append(f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
                    f"<version>{version}</version>{classifier}</dependency>")
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
            "<groupId>flink-jobgraph</groupId><artifactId>job-dependencies</artifactId><version>0</version>"
            f"<dependencies>{''.join(deps)}</dependencies></project>\n")


def resolve_maven(coordinates: list[str], harness_jar_path: Path, cache: Path | None = None) -> Path:
    """A folder with the jars of ``coordinates`` and what they need at runtime, from Maven Central.

    Transitive runtime dependencies come along (a Kafka connector brings kafka-clients), except
    the artifacts the harness already ships (Flink itself, its shaded libraries): a second copy
    of Flink's classes on the class path, of another version, breaks the export in ways that
    name neither jar. Connectors declare Flink as ``provided``, so usually nothing is left out.
    Resolved once per set of coordinates into a cache folder (``$FLINK_JOBGRAPH_DEPS_CACHE`` or
    ``~/.cache/flink-jobgraph/deps``).
    """
    bad = [c for c in coordinates if not COORDINATE.match(c)]
    if bad:
        raise ExportError(
            f"--maven expects GROUP:ARTIFACT:VERSION (or GROUP:ARTIFACT:CLASSIFIER:VERSION), got {bad[0]!r}"
        )
    shipped = sorted({_artifact_id(j.name) for j in (harness_jar_path.parent / "lib").glob("*.jar")})
    key = hashlib.sha256("\n".join([*sorted(set(coordinates)), *shipped]).encode()).hexdigest()[:16]
    root = cache or Path(os.environ.get(DEPS_CACHE_ENV) or Path.home() / ".cache" / "flink-jobgraph" / "deps")
    folder = root / key
    jars = folder / "jars"
    if (folder / ".resolved").is_file():
        return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ExportError("Maven (mvn) not found on PATH: it resolves --maven coordinates "
                          "(Debian: apt-get install maven), or pass the jars with --classpath")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pom.xml").write_text(_pom(coordinates), encoding="utf-8")
    cmd = [mvn, "-q", "-f", str(folder / "pom.xml"), "dependency:copy-dependencies", "-DincludeScope=runtime",
           f"-DoutputDirectory={jars}", f"-DexcludeArtifactIds={','.join(shipped)}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        said = (proc.stdout + proc.stderr).splitlines()
        lines = [ln for ln in said if "[ERROR]" in ln] or said
        why = lines[0].replace("[ERROR]", "").strip() if lines else f"mvn exited with {proc.returncode}"
        raise ExportError(f"could not resolve {', '.join(coordinates)} from Maven: {why}")
    (folder / ".resolved").write_text("\n".join(sorted(p.name for p in jars.glob("*.jar"))) + "\n", encoding="utf-8")
    return jars


def java_command(jar: Path) -> list[str]:
    java = shutil.which("java")
    if java is None:
        raise ExportError("java not found on PATH: install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)")
    opens = [a for o in ADD_OPENS for a in ("--add-opens", f"{o}=ALL-UNNAMED")]
    # The harness intercepts a main()'s System.exit with a security manager, as Flink's own
    # FlinkSecurityManager does; Java 18 to 23 allow one only when asked (17 does by default).
    return [java, *opens, "-Djava.security.manager=allow", "-jar", str(jar)]
