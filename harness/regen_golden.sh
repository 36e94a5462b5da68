#!/usr/bin/env bash
# Regenerates the committed golden sets tests/golden/flink-<line>.jsonl.gz for every supported
# Flink version: builds the harness per version (Maven, offline after the first resolve) and
# generates COUNT programs with Flink's own answers.
#
#   harness/regen_golden.sh                 # all versions
#   harness/regen_golden.sh 2.3 1.20        # only these lines
#   COUNT=250 SEED=42 OFFLINE=1 harness/regen_golden.sh
#   BATCH=1 harness/regen_golden.sh 2.3 1.20  # BATCH programs (generate --batch) into
#                                             # tests/golden/batch/flink-<line>.jsonl.gz (1.15+)
#   SQL=1 harness/regen_golden.sh 2.3 1.20    # random Table/SQL programs (generate --sql; COUNT=100 by
#                                             # default) into tests/golden/sql/flink-<line>.jsonl.gz;
#                                             # with BATCH=1 too: tests/golden/sql/batch/ (1.15+)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
out_dir="$root/tests/golden"
GEN_FLAGS=()
if [ "${SQL:-0}" = "1" ]; then
  out_dir="$root/tests/golden/sql"; GEN_FLAGS+=(--sql)
  if [ "${BATCH:-0}" = "1" ]; then out_dir="$root/tests/golden/sql/batch"; GEN_FLAGS+=(--batch); fi
  COUNT="${COUNT:-100}"
elif [ "${BATCH:-0}" = "1" ]; then out_dir="$root/tests/golden/batch"; GEN_FLAGS+=(--batch); fi
COUNT="${COUNT:-250}"
SEED="${SEED:-42}"
MVN_FLAGS=(-q -f "$here/pom.xml")
if [ "${OFFLINE:-0}" = "1" ]; then MVN_FLAGS+=(-o); fi
ALL=(1.9 1.15 1.16 1.17 1.18 1.19 1.20 2.0 2.1 2.2 2.3)
if [ "${BATCH:-0}" = "1" ] || [ "${SQL:-0}" = "1" ]; then ALL=(1.15 1.16 1.17 1.18 1.19 1.20 2.0 2.1 2.2 2.3); fi
if [ "$#" -gt 0 ]; then VERSIONS=("$@"); else VERSIONS=("${ALL[@]}"); fi
mkdir -p "$out_dir"
for v in "${VERSIONS[@]}"; do
  echo "== Flink $v"
  mvn "${MVN_FLAGS[@]}" -Pflink-"$v" package
  jar="$here/target/flink-$v/flink-jobgraph-harness.jar"
  java -jar "$jar" selfcheck | tail -1
  tmp="$out_dir/.tmp-flink-$v.jsonl.gz"
  java -jar "$jar" generate --seed "$SEED" --count "$COUNT" --out "$tmp" ${GEN_FLAGS[@]+"${GEN_FLAGS[@]}"}
  python3 "$here/check_vectors.py" "$tmp" | head -3
  mv "$tmp" "$out_dir/flink-$v.jsonl.gz"
  ls -l "$out_dir/flink-$v.jsonl.gz"
done
