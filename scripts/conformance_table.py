"""Print README's conformance table from conformance/results/*.json."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = [
    "Flink line",
    "release tested",
    "fresh programs",
    "stream nodes",
    "all aspects match",
    "lowest aspect rate",
    "command",
]


def _command(raw: str) -> str:
    return raw if raw.startswith("python") else f"python {raw}"


def main() -> None:
    rows = [json.loads(p.read_text()) for p in sorted((ROOT / "conformance" / "results").glob("*.json"))]
    rows.sort(key=lambda r: tuple(int(x) for x in r["flink_version"].split(".")), reverse=True)
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for r in rows:
        cells = [
            r["flink_version"],
            r["flink_release"],
            str(r["programs"]),
            str(r["stream_nodes"]),
            "yes" if r["all_match"] else "NO",
            f"{min(r['rates'].values()):.2%}",
            f"`{_command(r['command'])}`",
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
