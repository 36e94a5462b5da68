"""Avro's own reader/writer schema compatibility, as Flink's ``AvroSerializerSnapshot`` applies it.

``AvroSerializerSnapshot.resolveSchemaCompatibility(old)`` (flink-avro 1.15 - 2.3, read in the
jars' bytecode) compares the saved snapshot's schema (the writer's) with the new one (the
reader's): equal schemas are compatible as is, otherwise Avro's
``SchemaCompatibility.checkReaderWriterCompatibility(reader, writer)`` decides: COMPATIBLE means
compatible after migration, anything else incompatible. This module is that check over the
schemas' JSON (what the snapshots hold), following Avro 1.11's
``ReaderWriterCompatibilityChecker``: the same type (records by name or alias, field by field,
a reader field missing from the writer needs a default; enums: every writer symbol in the reader
unless the reader has a default; fixed: name and size; arrays and maps by their items), the
promotions (int -> long -> float -> double, string <-> bytes) and unions (every writer branch must
be readable; a reader union needs one branch that reads the writer).

:func:`dropped_fields` names the writer's record fields the reader no longer has: values Avro
skips when it reads, so saved values lost without an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["AvroCheck", "check", "dropped_fields", "parse", "record_field_names"]

Schema = Any  # the JSON form: a type name, a list (union) or an object
_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
# reader type -> the writer types it reads by promotion (Avro's spec, "Schema Resolution")
_PROMOTIONS = {"long": ("int",), "float": ("int", "long"), "double": ("int", "long", "float"),
               "bytes": ("string",), "string": ("bytes",)}  # fmt: skip


@dataclass(frozen=True)
class AvroCheck:
    """The result: ``compatible`` (Avro's COMPATIBLE), and where and why not."""

    compatible: bool
    location: str = ""
    why: str = ""


def parse(text: str | None) -> Schema | None:
    """A schema's JSON text (as a snapshot holds it), None when it is not JSON."""
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


class _Names:
    """Named types (records, enums, fixed) of one schema by full name, for references by name."""

    def __init__(self, schema: Schema) -> None:
        self.types: dict[str, Mapping[str, Any]] = {}
        self._collect(schema, None)

    def _collect(self, s: Schema, space: str | None) -> None:
        if isinstance(s, list):
            for b in s:
                self._collect(b, space)
        elif isinstance(s, Mapping):
            t = s.get("type")
            if t in ("record", "error", "enum", "fixed"):
                full = _full_name(s, space)
                self.types[full] = s
                space = full.rsplit(".", 1)[0] if "." in full else space
                for f in s.get("fields") or ():
                    self._collect(f.get("type"), space)
            elif t == "array":
                self._collect(s.get("items"), space)
            elif t == "map":
                self._collect(s.get("values"), space)

    def resolve(self, s: Schema) -> Schema:
        if isinstance(s, str) and s not in _PRIMITIVES:
            return self.types.get(s) or next((v for k, v in self.types.items() if k.rsplit(".", 1)[-1] == s), s)
        if isinstance(s, Mapping) and s.get("type") in _PRIMITIVES and len(s) <= 2 and "logicalType" not in s:
            return s["type"]
        return s


def _full_name(s: Mapping[str, Any], space: str | None) -> str:
    name = str(s.get("name", ""))
    ns = s.get("namespace", space)
    return name if "." in name or not ns else f"{ns}.{name}"


def _type(s: Schema) -> str:
    if isinstance(s, list):
        return "union"
    if isinstance(s, Mapping):
        t = s.get("type")
        return "record" if t == "error" else str(t)
    return str(s)


def _name_equal(reader: Mapping[str, Any], writer: Mapping[str, Any]) -> bool:
    """Avro's schemaNameEquals: the same unqualified name, or a reader alias for the writer."""
    if str(reader.get("name", "")).rsplit(".", 1)[-1] == str(writer.get("name", "")).rsplit(".", 1)[-1]:
        return True
    return _full_name(writer, None) in (reader.get("aliases") or ())


def check(reader: Schema, writer: Schema) -> AvroCheck:
    """``SchemaCompatibility.checkReaderWriterCompatibility(reader, writer)``."""
    return _Checker(_Names(reader), _Names(writer)).compatible(reader, writer, "", set())


@dataclass
class _Checker:
    readers: _Names
    writers: _Names

    def compatible(self, reader: Schema, writer: Schema, at: str, seen: set[tuple[int, int]]) -> AvroCheck:
        r, w = self.readers.resolve(reader), self.writers.resolve(writer)
        key = (id(r), id(w))
        if key in seen:  # recursion in progress: Avro assumes compatible
            return AvroCheck(True)
        seen = seen | {key}
        rt, wt = _type(r), _type(w)
        if rt == wt:
            return self._same(r, w, rt, at, seen)
        if wt == "union":
            return self._all_branches(r, w, at, seen)
        if rt == "union":
            ok = any(self.compatible(b, w, at, seen).compatible for b in r)
            return AvroCheck(ok, at, "" if ok else f"no branch of the reader's union reads the writer's {wt}")
        if wt in _PROMOTIONS.get(rt, ()):
            return AvroCheck(True)
        return AvroCheck(False, at, f"reader type {rt} does not read writer type {wt}")

    def _all_branches(self, r: Schema, w: list, at: str, seen: set[tuple[int, int]]) -> AvroCheck:
        for i, b in enumerate(w):
            c = self.compatible(r, b, f"{at}/{i}", seen)
            if not c.compatible:
                return c
        return AvroCheck(True)

    def _same(self, r: Schema, w: Schema, t: str, at: str, seen: set[tuple[int, int]]) -> AvroCheck:
        if t in _PRIMITIVES:
            return AvroCheck(True)
        if t == "array":
            return self.compatible(r.get("items"), w.get("items"), f"{at}/items", seen)
        if t == "map":
            return self.compatible(r.get("values"), w.get("values"), f"{at}/values", seen)
        if t == "union":
            return self._all_branches(r, w, at, seen)
        if not _name_equal(r, w):
            return AvroCheck(False, at, f"name {w.get('name')} -> {r.get('name')}")
        if t == "fixed":
            ok = r.get("size") == w.get("size")
            return AvroCheck(ok, at, "" if ok else f"fixed size {w.get('size')} -> {r.get('size')}")
        if t == "enum":
            missing = [s for s in w.get("symbols") or () if s not in (r.get("symbols") or ())]
            ok = not missing or "default" in r
            return AvroCheck(ok, at, "" if ok else f"enum symbols missing from the reader: {missing}")
        return self._record(r, w, at, seen)

    def _record(self, r: Mapping[str, Any], w: Mapping[str, Any], at: str, seen: set[tuple[int, int]]) -> AvroCheck:
        by_name = {f.get("name"): f for f in w.get("fields") or ()}
        for f in r.get("fields") or ():
            wf = _writer_field(f, by_name)
            where = f"{at}/{f.get('name')}"
            if wf is None:
                if "default" not in f:
                    return AvroCheck(
                        False, where, f"reader field {f.get('name')} has no default and the writer lacks it"
                    )
                continue
            c = self.compatible(f.get("type"), wf.get("type"), where, seen)
            if not c.compatible:
                return c
        return AvroCheck(True)


def _writer_field(reader_field: Mapping[str, Any], writer_fields: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The writer's field a reader field reads: by name, else by one of the reader field's aliases."""
    found = writer_fields.get(reader_field.get("name"))
    if found is not None:
        return found
    return next((writer_fields[a] for a in reader_field.get("aliases") or () if a in writer_fields), None)


def record_field_names(schema: Schema) -> list[str]:
    """The top-level record's field names, in order (empty for other schemas)."""
    s = schema[0] if isinstance(schema, list) and schema else schema
    return [str(f.get("name")) for f in s.get("fields") or ()] if isinstance(s, Mapping) else []


def dropped_fields(reader: Schema, writer: Schema) -> list[str]:
    """Paths (``name``, ``inner/name``) of the writer's record fields the reader has no field for
    (by name or alias): their saved values are skipped when read, lost without an error."""
    return list(_dropped(_Names(reader), _Names(writer), reader, writer, "", set()))


def _dropped(
    readers: _Names, writers: _Names, reader: Schema, writer: Schema, at: str, seen: set[tuple[int, int]]
) -> Iterator[str]:
    r, w = readers.resolve(reader), writers.resolve(writer)
    if (id(r), id(w)) in seen or _type(r) != "record" or _type(w) != "record":
        return
    seen = seen | {(id(r), id(w))}
    readers_by_writer_name: dict[str, Mapping[str, Any]] = {}
    for f in r.get("fields") or ():
        readers_by_writer_name[str(f.get("name"))] = f
        for a in f.get("aliases") or ():
            readers_by_writer_name.setdefault(str(a), f)
    for wf in w.get("fields") or ():
        name = str(wf.get("name"))
        rf = readers_by_writer_name.get(name)
        if rf is None:
            yield f"{at}{name}"
        else:
            yield from _dropped(readers, writers, rf.get("type"), wf.get("type"), f"{at}{name}/", seen)
