"""The published view: per table, the version at which every table holds the same set of
finished runs (docs/faults.md), and the record each run's publish leaves in the Delta log so
that the next run finds that view in the log alone.

Every commit of a run carries the run's id (``commitInfo.userMetadata`` = ``flink-jobgraph-run:
<id>``) and a run publishes by appending its row to ``runs`` after all its tables committed.
:func:`published_versions` answers in one of two ways:

- from the log (:func:`_view_from_log`): the newest ``runs`` commit, the publish of the last
  run, also records the view it left when every tagged commit of every table was then finished
  (``view``: each table's version and id, ``runs_seen``: the ``runs`` version it had seen). The
  view now is that one moved to each table's newest version, if every commit since is a run's
  whose publish is in ``runs`` after ``runs_seen`` (or untagged, as ``OPTIMIZE``): a nightly
  run reads a few log entries and no table;
- in full (:func:`_full_cut`), whenever the log does not settle it (no record, a commit of a run
  that did not publish: killed, or still running; a table created again): every table's commits
  against the published runs the ``runs`` table's rows name, as below.

A commit is *finished* when its run published, or when a published run over the same graph set
read or committed that table at or after it (the re-run after a kill: it checked every graph
of the set in every table, so the dead run's rows there are its own). Starting from the
finished runs, a run is dropped while any table would have to include a commit of an
unfinished run before one of its own: what is left is a cut in which every run is either
complete in all tables or absent from all of them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession

from pipeline.tables import delta_log

RUNS_TABLE = "runs"
RUN_TAG_PREFIX = "flink-jobgraph-run:"


def table_path(output: str, table: str) -> str:
    return f"{output.rstrip('/')}/{table}"


def run_of(user_metadata: str | None) -> str | None:
    """The run id a commit is tagged with (its userMetadata's first line), or None."""
    if user_metadata and user_metadata.startswith(RUN_TAG_PREFIX):
        return user_metadata[len(RUN_TAG_PREFIX) :].split("\n", 1)[0]
    return None


def table_commits(spark: SparkSession, path: str) -> list[tuple[int, str | None]]:
    """(version, run id) of every commit of the table its log holds, oldest first (none: no
    table there), read with Delta's log reader (:func:`delta_log.commits`): no Spark job per
    table, as ``history()`` runs."""
    return [(v, run_of(user_metadata)) for v, user_metadata in delta_log.commits(spark, path)]


@dataclass(frozen=True)
class PublishingRun:
    """The run about to publish, which the view it records already includes: its id, its graph
    set's digest and the version of each table that holds its rows."""

    run_id: str
    digest: str
    versions: dict[str, int]
    rules_version: str | None = None  # the rules the run ran under (compute's, or check-restore's)


def published_versions(spark: SparkSession, output: str, tables: Sequence[str] | None = None) -> dict[str, int | None]:
    """Per table, the version to read so that all tables hold the same set of finished runs
    (None: the table has no version in that set; read it as empty): from the log when it
    settles it, else in full (module docstring). ``tables`` None: every table a published run
    wrote."""
    if tables is not None:
        cut = _view_from_log(spark, output, list(tables), set())
        if cut is not None:
            return cut
    return _full_cut(spark, output, tables, _published_runs(spark, output))[0]


def read_published(spark: SparkSession, output: str, tables: Sequence[str] | None = None) -> dict[str, DataFrame]:
    """The tables at :func:`published_versions`: a consistent view across tables."""
    out = {}
    for t, v in published_versions(spark, output, tables).items():
        path = table_path(output, t)
        if delta_log.table_state(spark, path) is None:
            continue  # no run has created it yet
        out[t] = spark.read.format("delta").load(path).limit(0) if v is None else delta_log.read_at(spark, path, v)
    return out


# ---- the view from the log ---------------------------------------------------------------


@dataclass(frozen=True)
class _Record:
    """What a publish recorded: the ``runs`` version its run had seen, and the view it left
    (table -> (version, table id)), every tagged commit at or below which was finished."""

    runs_seen: int
    view: dict[str, tuple[int, str]]


def _record_body(user_metadata: str | None) -> dict | None:
    """The JSON record under a publish's tag (:func:`view_record`), or None (no tagged commit,
    no record, or not a JSON object)."""
    if not user_metadata or "\n" not in user_metadata or run_of(user_metadata) is None:
        return None
    try:
        body = json.loads(user_metadata.split("\n", 1)[1])
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _record_of(user_metadata: str | None) -> _Record | None:
    body = _record_body(user_metadata)
    if body is None:
        return None
    try:
        view = {t: (int(v), str(i)) for t, (v, i) in body["view"].items()}
        return _Record(int(body["runs_seen"]), view)
    except (ValueError, KeyError, TypeError):
        return None


def _newest_record(spark: SparkSession, output: str) -> _Record | None:
    """The record of the newest ``runs`` commit, when it is a publish that left one."""
    runs = delta_log.table_state(spark, table_path(output, RUNS_TABLE))
    if runs is None:
        return None
    newest = delta_log.commits(spark, table_path(output, RUNS_TABLE), runs.version)
    return _record_of(newest[-1][1]) if newest else None


def _states(spark: SparkSession, output: str, tables: Sequence[str]) -> dict[str, delta_log.TableState | None]:
    return {t: delta_log.table_state(spark, table_path(output, t)) for t in tables}


def _view_from_log(
    spark: SparkSession,
    output: str,
    tables: list[str],
    also: set[str],
    states: dict[str, delta_log.TableState | None] | None = None,
) -> dict[str, int | None] | None:
    """The published view of ``tables`` from the newest publish's record and the commits since
    (module docstring); None when the log does not settle it. ``also``: runs to count as
    published (the one about to publish); ``states``: the tables' states, when read already."""
    record = _newest_record(spark, output)
    if record is None:
        return None
    runs_path = table_path(output, RUNS_TABLE)
    published = {run_of(m) for _, m in delta_log.commits(spark, runs_path, record.runs_seen + 1)} | also
    states = states if states is not None else _states(spark, output, tables)
    cut: dict[str, int | None] = {}
    for t in tables:
        state = states[t]
        seen = record.view.get(t)
        if state is None or (seen is not None and (seen[1] != state.table_id or seen[0] > state.version)):
            if state is None and seen is None:
                cut[t] = None  # no such table, then or now
                continue
            return None  # a table deleted, or created again, since the record
        since = seen[0] + 1 if seen is not None else 0
        runs = {run_of(m) for _, m in delta_log.commits(spark, table_path(output, t), since, state)}
        if runs - {None} - published:
            return None  # a commit of a run that did not publish (killed, or still running)
        cut[t] = state.version
    return cut


def view_record(spark: SparkSession, output: str, run: PublishingRun) -> str:
    """The ``userMetadata`` of ``run``'s publish commit: its tag, then (a JSON line) the view it
    leaves when every tagged commit of every table of the output is finished once it has
    published, so that the next run finds the view in the log (:func:`_view_from_log`)."""
    runs = delta_log.table_state(spark, table_path(output, RUNS_TABLE))
    runs_seen = runs.version if runs is not None else -1
    tables = [t for t in delta_log.delta_tables(spark, output) if t != RUNS_TABLE]
    states = _states(spark, output, tables)
    cut = _view_from_log(spark, output, tables, {run.run_id}, states)
    if cut is None:
        published = _published_runs(spark, output)
        published[run.run_id] = {"digest": run.digest, "versions": dict(run.versions)}
        full, clean = _full_cut(spark, output, tables, published)
        # clean: every table's newest version, which ``states`` hold unless a table moved since
        cut = full if clean and all(states[t] is None or full[t] == states[t].version for t in tables) else None
    record: dict = {}
    if cut is not None:
        view = {t: [v, states[t].table_id] for t, v in cut.items() if v is not None and states[t] is not None}
        record = {"runs_seen": runs_seen, "view": view}
    if run.rules_version is not None:
        record["rules_version"] = run.rules_version
    return f"{RUN_TAG_PREFIX}{run.run_id}\n{json.dumps(record, sort_keys=True)}"


# ---- the view in full ----------------------------------------------------------------------


def _full_cut(
    spark: SparkSession, output: str, tables: Sequence[str] | None, published: dict[str, dict]
) -> tuple[dict[str, int | None], bool]:
    """The cut over every commit of ``tables`` (None: those the published runs wrote) given the
    published runs (run id -> digest, versions), and whether it is *clean*: every tagged commit
    finished, so the cut is each table's newest version."""
    if tables is None:
        tables = sorted({t for p in published.values() for t in p["versions"]})
    commits = {t: table_commits(spark, table_path(output, t)) for t in tables}
    by_run: dict[str, dict[str, int]] = {}
    for t, cs in commits.items():
        for v, run in cs:
            if run is not None:
                by_run.setdefault(run, {})[t] = max(v, by_run.get(run, {}).get(t, -1))
    covers = _covers(by_run, published)
    keep = set(published) | {r for r, c in covers.items() if c}
    clean = set(by_run) <= keep
    while True:
        cut = {t: _prefix_end(cs, keep) for t, cs in commits.items()}
        drop = {
            run
            for run in keep
            if any(v > (cut.get(t) if cut.get(t) is not None else -1) for t, v in by_run.get(run, {}).items())
        }
        drop |= {run for run in keep if run in covers and not (covers[run] & keep)}
        if not drop:
            return cut, clean and not (set(by_run) - keep)
        keep -= drop
        clean = False


def _covers(by_run: dict[str, dict[str, int]], published: dict[str, dict]) -> dict[str, set[str]]:
    """An unpublished run's commits are covered by a published run over the same graphs that
    holds, in each of those tables, a version at or after them."""
    covers: dict[str, set[str]] = {}
    for run in by_run:
        if run in published:
            continue
        digest = _digest_of(run)
        covers[run] = {
            p
            for p, info in published.items()
            if digest is not None
            and info["digest"] == digest
            and all(info["versions"].get(t, -1) >= v for t, v in by_run[run].items())
        }
    return covers


_RUNS: dict[tuple[str, str, int], dict[str, dict]] = {}


def _published_runs(spark: SparkSession, output: str) -> dict[str, dict]:
    """run id -> its graph set's digest and table versions, from the ``runs`` table's rows,
    read once per version of it (the full view only: the log settles a nightly run's)."""
    runs_path = table_path(output, RUNS_TABLE)
    state = delta_log.table_state(spark, runs_path)
    if state is None:
        return {}
    key = (runs_path, state.table_id, state.version)
    if key not in _RUNS:
        rows = delta_log.read_at(spark, runs_path, state.version).select("run_id", "graphs_digest", "versions")
        _RUNS[key] = {
            r["run_id"]: {"digest": r["graphs_digest"], "versions": dict(r["versions"] or {})} for r in rows.collect()
        }
    return {run: {"digest": p["digest"], "versions": dict(p["versions"])} for run, p in _RUNS[key].items()}


def _digest_of(run_id: str) -> str | None:
    """An unpublished run's graph set is recorded nowhere but in its id (delta_writer.run_id_for)."""
    return run_id.rsplit("~", 1)[1] if "~" in run_id else None


def _prefix_end(commits: list[tuple[int, str | None]], keep: set[str]) -> int | None:
    """The last version before the first commit of a run outside ``keep`` (untagged commits,
    e.g. maintenance, are neither)."""
    end = None
    for v, run in commits:
        if run is not None and run not in keep:
            break
        end = v
    return end


COMMIT_FILE = re.compile(r"^(\d{20})\.json$")  # a commit file of a Delta log: its version


def published_rules_version(output: str) -> str | None:
    """The rules version the newest publish of a local ``output`` recorded (compute's or
    check-restore's; None when it recorded none, or the output is elsewhere), read from the
    newest commit file of its ``runs`` log with ``json`` alone: asked before a JVM exists, it
    only chooses whether a run is a night (:func:`pipeline.runner.is_night`), never what a run
    reads or writes, so a commit this misses (not yet in the folder) costs time at most."""
    parsed = urlparse(output)
    if parsed.scheme not in ("", "file"):
        return None
    log = Path(parsed.path if parsed.scheme else output) / RUNS_TABLE / "_delta_log"
    try:
        newest = max((e.name for e in os.scandir(log) if COMMIT_FILE.match(e.name)), default=None)
        if newest is None:
            return None
        with open(log / newest, encoding="utf-8") as f:
            info = next((a["commitInfo"] for a in map(json.loads, f) if "commitInfo" in a), {})
        body = _record_body(info.get("userMetadata"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    version = body.get("rules_version") if body is not None else None
    return version if isinstance(version, str) else None
