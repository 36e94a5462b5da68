"""Compare computed tables with Flink's own answers, aspect by aspect.

Vector files (``shared/vectors``, ``tests/golden``, the harness's output) carry, per
graph, what Flink's ``StreamingJobGraphGenerator`` produced under ``expected``. This
module reads the Delta tables a ``compute`` run wrote and reports, for every aspect,
how many graphs match and the first mismatches -- the numbers README's conformance
table quotes.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession

from pipeline.tables.delta_writer import table_path

ASPECTS = (
    "operator_id",
    "user_operator_id",
    "jobvertex_id",
    "chain",
    "vertex_name",
    "vertex_attrs",
    "operator_id_order",
    "job_edges",
    "rejections",
)


def read_vector_file(path: str | Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


@dataclass
class AspectReport:
    graphs: int = 0
    matched: dict[str, int] = field(default_factory=lambda: {a: 0 for a in ASPECTS})
    checked: dict[str, int] = field(default_factory=lambda: {a: 0 for a in ASPECTS})
    mismatches: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return all(self.matched[a] == self.checked[a] for a in ASPECTS)

    def rates(self) -> dict[str, float]:
        return {a: (self.matched[a] / self.checked[a] if self.checked[a] else 1.0) for a in ASPECTS}

    def table(self) -> str:
        lines = [f"{'aspect':<20} {'matched':>8} {'checked':>8} {'rate':>8}"]
        for a in ASPECTS:
            rate = self.rates()[a]
            lines.append(f"{a:<20} {self.matched[a]:>8} {self.checked[a]:>8} {rate:>8.2%}")
        return "\n".join(lines)


def _note(report: AspectReport, aspect: str, ok: bool, graph_id: str, detail: str, limit: int) -> None:
    report.checked[aspect] += 1
    if ok:
        report.matched[aspect] += 1
    elif len(report.mismatches) < limit:
        report.mismatches.append(f"{graph_id} [{aspect}] {detail}")


def _load(spark: SparkSession, output: str, table: str) -> pd.DataFrame:
    return spark.read.format("delta").load(table_path(output, table)).toPandas()


def compare_tables(
    spark: SparkSession, output: str, graphs: list[dict[str, Any]], max_mismatches: int = 20
) -> AspectReport:
    ops = _load(spark, output, "operators")
    verts = _load(spark, output, "job_vertices")
    edges = _load(spark, output, "job_edges")
    errors = _load(spark, output, "graph_errors")
    ops_by = {g: df.set_index("node_id") for g, df in ops.groupby("graph_id")}
    verts_by = {g: df.sort_values("vertex_order") for g, df in verts.groupby("graph_id")}
    edges_by = {g: df for g, df in edges.groupby("graph_id")}
    err_by = dict(zip(errors["graph_id"], errors["message"], strict=False))
    report = AspectReport()
    for g in graphs:
        gid, exp = g["graph_id"], g["expected"]
        report.graphs += 1
        if "error" in exp:
            _note(
                report,
                "rejections",
                gid in err_by and exp["error"] == err_by[gid],
                gid,
                f"want error {exp['error']!r}, got {err_by.get(gid)!r}",
                max_mismatches,
            )
            continue
        if gid in err_by or gid not in ops_by:
            _note(report, "rejections", False, gid, f"rejected: {err_by.get(gid)!r}", max_mismatches)
            continue
        _note(report, "rejections", True, gid, "", max_mismatches)
        _compare_graph(report, gid, exp, ops_by[gid], verts_by.get(gid), edges_by.get(gid), max_mismatches)
    return report


def _compare_graph(report, gid, exp, ops, verts, edges, limit) -> None:
    exp_ops = exp["operators"]
    legacy = exp_ops and isinstance(next(iter(exp_ops.values())), list)  # seed format: [op, vertex]
    checks: dict[str, list[str]] = {"operator_id": [], "user_operator_id": [], "jobvertex_id": [], "chain": []}
    for nid_s, e in exp_ops.items():
        nid = int(nid_s)
        if nid not in ops.index:
            checks["operator_id"].append(f"node {nid} missing")
            continue
        row = ops.loc[nid]
        if legacy:
            e = {"operator_id": e[0], "jobvertex_id": e[1]}
        if row["operator_id"] != e["operator_id"]:
            checks["operator_id"].append(f"node {nid}: {row['operator_id']} != {e['operator_id']}")
        if row["jobvertex_id"] != e["jobvertex_id"]:
            checks["jobvertex_id"].append(f"node {nid}: {row['jobvertex_id']} != {e['jobvertex_id']}")
        if legacy:
            continue
        got_user = None if pd.isna(row["user_operator_id"]) else row["user_operator_id"]
        if got_user != e["user_operator_id"]:
            checks["user_operator_id"].append(f"node {nid}: {got_user} != {e['user_operator_id']}")
        got_chain = (
            int(row["chain_head_node_id"]),
            int(row["chain_index"]),
            bool(row["is_chain_head"]),
            bool(row["is_chain_end"]),
            bool(row["in_vertex_operator_ids"]),
        )
        want_chain = (
            e["chain_head_node_id"],
            e["chain_index"],
            e["is_chain_head"],
            e["is_chain_end"],
            e["in_vertex_operator_ids"],
        )
        if got_chain != want_chain:
            checks["chain"].append(f"node {nid}: {got_chain} != {want_chain}")
    for aspect, problems in checks.items():
        if legacy and aspect in ("user_operator_id", "chain"):
            continue
        _note(report, aspect, not problems, gid, "; ".join(problems[:3]), limit)

    verts = verts if verts is not None else pd.DataFrame(columns=["jobvertex_id", "name"])
    if legacy:
        got = dict(zip(verts["jobvertex_id"], verts["name"], strict=False))
        _note(report, "vertex_name", got == exp["job_vertices"], gid, f"{got} != {exp['job_vertices']}", limit)
        return
    want_v = exp["job_vertices"]
    got_names = [(r.jobvertex_id, r.name) for r in verts.itertuples()]
    want_names = [(v["id"], v["name"]) for v in want_v]
    _note(report, "vertex_name", got_names == want_names, gid, _first_diff(got_names, want_names), limit)
    got_attrs = [
        (r.jobvertex_id, int(r.head_node_id), int(r.parallelism), int(r.max_parallelism), r.slot_sharing_group)
        for r in verts.itertuples()
    ]
    want_attrs = [
        (v["id"], v["head_node_id"], v["parallelism"], v["max_parallelism"], v["slot_sharing_group"]) for v in want_v
    ]
    _note(report, "vertex_attrs", got_attrs == want_attrs, gid, _first_diff(got_attrs, want_attrs), limit)
    got_order = [
        (list(r.operator_ids), [None if x is None else x for x in r.user_operator_ids]) for r in verts.itertuples()
    ]
    want_order = [(v["operator_ids"], v["user_operator_ids"]) for v in want_v]
    _note(report, "operator_id_order", got_order == want_order, gid, _first_diff(got_order, want_order), limit)

    edges = edges if edges is not None else pd.DataFrame(columns=["target_jobvertex_id", "input_index"])
    got_e = sorted(
        (
            r.target_jobvertex_id,
            int(r.input_index),
            r.source_jobvertex_id,
            int(r.source_node_id),
            int(r.target_node_id),
            r.distribution_pattern,
            r.ship_strategy,
        )
        for r in edges.itertuples()
    )
    want_e = sorted(
        (
            e["target_vertex"],
            e["input_index"],
            e["source_vertex"],
            e["source_node"],
            e["target_node"],
            e["distribution_pattern"],
            e["ship_strategy_name"],
        )
        for e in exp["job_edges"]
    )
    _note(report, "job_edges", got_e == want_e, gid, _first_diff(got_e, want_e), limit)


def _first_diff(got: list, want: list) -> str:
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return f"#{i}: got {a} want {b}"
    return f"lengths {len(got)} != {len(want)}"
