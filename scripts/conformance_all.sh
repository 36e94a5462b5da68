#!/usr/bin/env bash
# The conformance table of README: COUNT fresh programs per supported Flink line.
#   scripts/conformance_all.sh            # 2000 programs per line, seed 7001
#   COUNT=500 scripts/conformance_all.sh 2.3 1.20
set -uo pipefail
cd "$(dirname "$0")/.."
COUNT="${COUNT:-2000}"
SEED="${SEED:-7001}"
ALL=(2.3 2.2 2.1 2.0 1.20 1.19 1.18 1.17 1.16 1.15 1.9)
if [ "$#" -gt 0 ]; then VERSIONS=("$@"); else VERSIONS=("${ALL[@]}"); fi
for v in "${VERSIONS[@]}"; do
  echo "== Flink $v"
  .venv/bin/python scripts/conformance.py --version "$v" --count "$COUNT" --seed "$SEED" 2>&1 | grep -v "^\[ *[0-9.]*s\]" | tail -16
done
