"""How the per-graph Python of one long chain scales with its length: CPU seconds of
``compute_one`` (parse, hashing, the createChain walk, job vertices) for a source followed by
forward maps, at each length asked for, and each ratio to the shortest.

    python bench/chain_scaling.py [--lengths 10000,40000] [--repeat 2]

Linear work gives a ratio near the lengths' ratio (10,000 -> 40,000: about 4); the quadratic
steps this guards against (every member's chained name built as a string holding the rest of
the chain, the hash propagation scanning every node once per topological layer) gave 19x.
A benchmark, not a test: it prints CPU times, the tests assert only the chain's result.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from udfs.compute.one_graph import compute_one  # noqa: E402


def chain_graph(length: int) -> dict:
    """source -> length-1 forward maps, all at parallelism 2: one chain of ``length`` operators."""
    nodes = [{"id": 1, "name": "Source: gen", "parallelism": 2, "is_source": True}]
    nodes += [{"id": i, "name": f"Map {i}", "parallelism": 2} for i in range(2, length + 1)]
    edges = [{"source": i, "target": i + 1, "partitioner": "FORWARD"} for i in range(1, length)]
    return {"graph_id": f"chain-{length}", "job_name": f"chain-{length}", "flink_version": "1.20",
            "chaining_enabled": True, "nodes": nodes, "edges": edges}  # fmt: skip


def cpu_seconds(length: int, repeat: int) -> float:
    """The best of ``repeat`` runs: CPU time, as caches are shared on a busy machine."""
    graph = chain_graph(length)
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        _, operators, vertices, _ = compute_one(copy.deepcopy(graph))
        best = min(best, time.process_time() - start)
        assert len(vertices) == 1 and len(operators) == length
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lengths", default="10000,40000", help="chain lengths, comma-separated")
    ap.add_argument("--repeat", type=int, default=2, help="runs per length; the best counts")
    args = ap.parse_args()
    lengths = sorted(int(x) for x in args.lengths.split(","))
    cpu = {n: cpu_seconds(n, args.repeat) for n in lengths}
    base = cpu[lengths[0]]
    print(json.dumps({"cpu_seconds": cpu, "ratio_to_shortest": {n: round(c / base, 2) for n, c in cpu.items()}}))


if __name__ == "__main__":
    main()
