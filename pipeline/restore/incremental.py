"""check-restore pays for what changed: a check whose inputs are those the output's published
run decided is not decided again, and its rows stay.

A check's fingerprint covers everything that decides its rows:

- its manifest line (check_id, the savepoint as given and as resolved, the new graph, the
  version that took the savepoint, allow_non_restored_state, the target Flink line);
- the savepoint's ``_metadata`` as the filesystem lists it (URI, length, modification time:
  a new savepoint in the job's folder, or one written again in place, differs; the state files
  it reads headers of are named inside it);
- the spec fingerprints of the new graph and of the savepoint's version
  (:mod:`udfs.spec.fingerprint`: the spec's content, its line's profile, the compute rules);
- the restore rules version: the code that reads savepoints and decides checks, the profiles
  (Flink's messages per line), and whether fixes are proven.

A check with anything unknown (a bad manifest line, a savepoint path that cannot be listed, a
graph not in the input) has no fingerprint and is decided on every run: it costs no savepoint
read and no proof. ``--full`` decides every check.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from pipeline.compute.fingerprints import rules_version, touched_keys
from pipeline.restore.manifest import CheckLine
from pipeline.settings import Settings
from pipeline.tables import delta_log
from pipeline.tables.delta_writer import published_versions, table_path

TABLE = "check_fingerprints"
SCHEMA = "check_id string, fingerprint string, rules_version string"
# the check-keyed tables a check's rows are in (a killed run's commits to them are diffed)
CHECK_TABLES = ["restore_checks", "restore_operator_matches", "restore_fixes", "restore_state_problems",
                "restore_warnings", TABLE]  # fmt: skip
_ROOT = Path(__file__).resolve().parents[2]
_CODE = ("udfs/restore", "udfs/savepoint", "pipeline/restore", "conf/profiles")


def restore_rules_version(settings: Settings, prove_fixes: bool) -> str:
    """A digest of the compute rules version, the restore code and profiles, and the proof flag:
    any new release decides every check again."""
    h = hashlib.sha256(rules_version(settings).encode())
    for entry in _CODE:
        for f in sorted((_ROOT / entry).rglob("*")):
            if f.is_file() and f.suffix in (".py", ".json"):
                h.update(f.relative_to(_ROOT).as_posix().encode())
                h.update(f.read_bytes())
    h.update(b"prove" if prove_fixes else b"no-proof")
    return h.hexdigest()[:16]


def check_fingerprint(line: CheckLine, savepoint: str | None, graphs: Mapping[str, str], version: str) -> str | None:
    """The fingerprint of one manifest line (module docstring), or None when it has none:
    ``savepoint`` is the listed ``_metadata`` (:func:`resolve_metadata_files`'s identity),
    ``graphs`` graph_id -> spec fingerprint of the run's graphs."""
    if line.error is not None or savepoint is None or line.graph_id not in graphs:
        return None
    old = graphs.get(line.savepoint_graph_id) if line.savepoint_graph_id else ""
    if old is None:
        return None
    parts = [version, line.check_id, line.savepoint or "", line.savepoint_path or "", line.graph_id,
             line.savepoint_graph_id or "", str(line.allow_non_restored_state), line.target_flink or "",
             savepoint, graphs[line.graph_id], old]  # fmt: skip
    h = hashlib.sha256()
    for part in parts:
        b = part.encode()
        h.update(len(b).to_bytes(8, "big"))
        h.update(b)
    return h.hexdigest()[:32]


def known_checks(spark: SparkSession, output: str, say: Callable[[str], None] | None = None) -> dict[str, str]:
    """check_id -> fingerprint of every check the output's published run decided, less the
    checks whose rows commits past the published view changed (a run killed before it
    published: its checks are decided again, as compute's graphs are). As compute's
    (:func:`pipeline.compute.fingerprints.known_graphs`): the published view from the Delta
    logs, then one read of ``check_fingerprints`` at its published version."""
    if delta_log.table_state(spark, table_path(output, TABLE)) is None:
        return {}  # no check-restore run wrote here yet, or an earlier release did
    cut = published_versions(spark, output, CHECK_TABLES)
    if cut.get(TABLE) is None:
        return {}
    table = delta_log.read_at(spark, table_path(output, TABLE), cut[TABLE])
    touched = touched_keys(spark, output, CHECK_TABLES, "check_id", cut)
    if touched is not None:
        if say:
            n = touched.count()
            say(f"the output holds commits of a run that did not publish: its {n} checks are decided again")
        table = table.join(touched, "check_id", "left_anti")
    return {r["check_id"]: r["fingerprint"] for r in table.select("check_id", "fingerprint").collect()}
