"""The ``check-restore`` manifest (SPEC section 5): JSON Lines, one check per line.

Every line ends as exactly one row of ``restore_checks``: a line that cannot be a check (not
JSON, not an object, a field missing or of the wrong type, a ``check_id`` used twice) is an
``ERROR`` row whose message names the file and line, and the other lines go on. A line
without a usable ``check_id`` gets ``manifest-error:<file>:<line>`` as its id, so that a
re-run replaces its row instead of adding a second one (as ``file-error:`` graph ids do).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

__all__ = ["CheckLine", "check_record", "check_records", "read_manifest", "resolve_savepoint"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_OPTIONAL_STRINGS = ("savepoint_graph_id", "target_flink")


@dataclass(frozen=True)
class CheckLine:
    """One manifest line: a check to decide, or (``error`` set) the reason it cannot be one."""

    check_id: str
    savepoint: str | None
    savepoint_path: str | None  # resolved against the manifest's folder
    graph_id: str | None
    allow_non_restored_state: bool
    savepoint_graph_id: str | None
    line: str  # "<file>:<line number>", for messages
    error: str | None = None
    target_flink: str | None = None  # the Flink line to decide the state half for (the upgrade check)


def resolve_savepoint(savepoint: str, manifest_dir: str) -> str:
    """SPEC: a relative savepoint path resolves against the manifest's folder (``manifest_dir``,
    a URI or a local path)."""
    if _SCHEME.match(savepoint) or savepoint.startswith("/"):
        return savepoint
    return posixpath.normpath(posixpath.join(manifest_dir, savepoint))


def read_manifest(
    spark: SparkSession,
    checks_path: str,
    target_flink: str | None = None,
    maps: list[tuple[str, str]] | None = None,
    say: Callable[[str], None] | None = None,
) -> list[CheckLine]:
    """Every line of the manifest file (or of every file of a manifest folder), checked;
    ``target_flink`` for the lines that do not name their own. A line may name the job's Flink
    Kubernetes Operator resource (``"resource"``: a YAML file, relative to the manifest; with
    ``"resource_name"`` when it holds several jobs) for the savepoint and allowNonRestoredState
    it does not give itself; ``checks_path`` may also be such resources themselves (a YAML file
    or a folder of them): one check per job resource (:func:`pipeline.restore.k8s.fleet_check`).
    ``maps``: ``--map`` prefixes for the paths inside the pods; ``say``: what the resources'
    fields became, one line each.

    The manifest is read through Spark's file system layer, so it can live wherever Spark
    reads (a local path, ``s3a://``, ``dbfs:/``...); it is small, and checked on the driver."""
    from pipeline.restore import k8s

    resolver = _Resources(spark, maps or [], say or (lambda _: None))
    if k8s.is_resource_path(checks_path):
        return _reject_repeated_ids(resolver.checks(checks_path, target_flink))
    try:
        text = spark.read.text(checks_path, wholetext=True)
        files = text.select("value", F.input_file_name().alias("file")).collect()
    except AnalysisException as e:  # a path that is not there: one line, exit code 2
        raise ValueError(f"manifest {checks_path}: {str(e).splitlines()[0]}") from e
    lines: list[CheckLine] = []
    for row in sorted(files, key=lambda r: r["file"]):
        file = row["file"]
        manifest_dir = posixpath.dirname(file)
        name = posixpath.basename(file)
        for number, text in enumerate(row["value"].splitlines(), start=1):
            if text.strip():
                lines.append(_check_line(text, f"{name}:{number}", manifest_dir, target_flink, resolver))
    return _reject_repeated_ids(lines)


class _Resources:
    """The manifest's Flink Kubernetes Operator resources: read, mapped, their savepoints found."""

    def __init__(self, spark: SparkSession, maps: list[tuple[str, str]], say: Callable[[str], None]) -> None:
        self.spark, self.maps, self.say = spark, maps, say

    def newest(self, paths: list[str]) -> str:
        from pipeline.restore.inventory import newest_savepoint

        return newest_savepoint(self.spark, paths)

    def settings(self, path: str, name: str | None) -> Any:
        from pipeline.restore import k8s

        resources = k8s.read_resources(path)
        return k8s.deploy_settings(k8s.pick(resources, name, path), resources, self.maps)

    def tell(self, s: Any) -> None:
        """One line: the fields used, those that shape the graph (given), the others not honoured."""
        from pipeline.restore.k8s import GRAPH_SHAPING

        shaping = [k for k, v in s.not_honoured.items() if v == GRAPH_SHAPING]
        others = [f"{k} ({v})" for k, v in s.not_honoured.items() if v != GRAPH_SHAPING]
        text = f"resource {s.resource.kind} {s.resource.key} ({s.resource.source}): uses {', '.join(s.used) or '-'}"
        if shaping:
            text += f"; not honoured, as they shape the graph the fleet is given: {', '.join(shaping)}"
        self.say(text + (f"; not honoured: {'; '.join(others)}" if others else ""))

    def checks(self, path: str, target_flink: str | None) -> list[CheckLine]:
        """One check per job resource of the YAML file or folder ``path``."""
        from pipeline.restore import k8s

        resources = k8s.read_resources(path.removeprefix("file:"))
        out = []
        for r in k8s.job_resources(resources):
            s = k8s.deploy_settings(r, resources, self.maps)
            try:
                obj = k8s.fleet_check(s, self.newest)
            except ValueError as e:  # stateless, or no savepoint: said, not checked
                self.say(f"resource {r.kind} {r.key} not checked: {e}")
                continue
            self.tell(s)
            out.append(check_record(obj, r.source, os.getcwd(), target_flink))
        return out

    def line(self, obj: dict[str, Any], where: str, manifest_dir: str) -> dict[str, Any]:
        """A manifest object completed from the resource it names (its own fields win)."""
        from pipeline.restore import k8s

        path = resolve_savepoint(str(obj["resource"]), manifest_dir).removeprefix("file:")
        s = self.settings(path, obj.get("resource_name"))
        filled = dict(obj)
        if not filled.get("savepoint"):
            filled["savepoint"] = k8s.savepoint_of(s, self.newest)
        if filled.get("allow_non_restored_state") is None and s.allow_non_restored_state is not None:
            filled["allow_non_restored_state"] = s.allow_non_restored_state
        k8s.fleet_fields(s)
        self.tell(s)
        return filled


def _check_line(
    text: str, where: str, manifest_dir: str, target_flink: str | None = None, resources: _Resources | None = None
) -> CheckLine:
    try:
        obj: Any = json.loads(text)
    except json.JSONDecodeError as e:
        return _error_line(where, f"not JSON ({e.msg} at column {e.colno})")
    if isinstance(obj, dict) and obj.get("resource") is not None and resources is not None:
        try:
            obj = resources.line(obj, where, manifest_dir)
        except ValueError as e:  # a resource that cannot be read or names no savepoint
            cid = obj.get("check_id") if isinstance(obj.get("check_id"), str) and obj.get("check_id") else None
            return _error_line(where, f"resource {obj['resource']}: {e}", cid)
    return check_record(obj, where, manifest_dir, target_flink)


def _error_line(where: str, message: str, check_id: str | None = None, savepoint: str | None = None) -> CheckLine:
    """The record of a line that cannot be a check: its id (``manifest-error:<where>`` when it
    has none of its own), and the message naming where it came from."""
    cid = check_id or f"manifest-error:{where}"
    return CheckLine(cid, savepoint, None, None, False, None, where, f"manifest line {where}: {message}")


def check_record(obj: Any, where: str, base_dir: str, target_flink: str | None = None) -> CheckLine:
    """One check from its manifest object, as a manifest line gives it: every field checked, a
    relative savepoint path resolved against ``base_dir`` (the manifest's folder; the user's
    working directory for the deploy gate's one check, which hands its record over directly).
    ``where`` names the record in messages."""
    if not isinstance(obj, dict):
        return _error_line(where, f"not a JSON object but {type(obj).__name__}")
    check_id = obj.get("check_id")
    if not isinstance(check_id, str) or not check_id:
        return _error_line(where, f"check_id must be a non-empty string, got {_short(check_id)}")
    savepoint = obj.get("savepoint")
    for field, value in (("savepoint", savepoint), ("graph_id", obj.get("graph_id"))):
        if not isinstance(value, str) or not value:
            return _error_line(where, f"{field} must be a non-empty string, got {_short(value)}", check_id)
    allow = obj.get("allow_non_restored_state", False)
    if allow is None:
        allow = False
    if not isinstance(allow, bool):
        return _error_line(
            where, f"allow_non_restored_state must be true or false, got {_short(allow)}", check_id, savepoint
        )
    for field in _OPTIONAL_STRINGS:
        if obj.get(field) is not None and not isinstance(obj[field], str):
            return _error_line(where, f"{field} must be a string, got {_short(obj[field])}", check_id, savepoint)
    return CheckLine(
        check_id=check_id,
        savepoint=savepoint,
        savepoint_path=resolve_savepoint(savepoint, base_dir),
        graph_id=obj["graph_id"],
        allow_non_restored_state=allow,
        savepoint_graph_id=obj.get("savepoint_graph_id"),
        line=where,
        target_flink=obj.get("target_flink") or target_flink,
    )


def check_records(records: list[CheckLine]) -> list[CheckLine]:
    """Records made by :func:`check_record` as the manifest reader hands its lines on: a
    check_id used twice is an error on every record that uses it."""
    return _reject_repeated_ids(records)


def _reject_repeated_ids(lines: list[CheckLine]) -> list[CheckLine]:
    """A check_id names one check: every line that shares one is an error (as every copy of a
    repeated graph_id is), each naming all the lines that use it."""
    where: dict[str, list[str]] = {}
    for c in lines:
        where.setdefault(c.check_id, []).append(c.line)
    out = []
    for c in lines:
        used = where[c.check_id]
        if len(used) > 1 and c.error is None:
            c = CheckLine(
                c.check_id, c.savepoint, None, c.graph_id, False, None, c.line,
                f"manifest line {c.line}: check_id {c.check_id!r} is used by {len(used)} lines ({', '.join(used)}); "
                "a check_id must be unique within one manifest",
            )  # fmt: skip
        out.append(c)
    return out


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
