"""Summary of a restore-case set (the ``shared/vectors/restore`` format), like its ``*.summary.txt``.

Why: a set of real savepoints and Flink verdicts is only useful as test data if it covers the
verdicts, failure kinds, state-handle types and ``_metadata`` format versions the restore check
must handle; this prints those counts so a reader can see the coverage at a glance.

    .venv/bin/python scripts/restore_cases_summary.py CASES.jsonl.gz [--log GEN.log] [> CASES.summary.txt]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_ID = re.compile(r"\b[0-9a-f]{32}\b")
_NUM = re.compile(r"\(\d+\)")


def read_cases(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def failure_kind(case: dict[str, Any], suffix: str = "") -> str | None:
    """Error class and message with operator/vertex IDs and numbers masked, cut to 200 chars."""
    cls = case.get("error_class" + suffix)
    if cls is None:
        return None
    msg = _NUM.sub("(N)", _ID.sub("<id>", case.get("error_message" + suffix) or ""))
    return f"{cls}: {msg}"[:200]


def pct(counter: Counter[str], total: int) -> dict[str, str]:
    return {k: f"{v} ({100 * v // max(total, 1)} %)" for k, v in sorted(counter.items())}


def counted(lines: Iterable[tuple[Any, int]]) -> list[str]:
    return [f"  {n:5d}  {k}" for k, n in lines]


def edit_label(edit: dict[str, Any]) -> str:
    if edit["type"] == "set_uid_hash":
        return f"set_uid_hash:{edit.get('remediation')}"
    return str(edit["type"])


def summarize(path: Path, log: Path | None = None) -> str:
    cases = read_cases(path)
    n = len(cases)
    out: list[str] = []
    versions = sorted({c["flink_version_full"] for c in cases})
    out.append(f"== {path.name}: {n} cases, Flink {versions}")
    out.append(f"verdict (allowNonRestoredState=false): {pct(Counter(c['verdict'] for c in cases), n)}")
    pairs = Counter(f"{c['verdict']} -> {c['verdict_allow_non_restored']}" for c in cases)
    out.append(f"verdict -> with allowNonRestoredState=true: {dict(sorted(pairs.items()))}")
    stages = Counter(f"{c['failure_stage']}" for c in cases if c["verdict"] == "FAILED")
    out.append(f"failure stage: {dict(sorted(stages.items()))}")
    out.append("failure kinds:")
    out += counted(Counter(k for c in cases if (k := failure_kind(c))).most_common())
    out.append("failure kinds with allowNonRestoredState=true:")
    out += counted(Counter(k for c in cases if (k := failure_kind(c, "_allow_non_restored"))).most_common())
    out.append(f"edits per case: {dict(sorted(Counter(len(c['edits']) for c in cases).items()))}")
    out.append("verdicts per edit type (a case counts once per type it contains):")
    per_type: dict[str, Counter[str]] = {}
    for c in cases:
        for label in {edit_label(e) for e in c["edits"]} or {"(none)"}:
            per_type.setdefault(label, Counter())[c["verdict"]] += 1
    for label in sorted(per_type):
        out.append(f"  {label:34s} {dict(sorted(per_type[label].items()))}")
    out.append("state-handle types (number of _metadata files containing each):")
    handles = Counter(h for c in cases for h in c["savepoint"]["handle_types"])
    out += [f"  {v:5d}  {k}" for k, v in sorted(handles.items())]
    out.append(f"_metadata format versions: {dict(Counter(c['savepoint']['metadata_version'] for c in cases))}")
    out.append("backend / incremental / storage / inline threshold / format:")
    combos = Counter(
        (
            s["state_backend"],
            "incremental" if s["incremental"] else "full",
            s["checkpoint_storage"],
            s["inline_threshold"],
            s["format"],
        )
        for c in cases
        for s in [c["savepoint"]]
    )
    out += counted(combos.most_common())
    out.append(f"taken by: {dict(sorted(Counter(c['savepoint']['taken_by'] for c in cases).items()))}")
    sizes = [c["savepoint"]["metadata_bytes"] for c in cases]
    if sizes:
        out.append(
            f"_metadata bytes: median {int(statistics.median(sizes))}, max {max(sizes)}, total {sum(sizes)}"
        )
        nodes = [len(c["v1"]["nodes"]) for c in cases]
        out.append(f"v1 stream nodes: median {int(statistics.median(nodes))}, min {min(nodes)}, max {max(nodes)}")
        walls = [c["meta"]["timing"]["case_ms"] for c in cases]
        out.append(
            f"wall per case (ms): median {int(statistics.median(walls))}, mean {int(statistics.mean(walls))}, "
            f"max {max(walls)}"
        )
    if log is not None and log.exists():
        last = [ln for ln in log.read_text().splitlines() if ln.startswith("flink ")]
        if last:
            out.append(last[-1])
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", type=Path)
    ap.add_argument("--log", type=Path, help="the generator's stderr log (its last line is the run's timing)")
    args = ap.parse_args()
    print(summarize(args.cases, args.log), end="")


if __name__ == "__main__":
    main()
