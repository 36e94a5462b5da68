"""Summary of a statetypes set (the ``shared/vectors/statetypes`` format), like its ``.summary.txt``.

Why: a set of real typed-state restores is only useful as test data if it covers the verdicts,
failure stages, state kinds, value and key types, type edits and snapshot kinds the state half
of the restore check must handle; this prints those counts (by subject state, value type, key
type, snapshot, edit, failure message) so a reader sees the coverage at a glance.

    .venv/bin/python scripts/statetypes_summary.py SET.jsonl.gz [--log GEN.log ...] [> SET.summary.txt]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


def read_cases(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def verdict(c: dict[str, Any]) -> str:
    return c["verdict"] if c["verdict"] == "RESTORED" else f"FAILED/{c['failure_stage']}"


def mix(cases: list[dict[str, Any]]) -> str:
    n = Counter(verdict(c) for c in cases)
    return ", ".join(f"{k} {v}" for k, v in sorted(n.items()))


def table(title: str, groups: dict[Any, list[dict[str, Any]]], fmt) -> list[str]:
    out = ["", title]
    for key in sorted(groups, key=lambda k: tuple(str(x) for x in (k if isinstance(k, tuple) else (k,)))):
        out.append(f"  {fmt(key)}  {len(groups[key]):3d}  {mix(groups[key])}")
    return out


def snapshot_label(c: dict[str, Any]) -> tuple[str, ...]:
    rt = c["runtime"]
    kind = rt.get("savepoint_format") or ("CHECKPOINT-incr" if rt.get("incremental") else "CHECKPOINT")
    return rt["state_backend"], kind, rt["inline_threshold"]


def declarations(cases: list[dict[str, Any]]) -> list[str]:
    """The sets from seed 41 on: how states are declared, the declaration edits, what came back."""
    decl = [c for c in cases if any("style" in s for s in c["states_v1"])]
    if not decl:
        return []
    out: list[str] = []
    for field, title in (("style", "declaration styles"), ("type_expr", "type expressions")):
        n: Counter = Counter()
        for c in decl:
            for side in ("v1", "v2"):
                for s in c[f"states_{side}"]:
                    n[(s[field], side)] += 1
        out += ["", f"{title} (states of v1 / v2):"]
        for k in sorted({k for k, _ in n}):
            out.append(f"  {k:20s} {n[(k, 'v1')]:4d} / {n[(k, 'v2')]:4d}")
    g = defaultdict(list)
    for c in decl:
        for s in c["states_v1"]:
            g[(s["backend"], s["state_kind"], s["registration"], "ttl" if s.get("ttl") else "-")].append(c)
    out += table(
        "v1 states by backend, kind, registration, TTL (cases, verdicts):",
        {k: list({id(c): c for c in v}.values()) for k, v in g.items()},
        lambda k: f"{k[0]:9s}{k[1]:12s}{k[2]:16s}{k[3]:4s}",
    )
    g = defaultdict(list)
    for c in decl:
        if c["subject"]["edit"] in ("ttl_on", "ttl_off", "ttl_changed"):
            g[(c["subject"]["edit"], c["runtime"]["state_backend"])].append(c)
    out += table("TTL edits (edit, backend):", g, lambda k: f"{k[0]:12s}{k[1]:9s}")
    restored: Counter = Counter()
    kept: Counter = Counter()
    for c in decl:
        if c["verdict"] != "RESTORED":
            continue
        for side in ("v1", "v2"):
            for s in c[f"states_{side}"]:
                r = s.get("restored") or {}
                if side == "v2" and not str(r.get("outcome", "")).startswith("new"):
                    continue
                restored[(side, r.get("outcome"), str(r.get("lost")))] += 1
                if r.get("outcome") == "not_declared":
                    kept[(c["runtime"]["state_backend"], str(r.get("kept_in_next_savepoint")))] += 1
    out += [
        "",
        "restored values (RESTORED cases; v1 states, and v2 states v1 did not have): side, outcome, lost -> states",
    ]
    out += [f"  {sd} {o:14s} lost={lost:5s} {k:5d}" for (sd, o, lost), k in sorted(restored.items(), key=str)]
    out += [
        "  states v2 does not declare, still in v2's own savepoint (backend, kept) -> states: "
        + ", ".join(f"{b} {k}: {n}" for (b, k), n in sorted(kept.items()))
    ]
    return out


def summarize(path: Path, logs: list[Path] | None = None) -> str:
    cases = read_cases(path)
    n = len(cases)
    v1 = sorted({c["flink_version_v1"] for c in cases})
    v2 = sorted({c["flink_version_v2"] for c in cases})
    out = [f"=== {path.name}: {n} cases, Flink {', '.join(v1)} -> {', '.join(v2)}"]
    out.append(f"verdicts: {dict(sorted(Counter(verdict(c) for c in cases).items()))}")

    g: dict[Any, list] = defaultdict(list)
    for c in cases:
        s = c["subject"]
        g[(s["backend"], s["state_kind"], s["value_type"])].append(c)
    out += table("by subject state (backend, kind, value type):", g, lambda k: f"{k[0]:9s}{k[1]:12s}{k[2]:10s}")

    g = defaultdict(list)
    for c in cases:
        g[c["subject"]["value_type"]].append(c)
    out += table("by subject value type:", g, lambda k: f"{k:12s}")

    g = defaultdict(list)
    for c in cases:
        g[c["subject"]["key_type"] or "-"].append(c)
    out += table("by key type of the subject state:", g, lambda k: f"{k:12s}")

    g = defaultdict(list)
    for c in cases:
        for t in sorted({s["value_type"] for s in c["states_v1"]}):
            g[t].append(c)
    out += table(
        "cases with at least one v1 state of the type (several states per case possible):",
        g,
        lambda k: f"any state of type {k:10s}",
    )

    g = defaultdict(list)
    for c in cases:
        g[(c["subject"]["backend"], c["subject"]["state_kind"])].append(c)
    out += table("by subject state kind:", g, lambda k: f"{k[0]:9s}{k[1]:12s}")

    g = defaultdict(list)
    for c in cases:
        g[snapshot_label(c)].append(c)
    out += table(
        "by snapshot (backend, savepoint format or checkpoint, inline threshold):",
        g,
        lambda k: f"{k[0]:8s} {k[1]:15s} inline {k[2]:4s}",
    )

    g = defaultdict(list)
    for c in cases:
        g[c["runtime"]["taken_by"]].append(c)
    out += table("by how the snapshot was taken:", g, lambda k: f"{k:26s}")

    g = defaultdict(list)
    for c in cases:
        g[c["subject"].get("edit") or "+".join(e["type"] for e in c["edits"]) or "none"].append(c)
    out += table("by edit:", g, lambda k: f"{k:36s}")

    g = defaultdict(list)
    for c in cases:
        for e in c["edits"] or [{"type": "none"}]:
            g[e["type"]].append(c)
    out += table("by edit type (every edit of a case):", g, lambda k: f"{k:26s}")

    fails: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for c in cases:
        if c["verdict"] == "FAILED":
            msg = (c["error_message"] or "").replace("\n", " ")
            fails[(c["failure_stage"], f"{c['error_class']}: {msg}"[:200])][c["subject"]["value_type"]] += 1
    out += ["", "failures (stage, root error class: message) -> subject value types:"]
    for (stage, msg), cnt in sorted(fails.items()):
        out.append(
            f"  {stage:12s} {msg:200s} {sum(cnt.values()):3d}  " + ", ".join(f"{k} {v}" for k, v in sorted(cnt.items()))
        )

    probes: Counter = Counter()
    for c in cases:
        for counts in c["state_probe"].values():
            for outcome, k in counts.items():
                probes[(verdict(c), outcome)] += k
    out += ["", "state probe (first accesses after the restore, by verdict and outcome):"]
    out += [f"  {v:22s} {o:14s} {k:6d}" for (v, o), k in sorted(probes.items())]
    checks = Counter(str(c["values_check"]) for c in cases)
    out.append(f"  values_check: {dict(sorted(checks.items()))}")

    out += declarations(cases)

    notes: Counter = Counter()
    for c in cases:
        if c["verdict"] == "RESTORED":
            for note in c["notes"]:
                text = note.split(":")[0] if note.startswith("probe incomplete") else note
                for s in c["states_v1"] + c["states_v2"]:
                    text = text.replace(f"'{s['state_name']}'", "'…'").replace(f"'{s['operator_key']}'", "'…'")
                notes[text[:170]] += 1
    out += ["", "notes on RESTORED cases:"]
    out += [f"  {k:4d} x {t}" for t, k in sorted(notes.items(), key=lambda x: -x[1])]

    t1 = [sum(v for v in c["meta"]["timing"]["v1"].values()) for c in cases]
    t2 = [sum(v for v in c["meta"]["timing"]["v2"].values()) for c in cases]
    out += [
        "",
        f"timing (sum of measured steps): v1 side {sum(t1) / 1000:.0f} s, v2 side {sum(t2) / 1000:.0f} s; "
        f"per case median {statistics.median([a + b for a, b in zip(t1, t2, strict=False)]) / 1000:.2f} s, "
        f"max {max(a + b for a, b in zip(t1, t2, strict=False)) / 1000:.2f} s"
        if cases
        else "timing: no cases",
    ]
    sizes = [sum(f["bytes"] for f in c["savepoint"]["files"]) for c in cases]
    files = [len(c["savepoint"]["files"]) for c in cases]
    if cases:
        out.append(
            f"savepoint sizes: median {statistics.median(sizes):.0f} B, max {max(sizes)} B; "
            f"files per savepoint {min(files)}-{max(files)}"
        )
    for log in logs or []:
        if log.exists():
            lines = log.read_text().splitlines()
            keep = [x for x in lines if "attempt" in x or "giving up" in x or x.startswith("flink ")]
            out += ["", f"== {log.name} (generator summary and retried cases)"] + keep
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", type=Path)
    ap.add_argument("--log", type=Path, action="append", default=[])
    a = ap.parse_args(argv)
    sys.stdout.write(summarize(a.cases, a.log))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
