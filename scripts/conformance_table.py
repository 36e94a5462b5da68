"""README's one conformance table, from the results kept as data in conformance/results/.

One row per supported Flink line, one column per kind of program (DataStream and SQL, each in
streaming and BATCH execution), each cell the newest run of that kind on that line (the highest
seed): programs that matched Flink on every aspect / programs run. A line or kind with no run
shows "-". ``scripts/conformance_all.sh`` runs the matrix; this prints the table it fills.

    python scripts/conformance_table.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = (("DataStream", "STREAMING"), ("DataStream", "BATCH"), ("SQL", "STREAMING"), ("SQL", "BATCH"))
LINES = ("2.3", "2.2", "2.1", "2.0", "1.20", "1.19", "1.18", "1.17", "1.16", "1.15", "1.9")


def _kind(r: dict) -> tuple[str, str]:
    return r.get("program_kind", "DataStream"), r.get("runtime_mode", "STREAMING")


def newest() -> dict[tuple[str, tuple[str, str]], dict]:
    """(line, kind) -> its run with the highest seed; a run split in parts is summed."""
    runs: dict[tuple[str, tuple[str, str], int | None], dict] = {}
    for p in sorted((ROOT / "conformance" / "results").glob("*.json")):
        r = json.loads(p.read_text())
        key = (r["flink_version"], _kind(r), r.get("seed"))
        if key in runs:  # parts of one run (--start): add them up
            a = runs[key]
            runs[key] = {**a, "programs": a["programs"] + r["programs"], "all_match": a["all_match"] and r["all_match"]}
        else:
            runs[key] = r
    out: dict[tuple[str, tuple[str, str]], dict] = {}
    for (line, kind, seed), r in runs.items():
        have = out.get((line, kind))
        if have is None or (seed or 0) > (have.get("seed") or 0):
            out[(line, kind)] = r
    return out


def table() -> str:
    runs = newest()
    header = ["Flink line", "release", *[f"{api} {mode.lower()}" for api, mode in KINDS]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for line in LINES:
        release = next((r["flink_release"] for (v, _), r in runs.items() if v == line), "-")
        cells = []
        for kind in KINDS:
            r = runs.get((line, kind))
            cells.append("-" if r is None else f"{r['programs'] if r['all_match'] else 'NOT ALL'} / {r['programs']}")
        lines.append("| " + " | ".join([line, release, *cells]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
