"""Java types as the exporter writes them (``long``, ``String``, ``List<Long>``, ``x.P``), read as Java would.

Class facts name a field's type as its source does, short or qualified, with type arguments. The
rules resolve such names (``String`` -> ``java.lang.String``, a class of the jar by its simple
name), split type arguments, and ask what ``Field.set`` accepts when a value of one class goes
into a field of another: the JLS's unboxing and widening conversions.
"""

from __future__ import annotations

from collections.abc import Mapping

from udfs.savepoint.simple_types import PRIMITIVES, UNBOX

# simple names Java resolves without an import (java.lang), and the java.util ones the exporter
# may write short
_JAVA_LANG = {name.rsplit(".", 1)[-1] for name in UNBOX} | {"String", "Object"}
_JAVA_UTIL = {"List", "Map", "Set", "Collection", "ArrayList", "HashMap", "HashSet", "LinkedList", "Date"}
# JLS 5.1.2 widening (what Field.set accepts for a primitive field given a wrapper of another type)
_WIDENS = {
    "byte": {"short", "int", "long", "float", "double"},
    "short": {"int", "long", "float", "double"},
    "char": {"int", "long", "float", "double"},
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
}


def resolve_type_name(name: str, classes: Mapping[str, object]) -> str:
    """The qualified name of a type as written: primitives and qualified names as they are,
    java.lang / java.util simple names, then a jar class by its simple name when only one has it."""
    if "." in name or name in PRIMITIVES:
        return name
    if name in _JAVA_LANG:
        return f"java.lang.{name}"
    if name in _JAVA_UTIL:
        return f"java.util.{name}"
    matches = [c for c in classes if c.rsplit(".", 1)[-1] == name]
    return matches[0] if len(matches) == 1 else name


def split_generic(text: str) -> tuple[str, list[str]]:
    """``Map<String, List<Long>>`` -> (``Map``, [``String``, ``List<Long>``])."""
    text = text.strip()
    if "<" not in text:
        return text, []
    raw, rest = text.split("<", 1)
    rest = rest.rsplit(">", 1)[0]
    args, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    return raw.strip(), args


def assignable(value_class: str, field_type: str) -> bool:
    """Whether ``Field.set`` takes a value of ``value_class`` into a field declared ``field_type``
    (identity, Object, unboxing with widening, the java.lang interfaces a boxed value implements)."""
    if value_class == field_type or field_type in ("java.lang.Object", "java.io.Serializable"):
        return True
    if field_type in PRIMITIVES:
        prim = UNBOX.get(value_class)
        return prim is not None and (prim == field_type or field_type in _WIDENS.get(prim, set()))
    if field_type == "java.lang.Number":
        return value_class in UNBOX and value_class not in ("java.lang.Boolean", "java.lang.Character")
    if field_type in ("java.lang.Comparable",):
        return value_class.startswith("java.lang.")
    if field_type == "java.lang.CharSequence":
        return value_class == "java.lang.String"
    return False
