"""The state proxies of a savepoint from stream heads read elsewhere (on Spark's executors).

:func:`udfs.savepoint.state_meta.decode_operator_states` reads each stream through a callable,
one file after another. A fleet's savepoints are read in parallel instead: the Spark side reads
the head of every state stream (``StreamHead``: inline bytes from ``_metadata``, or the first
bytes of a file), asks :func:`head_status` whether the head holds the whole proxy (else it reads
more of that stream only), and hands the heads of one savepoint to :func:`operator_states`,
which gives the same :class:`~udfs.savepoint.state_meta.OperatorStateTypes` as the sequential
reader.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from udfs.savepoint.binary import StateMetaError
from udfs.savepoint.state_meta import (
    FIRST_CHUNK,
    MAX_HEAD,
    KeyedProxy,
    OperatorProxy,
    OperatorStateTypes,
    SubtaskProxy,
    read_keyed_proxy,
    read_operator_proxy,
)

__all__ = ["FIRST_CHUNK", "MAX_HEAD", "StreamHead", "head_status", "next_length", "operator_states"]

OK, NEED_MORE, ERROR = "ok", "need_more", "error"


@dataclass(frozen=True)
class StreamHead:
    """The head of one subtask's managed keyed or operator state stream.

    ``source``: "inline", or the path as ``_metadata`` wrote it; ``data``: the bytes from the
    stream's start (None when ``error`` says why there are none: a missing file); ``whole``: the
    bytes reach the stream's end, so a proxy cut short is truncated, not merely unread."""

    operator_id: str
    operator_name: str | None
    operator_uid: str | None
    kind: str  # managed_keyed | managed_operator
    subtask: int
    handle: str
    source: str
    data: bytes | None
    whole: bool
    error: str | None = None
    layout: dict | None = None

    @staticmethod
    def from_row(row: Mapping[str, Any]) -> StreamHead:
        """From a row whose ``data`` is bytes or base64 text (JSON payloads carry it as text)."""
        data = row.get("data")
        if isinstance(data, str):
            data = base64.b64decode(data)
        return StreamHead(
            operator_id=row["operator_id"],
            operator_name=row.get("operator_name"),
            operator_uid=row.get("operator_uid"),
            kind=row["stream_kind"],
            subtask=int(row["subtask"]),
            handle=row.get("handle") or "",
            source=row.get("source") or "",
            data=None if data is None else bytes(data),
            whole=bool(row.get("whole")),
            error=row.get("error"),
            layout=_layout(row.get("layout")),
        )


def _layout(raw: object) -> dict | None:
    """A stream row's ``layout`` column: JSON text (or already a dict), None when absent."""
    if raw is None or isinstance(raw, dict):
        return raw
    return json.loads(str(raw))


def _read(kind: str, data: bytes, whole: bool) -> KeyedProxy | OperatorProxy:
    reader = read_keyed_proxy if kind == "managed_keyed" else read_operator_proxy
    return reader(data, 0, whole)


def head_status(kind: str, data: bytes | None, whole: bool) -> tuple[str, str | None]:
    """(OK | NEED_MORE | ERROR, the error): does this head hold the stream's whole proxy?"""
    if data is None:
        return ERROR, "no bytes"
    try:
        _read(kind, data, whole)
    except StateMetaError as e:
        if e.need_more and not whole:
            return NEED_MORE, str(e)
        return ERROR, str(e)
    return OK, None


def next_length(current: int) -> int | None:
    """How many bytes to ask for after a head of ``current`` bytes fell short (None: give up,
    no proxy is that long)."""
    return None if current >= MAX_HEAD else min(current * 4, MAX_HEAD)


def operator_states(heads: Iterable[StreamHead]) -> dict[str, OperatorStateTypes]:
    """Per operator (in the order the heads come, which should be the ``_metadata`` file order
    of operators and subtasks), every subtask's keyed and operator proxies, as
    :func:`~udfs.savepoint.state_meta.decode_operator_states` builds them."""
    out: dict[str, OperatorStateTypes] = {}
    for h in heads:
        entry = out.setdefault(h.operator_id, OperatorStateTypes(h.operator_id, h.operator_name, h.operator_uid))
        if h.data is None:
            sp = SubtaskProxy(h.kind, h.subtask, h.handle, h.source, None, h.error or "no bytes", layout=h.layout)
        else:
            try:
                sp = SubtaskProxy(h.kind, h.subtask, h.handle, h.source, _read(h.kind, h.data, h.whole), None,
                                  len(h.data), h.layout)  # fmt: skip
            except StateMetaError as e:
                sp = SubtaskProxy(h.kind, h.subtask, h.handle, h.source, None, str(e), len(h.data), h.layout)
        (entry.keyed if h.kind == "managed_keyed" else entry.operator).append(sp)
    return out
