"""The ``check-restore`` manifest (SPEC section 5): JSON Lines, one check per line.

Every line ends as exactly one row of ``restore_checks``: a line that cannot be a check (not
JSON, not an object, a field missing or of the wrong type, a ``check_id`` used twice) is an
``ERROR`` row whose message names the file and line, and the other lines go on. A line
without a usable ``check_id`` gets ``manifest-error:<file>:<line>`` as its id, so that a
re-run replaces its row instead of adding a second one (as ``file-error:`` graph ids do).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any

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


def read_manifest(spark: SparkSession, checks_path: str, target_flink: str | None = None) -> list[CheckLine]:
    """Every line of the manifest file (or of every file of a manifest folder), checked;
    ``target_flink`` for the lines that do not name their own.

    The manifest is read through Spark's file system layer, so it can live wherever Spark
    reads (a local path, ``s3a://``, ``dbfs:/``...); it is small, and checked on the driver."""
    files = spark.read.text(checks_path, wholetext=True).select("value", F.input_file_name().alias("file")).collect()
    lines: list[CheckLine] = []
    for row in sorted(files, key=lambda r: r["file"]):
        file = row["file"]
        manifest_dir = posixpath.dirname(file)
        name = posixpath.basename(file)
        for number, text in enumerate(row["value"].splitlines(), start=1):
            if text.strip():
                lines.append(_check_line(text, f"{name}:{number}", manifest_dir, target_flink))
    return _reject_repeated_ids(lines)


def _check_line(text: str, where: str, manifest_dir: str, target_flink: str | None = None) -> CheckLine:
    try:
        obj: Any = json.loads(text)
    except json.JSONDecodeError as e:
        return _error_line(where, f"not JSON ({e.msg} at column {e.colno})")
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
