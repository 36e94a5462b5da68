"""Format 2: written by Flink 1.3 - 1.10 (``SavepointV2Serializer``, read by 1.11+'s ``MetadataV2Serializer``).

Fields of its time that later formats dropped: per operator a chain length (ignored), per
subtask a duration (ignored) and a count of legacy ``Checkpointed`` states (Flink 1.1), which
must be zero. There is no coordinator state, no channel state and no finished state: a
negative subtask count reads as no subtasks (Flink loops ``for j < num``) and a negative
subtask index is out of range.
"""

from __future__ import annotations

from udfs.savepoint.format_base import FormatBase
from udfs.savepoint.metadata_model import Handle, MetadataError


class FormatV2(FormatBase):
    VERSION = 2

    def coordinator_state(self) -> Handle | None:
        self.r.i32("chain length")  # legacy field, ignored by Flink
        return None

    def fully_finished(self, coordinator: Handle | None, at: int) -> bool:
        return False

    def subtask_index(self, stored: int) -> tuple[int, bool]:
        return stored, False

    def subtask_state(self) -> list[tuple[str, Handle]]:
        r = self.r
        r.i64("subtask duration")  # removed field, still in the V2 layout
        at = r.pos
        legacy = r.i32("legacy state count")
        if legacy > 0:
            raise MetadataError(
                "Legacy state (from Flink <= 1.1, created through the 'Checkpointed' interface) "
                "is no longer supported.",
                at,
            )
        return super().subtask_state()
