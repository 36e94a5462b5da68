"""Format 4: written by Flink 1.16 - 1.20 (``MetadataV4Serializer``).

New in this version: a trailer after the operator states, ``ObjectOutputStream.writeObject``
of the snapshot's ``CheckpointProperties``. Flink reads it with ``ObjectInputStream``, so it is
walked here (``java_objects``), not skipped: it must be exactly one object of that class, of
classes and enum constants Flink resolves, and it tells the snapshot type and savepoint format.
"""

from __future__ import annotations

from udfs.savepoint.format_v3 import FormatV3
from udfs.savepoint.handles import MAX_HANDLE_NESTING
from udfs.savepoint.java_objects import (
    PRIMITIVE_SIZES,
    SC_ENUM,
    SC_EXTERNALIZABLE,
    SC_SERIALIZABLE,
    JClassDesc,
    ObjectStreamWalker,
)
from udfs.savepoint.metadata_model import MetadataError, MetadataReader

CHECKPOINT_PROPERTIES_CLASS = "org.apache.flink.runtime.checkpoint.CheckpointProperties"

# What ObjectInputStream can resolve for CheckpointProperties in Flink 1.16 - 2.3 (the classes and
# enum constants of CheckpointProperties, CheckpointType, SavepointType, SnapshotType and
# SavepointFormatType in those releases). Anything else is a ClassNotFoundException /
# InvalidObjectException in Flink, so the file does not load.
TRAILER_ENUMS = {
    "org.apache.flink.core.execution.SavepointFormatType": frozenset({"CANONICAL", "NATIVE"}),
    "org.apache.flink.runtime.checkpoint.SavepointType$PostCheckpointAction": frozenset(
        {"NONE", "SUSPEND", "TERMINATE"}
    ),
    "org.apache.flink.runtime.checkpoint.SnapshotType$SharingFilesStrategy": frozenset(
        {"FORWARD_BACKWARD", "FORWARD", "NO_SHARING"}
    ),
}
TRAILER_CLASSES = frozenset(
    {
        CHECKPOINT_PROPERTIES_CLASS,
        "org.apache.flink.runtime.checkpoint.CheckpointType",
        "org.apache.flink.runtime.checkpoint.SavepointType",
        "java.lang.Enum",
        *TRAILER_ENUMS,
    }
)


CHECKPOINT_PROPERTIES_SUID = 2  # declared in CheckpointProperties of every release writing a trailer
_CLASS_HIERARCHY_TOO_DEEP = "Java serialization: class hierarchy nested too deeply"


