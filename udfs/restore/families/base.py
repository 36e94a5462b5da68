"""What every serializer family shares: the compatibility result, the family's interface, its advice.

Flink gives each serializer one snapshot class whose ``resolveSchemaCompatibility`` holds its
whole rule and returns one ``TypeSerializerSchemaCompatibility``; here each family is one module
exposing one :class:`Family`. A family never imports another family's registry: whatever needs
the whole tree (a nested part's compatibility, the prediction of a nested part, Flink's type
extraction of a declared Java type) reaches it through the ``resolve`` callable or the
:class:`Predicting` object it is handed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from udfs.restore.state_inputs import ClassFacts, StateContext
from udfs.restore.state_kinds import Cause, Failure
from udfs.savepoint.serializer_snapshots import PojoField, SnapshotNode
from udfs.savepoint.type_names import FLINK

UNKNOWN_ELEMENT = "UNKNOWN_ELEMENT"  # the kind of a predicted part whose type is not known


class CompatResult(StrEnum):
    """``TypeSerializerSchemaCompatibility``'s results, and UNKNOWN for a part not predicted."""

    AS_IS = "COMPATIBLE_AS_IS"
    RECONFIGURED = "COMPATIBLE_WITH_RECONFIGURED_SERIALIZER"
    AFTER_MIGRATION = "COMPATIBLE_AFTER_MIGRATION"
    INCOMPATIBLE = "INCOMPATIBLE"
    UNKNOWN = "UNKNOWN"


# CompositeTypeSerializerUtil.constructIntermediateCompatibilityResult: incompatible wins, then after
# migration, then reconfigured; unknown sits below incompatible, since one certain incompatibility
# decides regardless
_RANK = {
    CompatResult.AS_IS: 0,
    CompatResult.RECONFIGURED: 1,
    CompatResult.AFTER_MIGRATION: 2,
    CompatResult.UNKNOWN: 3,
    CompatResult.INCOMPATIBLE: 4,
}


@dataclass(frozen=True)
class Compat:
    """A compatibility result with where it was decided (path of the first deciding node) and why."""

    result: CompatResult
    path: str = ""
    why: str = ""

    @property
    def incompatible(self) -> bool:
        return self.result == CompatResult.INCOMPATIBLE


def worst(results: Iterable[Compat], at: str) -> Compat:
    """The result of a node from its parts' results (the first of the worst rank)."""
    out = Compat(CompatResult.AS_IS, at)
    for r in results:
        if _RANK[r.result] > _RANK[out.result]:
            out = r
    return out


def short_text(n: SnapshotNode) -> str:
    return n.type_text if len(n.type_text) < 80 else n.type_text[:77] + "..."


_JAVA_RUNTIME = FLINK + "api.java.typeutils.runtime."
# snapshot classes whose serializer is not their outer class or their name without "Snapshot"
_SERIALIZER_OF = {_JAVA_RUNTIME + "JavaEitherSerializerSnapshot": _JAVA_RUNTIME + "EitherSerializer"}


def serializer_class(snapshot_class: str) -> str:
    """The serializer class a snapshot class restores: ``X$XSnapshot`` -> ``X`` (a snapshot nested
    in its serializer), ``F$YSerializerSnapshot`` -> ``F$YSerializer``, ``XSnapshot`` -> ``X``."""
    if snapshot_class in _SERIALIZER_OF:
        return _SERIALIZER_OF[snapshot_class]
    if "$" in snapshot_class:
        outer, inner = snapshot_class.rsplit("$", 1)
        if outer.endswith("Serializer"):
            return outer
        return f"{outer}${inner.removesuffix('Snapshot')}"
    return snapshot_class.removesuffix("Snapshot")


def type_class_changed(new: SnapshotNode, old: SnapshotNode, path: str) -> Compat | None:
    """The instance check every typed snapshot starts with (POJO, enum, Kryo, Avro): another type
    class is incompatible."""
    if new.type_class != old.type_class:
        return Compat(CompatResult.INCOMPATIBLE, path, f"{old.type_class} -> {new.type_class}")
    return None


def predicted(
    class_name: str,
    kind: str,
    type_class: str | None = None,
    nested: Iterable[tuple[str, SnapshotNode]] = (),
    fields: Iterable[PojoField] = (),
    facts: Mapping[str, Any] | None = None,
) -> SnapshotNode:
    """A predicted snapshot (what the new job's serializer would write; version and offsets 0)."""
    return SnapshotNode(
        class_name, 0, kind, type_class, tuple(nested), tuple(fields), dict(facts or {}), b"", 0, 0, True
    )


# new.resolveSchemaCompatibility(old) for a whole tree: a family calls it for its nested parts
Resolve = Callable[[SnapshotNode | None, SnapshotNode, str], Compat]


class Predicting(Protocol):
    """One prediction of the new job's serializer for a saved tree, as a family sees it."""

    ctx: StateContext
    classes: Mapping[str, ClassFacts]

    def predict(self, old: SnapshotNode, path: str, depth: int) -> SnapshotNode | None:
        """The prediction for a nested part (its own family decides)."""

    def extract(self, type_text: str) -> SnapshotNode | None:
        """Flink's type extraction of a declared Java type on the target line."""

    def for_class(self, facts: ClassFacts, depth: int) -> SnapshotNode:
        """The serializer the target line gives a user class with these facts."""

    def facts_of(self, node: SnapshotNode) -> ClassFacts | None:
        """The new jar's facts about the node's type class."""

    def change(self, path: str, cause: str) -> None:
        """Records what changed at ``path`` (a :class:`Cause`, or one with its details)."""

    def unknown_at(self, path: str, why: str) -> None:
        """Records a part that cannot be predicted."""


@dataclass(frozen=True)
class Advice:
    """One fix: ``code`` (stable id), ``text`` (the fix; a template with the problem's names in
    ``{}`` until :func:`udfs.restore.state_fixes.advice_for` fills them), ``verified`` (how far it
    is: flink_source, real_restores, no), ``needs_real_restore`` and ``evidence``."""

    code: str
    text: str
    verified: str
    needs_real_restore: bool
    evidence: str


@dataclass(frozen=True)
class AdviceRule:
    """The advice for one kind of problem: a problem matches when its failure is ``failure`` and
    its cause ``cause`` (None matches any)."""

    failure: Failure | None
    cause: Cause | None
    advice: tuple[Advice, ...]

    def matches(self, failure: str | None, cause: str | None) -> bool:
        return (self.failure is None or failure == self.failure) and (self.cause is None or cause == self.cause)


def _never_shown(node: SnapshotNode) -> str | None:
    return None


@dataclass(frozen=True)
class Family:
    """One serializer family, as Flink's snapshot class holds it.

    ``compatibility(new, old, path, resolve)``: ``new.resolveSchemaCompatibility(old)`` for two
    snapshots of this family's class (the class check is done); ``predict(old, predicting, path,
    depth)``: the snapshot the new job builds for a saved one of this family; ``display``: the
    serializer's ``toString()`` where it overrides Object's (None: ``Class@hash``)."""

    name: str
    compatibility: Callable[[SnapshotNode, SnapshotNode, str, Resolve], Compat]
    predict: Callable[[SnapshotNode, Predicting, str, int], SnapshotNode | None]
    display: Callable[[SnapshotNode], str | None] = _never_shown
