#!/usr/bin/env bash
# Let real Flink read every synthetic _metadata file and record what it read
# (tests/savepoints/synthetic/flink_reads.jsonl). Needs, per Flink line, a directory of its jars
# (flink-runtime and its dependencies), e.g. the harness build's target/flink-<line>/lib:
#   tests/savepoints/record_flink_reads.sh 1.20.5=/path/lib-1.20 2.0.2=/path/lib-2.0 2.3.0=/path/lib-2.3
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/synthetic/flink_reads.jsonl"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
: > "$out.new"
for spec in "$@"; do
  version="${spec%%=*}"; lib="${spec#*=}"
  mkdir -p "$tmp/$version"
  javac -nowarn -d "$tmp/$version" -cp "$lib/*" "$here/MetadataProbe.java"
  java -cp "$tmp/$version:$lib/*" MetadataProbe "$here"/synthetic/*/_metadata \
    | sed "s/^{/{\"flink\":\"$version\",/" >> "$out.new"
done
mv "$out.new" "$out"
wc -l "$out"
