"""Print README's conformance table from conformance/results/*.json."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    rows = [json.loads(p.read_text()) for p in sorted((ROOT / "conformance" / "results").glob("*.json"))]

    def key(r: dict) -> tuple[int, ...]:
        return tuple(int(x) for x in r["flink_version"].split("."))

    print(
        "| Flink line | release tested | fresh programs | stream nodes | all aspects match | lowest aspect rate | command |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=key, reverse=True):
        low = min(r["rates"].values())
        print(
            f"| {r['flink_version']} | {r['flink_release']} | {r['programs']} | {r['stream_nodes']} | "
            f"{'yes' if r['all_match'] else 'NO'} | {low:.2%} | `{r['command'].replace('scripts/', 'python scripts/', 1) if not r['command'].startswith('python') else r['command']}` |"
        )


if __name__ == "__main__":
    main()