class CheckpointPropertiesWalker(ObjectStreamWalker):
    """The trailer of formats 4+ as Flink's ``ObjectInputStream`` accepts it, built as plain values.

    What it changes in the walk of :class:`ObjectStreamWalker`:

    * values: an object is ``{"class": name, "fields": {...}}``, an enum constant ``{"enum":
      name, "class": name}``, an array ``{"array": name, "length": n}`` (primitives) or
      ``{"array": name, "items": [...]}``, a ``Class`` ``{"class_of": name}`` (its handle
      refers to the descriptor), block data ``{"block": length}``; char, short and
      floating-point fields are skipped (None), and every class of a hierarchy gives its
      fields, flagged serializable or not;
    * checks: the class of every object and enum must be one Flink resolves
      (:data:`TRAILER_CLASSES`), enum constants must exist (:data:`TRAILER_ENUMS`), enum
      descriptors have serialVersionUID 0 and CheckpointProperties its declared one
      (:meth:`check_class`, in the wording of Java's ``InvalidClassException``); a field's
      type signature may be any item; TC_EXCEPTION is an unexpected type code;
    * limits: nested items, class descriptors and proxy superclasses count towards
      :data:`MAX_HANDLE_NESTING`; an array's length is checked against one byte per element
      and a descriptor's field count against nothing (the reads after them fail instead); the
      handle table has no limit but the bytes, and a class hierarchy none but the stream's
      length (a longer one is a cycle); arrays, proxies and objects enter the handle table
      late (``late_handles``).
    """

    NESTING = {
        "nested": "Java serialization: objects nested too deeply",
        "class": _CLASS_HIERARCHY_TOO_DEEP,
        "proxy superclass": _CLASS_HIERARCHY_TOO_DEEP,
    }
    FIELD_VALUES = {
        **ObjectStreamWalker.FIELD_VALUES,
        **{c: (lambda r, n=PRIMITIVE_SIZES[c]: r.skip(n, "primitive field")) for c in "CSFD"},
    }
    HEADER_ERROR = "expected a Java serialization stream (ACED0005) for the checkpoint properties, found {found}"
    PROTOCOL_1_ERROR = "Java serialization: externalizable without block data"
    WRITER_FAILED_ERROR = None
    max_handles = None
    sized_array_counts = False
    field_min_bytes = 0
    serializable_only = False
    late_handles = True

    def __init__(self, r: MetadataReader) -> None:
        super().__init__(r)
        self.max_class_chain = len(r.data)

    def enter(self, point: str, at: int) -> bool:
        message = self.NESTING.get(point)
        if message is None:
            return False
        self.r.depth += 1
        if self.r.depth > MAX_HANDLE_NESTING:
            raise MetadataError(message, at)
        return True

    def _resolve(self, desc: JClassDesc | None, at: int) -> JClassDesc:
        """ObjectInputStream resolves the class of every object and enum it builds (not of unused supers)."""
        if desc is None:
            raise MetadataError("Java serialization: object without a class descriptor", at)
        if desc.name not in TRAILER_CLASSES:
            raise MetadataError(f"class {desc.name} cannot be resolved (ClassNotFoundException in Flink)", at)
        return desc

    def new_object(self, desc: JClassDesc | None, at: int) -> tuple[object, dict[str, object], list[object]]:
        fields: dict[str, object] = {}
        return {"class": self._resolve(desc, at).name, "fields": fields}, fields, []

    def new_enum(self, desc: JClassDesc | None, name: object, at: int, at_name: int) -> object:
        desc = self._resolve(desc, at)
        known = TRAILER_ENUMS.get(desc.name)
        if known is not None and name not in known:
            raise MetadataError(f"enum constant {name} does not exist in class {desc.name}", at_name)
        return {"enum": name, "class": desc.name}

    def new_array(self, desc: JClassDesc | None, at: int) -> object:
        return {"array": desc.name if desc else None}

    def fill_array(self, array: dict, length: int, items: list[object] | None) -> None:  # type: ignore[override]
        if items is None:
            array["length"] = length
        else:
            array["items"] = items

    def new_class(self, desc: JClassDesc | None) -> tuple[object, object]:
        return {"class_of": desc.name if desc else None}, desc

    def new_block(self, data: bytes) -> object:
        return {"block": len(data)}

    def check_class(self, desc: JClassDesc, at_flags: int) -> None:
        """ObjectStreamClass's checks, worded as Java's InvalidClassException ("name; reason")."""
        name = desc.name
        if desc.flags & SC_SERIALIZABLE and desc.flags & SC_EXTERNALIZABLE:
            raise MetadataError(f"{name}; serializable and externalizable flags conflict", at_flags)
        if desc.flags & SC_ENUM and desc.suid != 0:
            raise MetadataError(f"{name}; enum descriptor has non-zero serialVersionUID: {desc.suid}", at_flags)
        if name == CHECKPOINT_PROPERTIES_CLASS and desc.suid != CHECKPOINT_PROPERTIES_SUID:
            raise MetadataError(f"{name}; local class incompatible: stream serialVersionUID {desc.suid}", at_flags)

    def check_field_type(self, type_name: object, at: int) -> None:
        return None

    def invalid_reference_error(self, handle: int, class_desc: bool) -> str:
        if class_desc:
            return "Java serialization: back reference is not a class descriptor"
        return super().invalid_reference_error(handle, class_desc)

    def long_string_length_error(self, n: int, at: int) -> MetadataError:
        return MetadataError("Java serialization: negative string length", at + 1)


def read_java_serialized_object(data: bytes, offset: int) -> tuple[object, int]:
    """Read one ``ObjectOutputStream`` stream (header + one object) at ``offset``; return it and its end."""
    r = MetadataReader(data, offset)
    obj = CheckpointPropertiesWalker(r).read("Java serialization")
    return obj, r.pos


class FormatV4(FormatV3):
    VERSION = 4

    def trailer(self) -> tuple[str | None, dict | None]:
        r = self.r
        obj, end = read_java_serialized_object(r.data, r.pos)
        trailer_class = obj.get("class") if isinstance(obj, dict) else None
        if trailer_class != CHECKPOINT_PROPERTIES_CLASS:
            raise MetadataError(
                f"trailer is a serialized {trailer_class!r}, expected {CHECKPOINT_PROPERTIES_CLASS}", r.pos
            )
        r.pos = end
        return trailer_class, obj.get("fields")
