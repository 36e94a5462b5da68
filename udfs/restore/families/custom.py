"""Snapshot classes the rules do not model: a user's own serializer, legacy and SQL-internal ones.

A user's ``TypeSerializerSnapshot`` holds its own rule, in code the rules cannot read: the reader
stops at it (``STATE_UNREADABLE``, nothing after it in the stream is known), and a new serializer
of such a class is compatible only when its snapshot is the saved one byte for byte; anything else
is not decidable (``NEW_TYPE_UNKNOWN``). The snapshots Flink ships without a rule modelled here
(legacy config snapshots, SQL internals such as DecimalData, connectors) are judged the same way.
"""

from __future__ import annotations

from udfs.restore.families import composite
from udfs.restore.families.base import Compat, CompatResult, Family, Predicting, Resolve, short_text
from udfs.savepoint.serializer_snapshots import SnapshotNode
from udfs.savepoint.state_meta import OperatorStateTypes


def compatibility(new: SnapshotNode, old: SnapshotNode, path: str, resolve: Resolve) -> Compat:
    if new.nested or old.nested:  # parts the reader knows: resolved as a composite's
        return composite.compatibility(new, old, path, resolve)
    if new.to_dict() == old.to_dict() and new.facts == old.facts:
        return Compat(CompatResult.AS_IS, path)
    return Compat(CompatResult.UNKNOWN, path, f"{short_text(new)}: compatibility not modelled")


def predict(old: SnapshotNode, predicting: Predicting, path: str, depth: int) -> SnapshotNode | None:
    return composite.predict(old, predicting, path, depth)


def reader_stopped(op: OperatorStateTypes) -> str | None:
    """Why the reader stopped in an operator's state proxies (an unknown snapshot class), if it did."""
    return next((s.proxy.stopped for s in op.keyed + op.operator if s.proxy is not None and s.proxy.stopped), None)


FAMILY = Family("custom", compatibility, predict)
