#!/usr/bin/env bash
# Regenerates the statetypes sets in conformance/statetypes (docs/statetypes-harness.md): same-line
# sets per Flink line and cross-version sets, each with its cases folder and .summary.txt. One
# Maven build and one Flink run at a time.
#
#   harness/restore/regen_statetypes.sh                     # every set below
#   SEED=21 harness/restore/regen_statetypes.sh same:2.3:120 cross:1.20:2.3:80
#   OUT=/tmp/st harness/restore/regen_statetypes.sh same:1.20:9
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
SEED="${SEED:-21}"
OUT="${OUT:-$root/conformance/statetypes}"
PY="${PY:-$root/.venv/bin/python}"
[ -x "$PY" ] || PY=/work/main/.venv/bin/python
SETS=("$@")
if [ "${#SETS[@]}" -eq 0 ]; then
  SETS=(same:2.3:120 same:1.20:69 cross:1.20:2.3:80 cross:1.20:2.0:40 same:1.15:24 cross:1.15:2.3:30)
fi
built=""
build() {
  case " $built " in *" $1 "*) return ;; esac
  mvn -q -f "$here/pom.xml" -Pflink-"$1" package
  built="$built $1"
}
mkdir -p "$OUT"
for s in "${SETS[@]}"; do
  IFS=: read -r kind a b c <<< "$s"
  if [ "$kind" = same ]; then
    line=$a; count=$b; name="statetypes-$line-s$SEED"
    echo "== $name ($count cases)"
    build "$line"
    rm -rf "${OUT:?}/$name" "$OUT/$name.jsonl.gz"
    log="$(mktemp)"
    java -jar "$here/target/flink-$line/flink-jobgraph-restore.jar" statetypes --seed "$SEED" --count "$count" \
      --out "$OUT/$name.jsonl.gz" --cases-dir "$OUT/$name" 2> "$log"
    tail -1 "$log"
    cp "$log" "$(dirname "$log")/same.log"
    "$PY" "$root/scripts/statetypes_summary.py" "$OUT/$name.jsonl.gz" --log "$(dirname "$log")/same.log" > "$OUT/$name.summary.txt"
    rm -f "$log" "$(dirname "$log")/same.log"
  else
    from=$a; to=$b; count=$c; name="statetypes-${from}to${to}-s$SEED"
    echo "== $name ($count cases)"
    build "$from"
    build "$to"
    rm -rf "${OUT:?}/$name" "$OUT/$name.jsonl.gz"
    "$PY" "$root/scripts/statetypes_cross.py" --from "$from" --to "$to" --seed "$SEED" --count "$count" --out-dir "$OUT"
  fi
done
du -sh "$OUT"
