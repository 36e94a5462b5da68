#!/usr/bin/env bash
# Rewrite the 60 real Flink 1.20.5 savepoints of /work/shared/vectors/restore with real Flink's
# own writers: format 3 (MetadataV3Serializer of flink-runtime 1.20.5, the layout 1.11 - 1.15
# write) and format 5 (Checkpoints.storeCheckpointMetadata of Flink 2.0.2). Needs directories of
# Flink jars (flink-runtime and dependencies), e.g. the restore harness's target/flink-*/lib:
#   tests/savepoints/reserialize.sh LIB_1_20 LIB_2_0
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib120="$1"; lib20="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/c120" "$tmp/c20"
tar xzf "$here/../../../shared/vectors/restore/savepoint-1.20-s11-metadata.tar.gz" -C "$tmp"
for f in $(find "$tmp" -name '*.metadata'); do n="$(basename "$f" .metadata)"; mkdir -p "$tmp/src/$n"; mv "$f" "$tmp/src/$n/_metadata"; done
javac -nowarn -d "$tmp/c120" -cp "$lib120/*" "$here/Reserialize.java"
javac -nowarn -d "$tmp/c20" -cp "$lib20/*" "$here/Reserialize.java"
java -cp "$tmp/c120:$lib120/*" Reserialize v3 "$tmp/v3" "$tmp"/src/*/_metadata
java -cp "$tmp/c20:$lib20/*" Reserialize store "$tmp/v5" "$tmp"/src/*/_metadata
tar czf "$here/reserialized/sp-1.20-s11-format3-by-flink-1.20.5.tar.gz" -C "$tmp/v3" .
tar czf "$here/reserialized/sp-1.20-s11-format5-by-flink-2.0.2.tar.gz" -C "$tmp/v5" .
