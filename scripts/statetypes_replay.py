"""Restore recorded statetypes cases again on real Flink, several times each: is Flink's outcome a
function of the saved bytes, or of a race?

    .venv/bin/python scripts/statetypes_replay.py conformance/statetypes/statetypes-2.3-s41.jsonl.gz \
        st-2.3-s41-00012 st-2.3-s41-00049 [--repeat 5] [--out runs.jsonl] [--work DIR]

Each case's v2 is restored from the case's own archived snapshot (a retained checkpoint's files in
its job's shared folder are put back at the absolute paths its ``_metadata`` names, and removed
afterwards) by the harness build of the line v2 ran on (``harness/restore/target/flink-<line>``,
its ``statetypes-replay`` command, ``StReplay.java``), ``--repeat`` times, each run a fresh job on
one MiniCluster. Each run is read as the agreement reads Flink's outcome (``tests/state_vectors.py``
``recorded``: verdict, failure kind, operator, message, stage), and printed against the recorded
run: a case is **stable** when every run gave the recorded outcome on all five aspects.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import state_vectors as sv  # noqa: E402
from udfs.savepoint.metadata import parse_metadata  # noqa: E402

_FIELDS = ("verdict", "failure_stage", "error_class", "error_message", "error_chain", "task_states")


def read_cases(path: Path, ids: list[str]) -> list[dict[str, Any]]:
    name = path.name.removesuffix(".jsonl.gz")
    with gzip.open(path, "rt") as f:
        cases = {c["case_id"]: dict(c, _set=name) for c in map(json.loads, f) if c["case_id"] in ids}
    missing = [i for i in ids if i not in cases]
    if missing:
        raise SystemExit(f"not in {path}: {missing}")
    return [cases[i] for i in ids]


def absolute_files(folder: Path) -> list[tuple[Path, Path]]:
    """(where the ``_metadata`` names a file, the unpacked copy): a retained checkpoint's shared
    files are named by absolute path; the archive holds them flat in the checkpoint's folder."""
    md = parse_metadata((folder / "_metadata").read_bytes())
    out = []
    for f in md.files:
        path = f.ref.path or ""
        if f.ref.location == "relative" or not path.startswith(("file:", "/")):
            continue
        target = Path(path.removeprefix("file://").removeprefix("file:"))
        out.append((target, folder / target.name))
    return out


def put_back(folder: Path) -> list[Path]:
    """Copy the absolutely named files where the checkpoint names them; the files created."""
    created = []
    for target, copy in absolute_files(folder):
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(copy, target)
        created.append(target)
    return created


def replay(case: dict[str, Any], set_dir: Path, repeat: int, work: Path) -> tuple[list[dict[str, Any]], Path]:
    """Runs v2 ``repeat`` times; the runs' outcomes and the unpacked snapshot folder."""
    case_work = work / case["case_id"]
    folder = sv_unpack(case, set_dir, case_work / "snapshot")
    created = put_back(folder)
    lines = []
    for i in range(repeat):
        rec = {k: v for k, v in case.items() if not k.startswith("_")}
        rec["_run"] = i
        rec["_replay"] = {"pointer": str(folder), "case_dir": str(case_work / f"run-{i}")}
        lines.append(json.dumps(rec))
    inp, out = case_work / "in.jsonl.gz", case_work / "out.jsonl.gz"
    with gzip.open(inp, "wt") as f:
        f.write("\n".join(lines) + "\n")
    line = ".".join(case["flink_version_v2"].split(".")[:2])
    jar = ROOT / "harness" / "restore" / "target" / f"flink-{line}" / "flink-jobgraph-restore.jar"
    cmd = ["nice", "java", "-jar", str(jar), "statetypes-replay", "--in", str(inp), "--cases-dir",
           str(case_work / "cases"), "--out", str(out)]  # fmt: skip
    try:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    finally:
        for p in created:
            p.unlink(missing_ok=True)
    with gzip.open(out, "rt") as f:
        return [json.loads(x) for x in f if x.strip()], folder


def sv_unpack(case: dict[str, Any], set_dir: Path, dest: Path) -> Path:
    import tarfile

    with tarfile.open(set_dir / case["savepoint"]["archive"]) as tar:
        tar.extractall(dest, filter="data")
    return dest / case["savepoint"]["dir_name"]


def outcome(case: dict[str, Any], run: dict[str, Any] | None, ci: sv.CaseInputs) -> dict[str, Any]:
    """The five aspects as the agreement reads them, of the recorded run (``run`` None) or a replay."""
    c = dict(case)
    if run is not None:
        c.update({k: run.get(k) for k in _FIELDS})
        if c["verdict"] == "FAILED":
            c["task_states"] = c.get("task_states") or ""
            c["error_chain"] = c.get("error_chain") or []
    if c["verdict"] != "FAILED":
        c["verdict"] = "RESTORED"
    return sv.recorded(c, ci)


def report(case: dict[str, Any], runs: list[dict[str, Any]], folder: Path) -> tuple[str, bool]:
    ci = sv.inputs(case, folder)
    want = outcome(case, None, ci)
    lines = [f"{case['case_id']} {sv_edits(case)}", f"  recorded: {_text(want)}"]
    stable = True
    for r in runs:
        if r.get("replay_error"):
            lines.append(f"  run {r['run']}: replay error {r['replay_error']}")
            stable = False
            continue
        got = outcome(case, r, ci)
        same = got == want
        stable &= same
        lines.append(f"  run {r['run']}: {'same' if same else 'DIFFERS: ' + _text(got)}")
    lines.insert(1, f"  {'stable' if stable else 'NOT STABLE'} over {len(runs)} runs")
    return "\n".join(lines), stable


def sv_edits(case: dict[str, Any]) -> str:
    from scripts.state_agreement import edits_text

    return edits_text(case)


def _text(o: dict[str, Any]) -> str:
    msg = (o.get("message") or "")[:160]
    return f"{o['verdict']} {o.get('failure')} op={o.get('operator_id')} stage={o.get('failure_stage')} msg={msg!r}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set", type=Path)
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, help="append every run's raw outcome here (JSON lines)")
    ap.add_argument("--work", type=Path)
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="st-replay-"))
    set_dir = args.set.parent / args.set.name.removesuffix(".jsonl.gz")
    unstable = 0
    try:
        for case in read_cases(args.set, args.cases):
            runs, folder = replay(case, set_dir, args.repeat, work)
            text, stable = report(case, runs, folder)
            unstable += not stable
            print(text, flush=True)
            if args.out is not None:
                with args.out.open("a") as f:
                    for r in runs:
                        f.write(json.dumps(r) + "\n")
    finally:
        if args.work is None and not os.environ.get("KEEP_REPLAY"):
            shutil.rmtree(work, ignore_errors=True)
    return 1 if unstable else 0


if __name__ == "__main__":
    sys.exit(main())
