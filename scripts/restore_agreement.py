"""Agreement of the restore check with real Flink, per aspect, on a file of restore cases.

    .venv/bin/python scripts/restore_agreement.py CASES.jsonl.gz [--metadata CASES-metadata.tar.gz]

Cases are in the format of ``../shared/vectors/restore`` (SPEC section 5's vectors; the
harness writes fresh ones the same way). Each case's savepoint is read from its real
``_metadata`` file through the project's reader (``--metadata``, default: the tar beside the
cases file), v2's JobGraph is computed by the project's own per-graph code, and the rules
decide with allowNonRestoredState false and true. Compared with what Flink did, for every
case that Flink decided at job start (the JobMaster's checks) or that restored: verdict,
failure kind, the operator Flink's exception names, and the message (the savepoint path
shows as ``<savepoint>``). Cases that Flink failed later, in a task restoring state, are
listed apart. Then every job_init failure's proposed fixes are applied to v2, v2 is
recomputed, and the check is made again: the fix is proven when it then restores.
Exit code 0 only when every aspect agrees on every compared case and every fix is proven.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.restore_cases import (  # noqa: E402
    ASPECTS,
    prove_fixes,
    read_cases,
    read_metadata_tar,
    run_agreement,
    saved_from_metadata,
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", help="cases .jsonl.gz")
    p.add_argument("--metadata", help="tar.gz of <case_id>.metadata files (default: <cases>-metadata.tar.gz)")
    p.add_argument("--show", type=int, default=20, help="mismatches to print per setting")
    args = p.parse_args(argv)

    cases = read_cases(args.cases)
    tar = Path(args.metadata) if args.metadata else Path(str(args.cases).replace(".jsonl.gz", "-metadata.tar.gz"))
    if not tar.exists():
        print(f"no _metadata tar at {tar}", file=sys.stderr)
        return 2
    metadata = read_metadata_tar(tar)
    missing = [c["case_id"] for c in cases if c["savepoint_metadata"] not in metadata]
    if missing:
        print(f"{len(missing)} cases have no _metadata in {tar}: {missing[:5]}", file=sys.stderr)
        return 2

    without, with_allow, via_reader = run_agreement(cases, metadata)
    versions = sorted({c.get("flink_version_full", c["flink_version"]) for c in cases})
    print(f"{args.cases}: {len(cases)} cases, Flink {', '.join(versions)}; _metadata files read: {via_reader}")
    ok = True
    for label, agg in (("allowNonRestoredState=false", without), ("allowNonRestoredState=true", with_allow)):
        print(f"\n{label}: {agg.compared} cases decided at job start or restored")
        for a in ASPECTS:
            n = agg.agree[a]
            pct = 100.0 * n / agg.compared if agg.compared else 100.0
            print(f"  {a:<12} {n:>4}/{agg.compared:<4} {pct:6.2f} %")
        for m in agg.mismatches[: args.show]:
            print("  MISMATCH " + m)
        print(f"  failed in a task (counted apart): {len(agg.task_stage)}")
        for t in agg.task_stage:
            print("    " + t)
        ok &= agg.all_agree()

    proven = failing = 0
    for c in cases:
        if c["verdict"] != "FAILED" or c["failure_stage"] != "job_init":
            continue
        failing += 1
        _, decision = prove_fixes(c, saved_from_metadata(metadata[c["savepoint_metadata"]]))
        if decision.verdict == "RESTORES":
            proven += 1
        else:
            print(f"  fix not proven: {c['case_id']}: {decision.failure} {decision.operator_id}")
    print(f"\nfixes: {proven}/{failing} job_init failures restore after the proposed fixes (v2 recomputed)")
    ok &= proven == failing
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
