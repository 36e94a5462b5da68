"""Silent losses: saved values a restore that Flink accepts does not carry into the new job.

Flink reports none of these: the job restores and runs, and the values are gone (or not where
the new code reads). Each is one :class:`RestoreWarning`, a row of ``restore_warnings``:

* ``STATE_NOT_DECLARED``: a saved state the new version no longer declares. Flink restores it and
  keeps it in every later snapshot (the heap backend keeps its restored tables, RocksDB its column
  family: seen in every ``remove_state`` / ``rename_state`` restore of the statetypes sets, the
  state was in v2's own next savepoint), but no code reads it again;
* ``STATE_RENAMED``: the same, where the new version declares a state the savepoint lacks with the
  same kind and serializer: most likely a rename, and the new name starts empty;
* ``POJO_FIELD_REMOVED`` / ``POJO_FIELD_RENAMED``: ``PojoSerializer`` reads a saved field the new
  class lacks and drops it (a renamed field is a field removed and one added: the new field reads
  its Java default);
* ``AVRO_FIELD_REMOVED``: Avro skips a writer field the reader schema lacks;
* ``KRYO_FIELD_REMOVED``: Kryo reads a class whose trailing fields are gone and leaves their saved
  bytes unread (RocksDB reads each value on its own: the values read, without those fields).

``basis`` says what the warning rests on (the savepoint, the declared states, class facts) as the
problems' column does; ``detail`` says what is lost in a sentence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["Loss", "RestoreWarning", "WARNING_FIELDS"]


class Loss(StrEnum):
    """The ``loss`` column: what kind of saved values do not come across."""

    STATE_NOT_DECLARED = "STATE_NOT_DECLARED"
    STATE_RENAMED = "STATE_RENAMED"
    POJO_FIELD_REMOVED = "POJO_FIELD_REMOVED"
    POJO_FIELD_RENAMED = "POJO_FIELD_RENAMED"
    AVRO_FIELD_REMOVED = "AVRO_FIELD_REMOVED"
    KRYO_FIELD_REMOVED = "KRYO_FIELD_REMOVED"


@dataclass
class RestoreWarning:
    """One silent loss in one state of one operator: ``field_path`` where in the state's type
    (None: the whole state), ``detail`` what is lost, ``renamed_to`` the new state or field the
    values most likely belong to now."""

    operator_id: str
    state_name: str
    loss: str
    detail: str
    backend: str | None = None
    state_kind: str | None = None
    field_path: str | None = None
    renamed_to: str | None = None
    basis: list[str] = field(default_factory=list)


# the columns of a restore_warnings row after the check key (pipeline/tables/columns.py)
WARNING_FIELDS = ("operator_id", "state_name", "backend", "state_kind", "field_path", "loss", "detail", "renamed_to",
                  "basis")  # fmt: skip
