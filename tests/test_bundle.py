"""The cluster bundle: the wheel builds, carries conf/, installs in a fresh venv and runs;
jobs/databricks.yml names only things the wheel and the CLI have.

One wheel build per test session (a copy of the packaging inputs in a tmp dir, so the
working tree gets no build/ or egg-info), ``--no-isolation`` so nothing is downloaded.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from pipeline.cli import build_parser
from pipeline.version import __version__

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "jobs" / "databricks.yml"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    shutil.copy(ROOT / "pyproject.toml", src)
    for folder in ("pipeline", "udfs", "conf"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "jvm"))
    dist = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [whl] = dist.glob("*.whl")
    return whl


def _entry_points(whl: Path) -> dict[str, str]:
    with zipfile.ZipFile(whl) as z:
        [name] = [n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = z.read(name).decode()
    section, out = None, {}
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line and section == "console_scripts":
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def test_wheel_carries_the_code_and_conf(wheel: Path) -> None:
    assert wheel.name == f"flink_jobgraph-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for f in [*(ROOT / "conf").glob("*.json"), *(ROOT / "conf").glob("*.properties")]:
            assert z.read(f"pipeline/conf/{f.name}") == f.read_bytes()
        profiles = sorted((ROOT / "conf" / "profiles").glob("*.json"))
        assert profiles
        for f in profiles:
            assert z.read(f"pipeline/conf/profiles/{f.name}") == f.read_bytes()
        for pkg in ("pipeline", "udfs"):
            for f in (ROOT / pkg).rglob("*.py"):  # subpackages too (udfs/savepoint)
                if "__pycache__" not in f.parts:
                    assert f.relative_to(ROOT).as_posix() in names
        metadata = z.read(f"flink_jobgraph-{__version__}.dist-info/METADATA").decode()
    assert f"Version: {__version__}" in metadata
    # A cluster keeps its own Spark and Delta: they are only in the "spark" extra.
    requires = [ln for ln in metadata.splitlines() if ln.startswith("Requires-Dist:")]
    assert not [r for r in requires if re.search(r"\b(pyspark|delta-spark)\b", r) and "extra ==" not in r]
    assert _entry_points(wheel) == {"flink-jobgraph": "pipeline.cli:main"}


def test_wheel_installs_in_a_fresh_venv_and_runs(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # No pip inside (fast); the project's pip installs into it. No Spark needed for --version
    # and --help: the CLI imports Spark only when a command runs.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)],
        check=True,
        timeout=300,
    )
    exe = venv / "bin" / "flink-jobgraph"
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"flink-jobgraph {__version__}"
    # --help lists the Flink versions from conf/profiles: found inside the installed package.
    helptext = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert helptext.returncode == 0, helptext.stderr
    assert "1.20" in helptext.stdout and "2.3" in helptext.stdout
    where = subprocess.run(
        [str(py), "-c", "from pipeline.settings import SETTINGS_FILE; print(SETTINGS_FILE)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert where.stdout.strip().startswith(str(venv)), where.stdout + where.stderr


def _defaults(bundle: dict, value: str) -> str:
    return re.sub(r"\$\{var\.(\w+)\}", lambda m: str(bundle["variables"][m.group(1)]["default"]), value)


def test_bundle_names_only_what_the_wheel_and_cli_have(wheel: Path) -> None:
    bundle = yaml.safe_load(BUNDLE.read_text())
    assert bundle["bundle"]["name"] == "flink-jobgraph"
    [(art_name, artifact)] = bundle["artifacts"].items()
    assert artifact["type"] == "whl" and artifact["build"] == "python -m build --wheel"
    bundle_root = BUNDLE.parent
    assert (bundle_root / artifact["path"] / "pyproject.toml").resolve() == (ROOT / "pyproject.toml").resolve()

    [job] = bundle["resources"]["jobs"].values()
    assert job["schedule"]["quartz_cron_expression"].split()[1:3] == ["0", "2"]  # nightly, 02:00
    clusters = {c["job_cluster_key"]: c["new_cluster"] for c in job["job_clusters"]}
    for cluster in clusters.values():
        # an ML runtime (GraphFrames) on Spark 3.5 / Scala 2.12, the line our pins are built for
        assert re.fullmatch(r"15\.4\.x-cpu-ml-scala2\.12", cluster["spark_version"])
    tasks = {t["task_key"]: t for t in job["tasks"]}
    assert list(tasks) == ["compute", "check_restore"]
    assert tasks["check_restore"]["depends_on"] == [{"task_key": "compute"}]
    entry_points = _entry_points(wheel)
    parser = build_parser()
    for task in tasks.values():
        assert task["job_cluster_key"] in clusters
        [lib] = task["libraries"]
        # the library glob, relative to the bundle root, matches the wheel `build` makes in ../dist
        assert (bundle_root / lib["whl"]).parent.resolve() == (bundle_root / artifact["path"] / "dist").resolve()
        assert fnmatch.fnmatch(wheel.name, Path(lib["whl"]).name)
        wt = task["python_wheel_task"]
        assert wt["package_name"] == wheel.name.split("-")[0]
        assert wt["entry_point"] in entry_points
        args = parser.parse_args([_defaults(bundle, str(p)) for p in wt["parameters"]])  # exits on a bad option
        assert args.command == task["task_key"].replace("_", "-")
    compute_params = tasks["compute"]["python_wheel_task"]["parameters"]
    compute = parser.parse_args([_defaults(bundle, str(p)) for p in compute_params])
    assert (compute.database, compute.catalog) == ("flink_jobgraph", "main")
