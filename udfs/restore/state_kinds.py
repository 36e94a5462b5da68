"""The state half's vocabulary: verdicts, failure kinds, causes, stages, phases, as enums.

Each member's value is the text the restore tables hold (``StrEnum``: a member is that string, in
comparisons and in JSON), so a row reads the same as before the values had a type.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Verdict(StrEnum):
    """What a problem contributes, and the state half's verdict (RESTORES: nothing fails)."""

    FAILS = "FAILS"
    RESTORES = "RESTORES"
    NOT_DECIDABLE = "NOT_DECIDABLE"


class Stage(StrEnum):
    """Where Flink fails: the JobMaster's checks, a task restoring its state, or later, when user
    code first requests a state while processing records."""

    JOB_INIT = "job_init"
    TASK_RESTORE = "task_restore"
    TASK_RUNNING = "task_running"


class Failure(StrEnum):
    """The ``failure`` column: the kind of Flink's exception."""

    KEY_SERIALIZER_INCOMPATIBLE = "KEY_SERIALIZER_INCOMPATIBLE"
    STATE_SERIALIZER_INCOMPATIBLE = "STATE_SERIALIZER_INCOMPATIBLE"
    # a saved state registered with another kind (RegisteredKeyValueStateBackendMetaInfo
    # .checkStateMetaInfo) or another assignment mode (operator state): foreseen from the new
    # job's declared_states
    STATE_KIND_CHANGED = "STATE_KIND_CHANGED"
    ENUM_CONSTANT_REMOVED = "ENUM_CONSTANT_REMOVED"
    STATE_READ_FAILED = "STATE_READ_FAILED"  # the saved values cannot be read back at restore
    MAP_KEY_SCHEMA_CHANGED = "MAP_KEY_SCHEMA_CHANGED"
    KRYO_COLLECTION_ON_2X = "KRYO_COLLECTION_ON_2X"  # 1.x Kryo List/Map/Set/Collection state on 2.x
    SNAPSHOT_CLASS_GONE = "SNAPSHOT_CLASS_GONE"  # a saved snapshot's class cannot be loaded or restored
    # not decidable without running the job
    KRYO_CLASS_CHANGED = "KRYO_CLASS_CHANGED"
    KRYO2_VALUES_ON_KRYO5 = "KRYO2_VALUES_ON_KRYO5"
    STATE_UNREADABLE = "STATE_UNREADABLE"
    NEW_TYPE_UNKNOWN = "NEW_TYPE_UNKNOWN"
    # the new job's declaration that may register a saved state is unresolved (declared_states)
    DECLARATION_UNRESOLVED = "DECLARATION_UNRESOLVED"


class Cause(StrEnum):
    """The ``cause`` column: what changed between the saved type and the new one."""

    KEY_TYPE_CHANGED = "KEY_TYPE_CHANGED"  # the key's own serializer differs
    KEY_TYPE_EVOLVED = "KEY_TYPE_EVOLVED"  # a part inside the key differs
    DECLARED_TYPE_CHANGED = "DECLARED_TYPE_CHANGED"  # incompatible with nothing known to have changed
    POJO_FIELD_RETYPED = "POJO_FIELD_RETYPED"
    POJO_FIELDS_CHANGED = "POJO_FIELDS_CHANGED"  # written with the fields added and removed
    POJO_TO_KRYO = "POJO_TO_KRYO"
    POJO_TO_ENUM = "POJO_TO_ENUM"
    KRYO_TO_POJO = "KRYO_TO_POJO"
    KRYO_TO_ENUM = "KRYO_TO_ENUM"
    ENUM_TO_POJO = "ENUM_TO_POJO"
    ENUM_TO_GENERIC = "ENUM_TO_GENERIC"
    ENUM_CONSTANTS_CHANGED = "ENUM_CONSTANTS_CHANGED"
    ENUM_CONSTANT_REMOVED = "ENUM_CONSTANT_REMOVED"
    KRYO_COLLECTION_ON_2X = "KRYO_COLLECTION_ON_2X"
    KRYO_CLASS_CHANGED = "KRYO_CLASS_CHANGED"
    KRYO2_VALUES_ON_KRYO5 = "KRYO2_VALUES_ON_KRYO5"
    KRYO_SERIALIZER_INSTANCE_1X = "KRYO_SERIALIZER_INSTANCE_1X"
    MODULE_NOT_ON_CLASS_PATH = "MODULE_NOT_ON_CLASS_PATH"
    # what a declaration the new job makes (declared_states) changed
    STATE_KIND_CHANGED = "STATE_KIND_CHANGED"
    TTL_SWITCHED = "TTL_SWITCHED"  # TTL switched on or off: Flink's TtlSerializer wraps the value or not
    AVRO_SCHEMA_CHANGED = "AVRO_SCHEMA_CHANGED"
    DECLARATION_UNRESOLVED = "DECLARATION_UNRESOLVED"


class Phase(IntEnum):
    """The steps of one operator's restore, in the order a task runs them (docs/state-rules.md)."""

    READ = 0  # the keyed backend reads its proxy (the saved snapshots) with the new job's classes
    KEY = 1  # the key serializer is checked; the keyed backend is built
    VALUES = 2  # heap backends read every saved value back
    OP_READ = 3  # the operator backend reads its proxy
    OP_VALUES = 4  # ... and every saved value
    REGISTER = 5  # user code requests each state: kind and serializer checked


class Basis(StrEnum):
    """What a problem rests on (the ``basis`` column)."""

    SAVEPOINT = "savepoint"
    KEY_TYPE_IN_SPEC = "key_type_in_spec"
    CLASS_FACTS = "class_facts"
    SERIALIZER_MODULES = "serializer_modules"
    DECLARED_STATES = "declared_states"  # what the new job declares (the spec node field)
    FLINK_SOURCE = "flink_source"
    OBSERVED = "observed"  # seen in real restores, not read in Flink's source


class ErrorClass(StrEnum):
    """Flink's root exception classes (the ``error_class`` column)."""

    STATE_MIGRATION = "org.apache.flink.util.StateMigrationException"
    ILLEGAL_STATE = "java.lang.IllegalStateException"
    ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"
    NULL_POINTER = "java.lang.NullPointerException"
    CLASS_NOT_FOUND = "java.lang.ClassNotFoundException"
    EOF = "java.io.EOFException"
    INDEX_OUT_OF_BOUNDS = "java.lang.ArrayIndexOutOfBoundsException"


HASH = "<hash>"  # where Flink prints an identity hash code (Object.toString)
