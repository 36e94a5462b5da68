"""What every ``_metadata`` format version shares, as Flink's ``MetadataV2V3SerializerBase``.

After the magic number and the format version (read by ``metadata``), every format has the
checkpoint ID, the master states and the operator states, and may end with a trailer.
:class:`FormatBase` reads that frame and builds each :class:`OperatorState` from what the
format's own methods read: the operator's header fields, its coordinator state, what a
negative subtask count or subtask index means, and a subtask's handles. Each format version
is one subclass in its own module, overriding only what its version changed: ``format_v2``
and ``format_v3`` extend this base (as Flink's V2 and V3 serializers do), ``format_v4``
extends ``format_v3``, ``format_v5`` ``format_v4`` and ``format_v6`` ``format_v5``. The
state handles are read by the reading release's :class:`HandleReader` (``handles``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from udfs.savepoint.metadata_model import (
    Handle,
    MetadataError,
    MetadataReader,
    OperatorState,
    SavepointMetadata,
    operator_state_of,
)
from udfs.savepoint.releases import ReadingRelease

MASTER_STATE_MAGIC = 0xC96B1696


class FormatBase(ABC):
    """One read of one file's body by the reader of format ``VERSION``; ``r`` stands after the
    format version, ``release`` is the reading release."""

    VERSION: int

    def __init__(self, r: MetadataReader, release: ReadingRelease) -> None:
        self.r = r
        self.handles = release.handle_reader(r)

    def read(self) -> SavepointMetadata:
        """The body, to the end of the trailer (what follows is ``unparsed_bytes``)."""
        r = self.r
        at = r.pos
        checkpoint_id = r.i64("checkpoint id")
        if checkpoint_id < 0:
            raise MetadataError(f"invalid checkpoint ID: {checkpoint_id}", at)
        at = r.pos
        num_master = r.i32("number of master states")
        if num_master < 0:
            raise MetadataError(f"invalid number of master states: {num_master}", at)
        master_names = [self.master_state() for _ in range(num_master)]
        num_ops = r.count("number of operator states", 16)
        operators = [self.operator_state() for _ in range(num_ops)]
        body_end = r.pos
        trailer_class, props = self.trailer()
        return SavepointMetadata(
            format_version=self.VERSION,
            checkpoint_id=checkpoint_id,
            operators=operators,
            master_state_count=num_master,
            trailer_bytes=r.pos - body_end,
            body_end=body_end,
            total_bytes=r.end,
            unparsed_bytes=r.end - r.pos,
            master_state_names=master_names,
            trailer_class=trailer_class,
            checkpoint_properties=props,
            tags_seen=self.handles.tags,
            files=list(self.handles.files),
        )

    def master_state(self) -> str:
        """One master state (MetadataV2V3SerializerBase.deserializeMasterState): its name."""
        r = self.r
        at = r.pos
        if r.i32("master state magic") & 0xFFFFFFFF != MASTER_STATE_MAGIC:
            raise MetadataError("incorrect magic number in master state byte sequence", at)
        at = r.pos
        num = r.i32("master state length")
        if num <= 0:
            raise MetadataError("found zero or negative length for master state bytes", at)
        r.need(num, "master state bytes")
        inner = MetadataReader(r.data, r.pos, r.pos + num)
        inner.i32("master state version")
        name = inner.utf("master state name")
        inner.skip(inner.count("master state payload length"), "master state payload")
        if inner.pos != r.pos + num:
            raise MetadataError("found trailing bytes in master state", inner.pos)
        r.pos += num
        return name

    def trailer(self) -> tuple[str | None, dict | None]:
        """What follows the operator states: (class, properties) of the checkpoint properties;
        here nothing."""
        return None, None

    # -- one operator state -------------------------------------------------------------------------

    def operator_name_and_uid(self) -> tuple[str | None, str | None]:
        """What precedes the operator ID."""
        return None, None

    @abstractmethod
    def coordinator_state(self) -> Handle | None:
        """What follows the max parallelism: the operator coordinator's state, if the format has one."""

    @abstractmethod
    def fully_finished(self, coordinator: Handle | None, at: int) -> bool:
        """A negative subtask count (read at ``at``): whether it marks a fully finished operator."""

    @abstractmethod
    def subtask_index(self, stored: int) -> tuple[int, bool]:
        """A subtask index as stored: (index, whether the subtask is finished and has no state)."""

    def operator_state(self) -> OperatorState:
        r = self.r
        start = r.pos
        name, uid = self.operator_name_and_uid()
        op_id = r.take(16, "operator id").hex()
        self.handles.operator_id = op_id  # the files its handles name are its
        parallelism = r.i32("parallelism")
        max_parallelism = r.i32("max parallelism")
        if parallelism < 0:  # OperatorState's constructor: new HashMap<>(parallelism)
            raise MetadataError(f"Illegal initial capacity: {parallelism} (negative parallelism)", r.pos)
        if parallelism > max_parallelism:  # OperatorState's constructor
            raise MetadataError(
                f"Parallelism {parallelism} is not smaller or equal to max parallelism {max_parallelism}.", r.pos
            )
        coordinator = self.coordinator_state()
        at = r.pos
        num_subtasks = r.i32("number of subtask states")
        fully_finished = False
        subtasks: dict[int, list[tuple[str, Handle]] | None] = {}
        if num_subtasks < 0:
            fully_finished = self.fully_finished(coordinator, at)
        else:
            if num_subtasks > r.end - r.pos:
                raise MetadataError(f"truncated file: {num_subtasks} subtask states cannot fit", at)
            for _ in range(num_subtasks):
                at = r.pos
                index, finished = self.subtask_index(r.i32("subtask index"))
                if index < 0 or index >= parallelism:
                    raise MetadataError(f"subtask index {index} outside the operator's parallelism {parallelism}", at)
                # OperatorState.putState: a HashMap, a repeated index replaces the earlier one
                subtasks[index] = None if finished else self.subtask_state()
        return operator_state_of(
            operator_id=op_id,
            parallelism=parallelism,
            max_parallelism=max_parallelism,
            name=name,
            uid=uid,
            file_offset=start,
            coordinator=coordinator,
            subtasks=subtasks,
            fully_finished=fully_finished,
        )

    # -- one subtask state --------------------------------------------------------------------------

    def subtask_state(self) -> list[tuple[str, Handle]]:
        """One subtask state: (kind, handle) for each non-null handle. Here managed and raw
        operator state (each behind a present flag), then managed and raw keyed state, as every
        format has them."""
        r = self.r
        handles: list[tuple[str, Handle]] = []
        for kind in ("managed_operator", "raw_operator"):
            if r.i32(kind + " present flag") != 0:
                h = self.handles.operator_handle()
                if h is not None:
                    handles.append((kind, h))
        for kind in ("managed_keyed", "raw_keyed"):
            h = self.handles.keyed_handle(0)
            if h is not None:
                handles.append((kind, h))
        return handles
