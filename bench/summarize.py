"""Markdown table of the benchmark results: python bench/summarize.py [bench/results/*.json ...]

code = git commit / sha256 of the code snapshot the run used (pipeline/, udfs/, conf/);
"ingest first" = compute ran after ingest in the same session (warm JVM and workers);
a * after the fleet = Flink's timing was attached from bench/data/<fleet>.flink.json afterwards.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
# staged executor: one Spark stage per step; fused: "read+compute" is read, validate,
# chainability, hashing and vertices+edges in one Spark stage
STAGES = [
    "read+validate",
    "chainability",
    "hashing",
    "read+compute",
    "chains",
    "chain check",
    "vertices+edges",
    "delta write",
]


def _f(x, fmt: str = "{:.1f}") -> str:
    return "-" if x is None else fmt.format(x)


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] or sorted(RESULTS.glob("2*.json"))
    rows = []
    for f in files:
        r = json.loads(f.read_text())
        if "pipeline_seconds" not in r:
            continue
        flink_f = RESULTS.parent / "data" / f"{r['fleet']}.flink.json"
        if r.get("flink_seconds") is None and flink_f.exists() and r.get("pipeline_seconds"):
            # Flink's timing finished after the run: attach it here (marked with *)
            fl = json.loads(flink_f.read_text())
            r["flink_seconds"], r["flink_cpu_seconds"] = fl["flink_seconds"], fl["flink_cpu_seconds"]
            r["ratio"] = r["pipeline_seconds"] / fl["flink_seconds"]
            if r.get("pipeline_cpu_seconds"):
                r["ratio_cpu"] = r["pipeline_cpu_seconds"] / fl["flink_cpu_seconds"]
            r["fleet"] += "*"
        rows.append(r)
    rows.sort(key=lambda r: (r.get("stream_nodes") or 0, r["timestamp"]))
    head = (
        ["run", "code", "graphs", "stream nodes", "executor", "ingest first", "pipeline s", "CPU s"]
        + [f"{s} s" for s in STAGES]
        + ["Flink s (CPU s)", "ratio", "ratio CPU", "bfs/layers/chain rounds", "peak MB", "load 1m"]
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        st = r.get("stage_seconds") or {}
        ss = r.get("supersteps") or {}
        cells = [
            f"{r['timestamp']} {r['fleet']}",
            f"{(r.get('git_commit') or '')[:7]}/{(r.get('code_sha256') or '-')[:6]}",
            str(r.get("graphs")),
            f"{r.get('stream_nodes') or 0:,}",
            str(r.get("executor") or (r.get("settings") or {}).get("hashing", {}).get("executor")),
            "yes" if r.get("ingest_seconds") else "no",
            _f(r.get("pipeline_seconds")) if not r.get("failure") else "FAILED",
            _f(r.get("pipeline_cpu_seconds")),
            *[_f(st.get(s)) for s in STAGES],
            f"{_f(r.get('flink_seconds'), '{:.2f}')} ({_f(r.get('flink_cpu_seconds'), '{:.2f}')})",
            _f(r.get("ratio")),
            _f(r.get("ratio_cpu")),
            f"{ss.get('bfs_levels_max')}/{ss.get('hash_layers_max')}/{ss.get('chain_rounds')}",
            _f(r.get("peak_memory_mb"), "{:.0f}"),
            _f((r.get("loadavg_before") or [None])[0]),
        ]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
