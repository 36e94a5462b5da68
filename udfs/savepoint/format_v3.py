"""Format 3: written by Flink 1.11 - 1.15 (``MetadataV3Serializer``).

New in this version: the operator coordinator's state (a ``ByteStreamStateHandle`` or null)
after the max parallelism, input and output channel state after a subtask's keyed state
(``ChannelStateHandleSerializerV1``), and (written since 1.14) finished state: a subtask count
of -1 is a fully finished operator, which has no coordinator state, and a subtask index
-(i + 1) is subtask i finished, with no state behind it.
"""

from __future__ import annotations

from udfs.savepoint.format_base import FormatBase
from udfs.savepoint.metadata_model import Handle, MetadataError


class FormatV3(FormatBase):
    VERSION = 3

    def coordinator_state(self) -> Handle | None:
        at = self.r.pos
        coordinator = self.handles.stream_handle(0)
        if coordinator is not None and coordinator.type_name != "ByteStreamStateHandle":
            raise MetadataError(f"expected a ByteStreamStateHandle but found a {coordinator.type_name}", at)
        return coordinator

    def fully_finished(self, coordinator: Handle | None, at: int) -> bool:
        if coordinator is not None:
            raise MetadataError("Coordinator State should be null for fully finished operator state", at)
        return True

    def subtask_index(self, stored: int) -> tuple[int, bool]:
        return (-stored - 1, True) if stored < 0 else (stored, False)

    def subtask_state(self) -> list[tuple[str, Handle]]:
        r = self.r
        handles = super().subtask_state()
        for kind, is_input in (("input_channel", True), ("output_channel", False)):
            # deserializeCollection: new ArrayList<>() then 'for i < size': negative = empty
            n = r.i32(kind + " state count")
            if n > r.end - r.pos:
                raise MetadataError(f"truncated file: {kind} state count {n} cannot fit", r.pos - 4)
            for _ in range(max(n, 0)):
                h = self.channel_handle(is_input)
                if h is not None:
                    handles.append((kind, h))
        return handles

    def channel_handle(self, is_input: bool) -> Handle | None:
        """One input channel (``is_input``) or result subpartition state handle."""
        return self.handles.channel_handle(is_input)
