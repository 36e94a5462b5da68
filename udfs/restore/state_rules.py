"""Flink's restore decision for the state's types: what a task does with the saved serializers.

The topology half (:mod:`udfs.restore.rules`) ends where the JobMaster hands each task its state.
From there every task of the new job restores its operators' state and checks the types; the
state half reproduces that from what can be known before deploying (docs/state-rules.md):

* the savepoint's own serializer snapshots (``udfs.savepoint.state_meta``), per operator;
* the Flink line that wrote it and the one that will read it, the restoring backend, the new
  job's key serializers and the facts of its user classes (:mod:`udfs.restore.state_inputs`).

Value types are declared in user code (a state descriptor in ``open()``), so the rules predict
the new serializer from the saved one, assuming the new job declares each saved state as the old
one did, and apply what changed: the user classes (facts) and the Flink line. Every row says what
it rests on (``basis``) and what it assumes; what that leaves open is marked not decidable, with
the reason, never guessed.

Where things are: each serializer family's compatibility rule, prediction, failures and advice in
:mod:`udfs.restore.families` (one module per family, a registry picking the family); the phases of
a task's restore and the reported failure in :mod:`udfs.restore.state_decision`; the problems and
the decision in :mod:`udfs.restore.state_problems`; the vocabulary in
:mod:`udfs.restore.state_kinds`; the advice table in :mod:`udfs.restore.state_fixes`. This module
is the state half's one entry point: :func:`decide_states` and the names callers use.
"""

from __future__ import annotations

from udfs.restore.families import (
    Prediction,
    compatibility,
    node_for_java_type,
    predict_new,
    serializer_class,
    serializer_display,
)
from udfs.restore.families.base import Compat, CompatResult
from udfs.restore.families.kryo import SERIALIZABLE_SERIALIZER_1X
from udfs.restore.state_decision import decide_states
from udfs.restore.state_inputs import (
    KEY_SERIALIZER_FIELD,
    ClassFacts,
    NewOperator,
    StateContext,
    backend_family,
    key_serializer_from_spec,
    line_major,
    savepoint_major,
)
from udfs.restore.state_kinds import Cause, Failure, Stage, Verdict
from udfs.restore.state_problems import ASSUME_DECLARED, StateDecision, StateProblem
from udfs.restore.state_value_reads import ValueRequest, ValueSource
from udfs.savepoint.type_names import ENUM, LIST, MAP, NULLABLE

__all__ = [
    "ClassFacts",
    "NewOperator",
    "StateContext",
    "StateProblem",
    "StateDecision",
    "Compat",
    "CompatResult",
    "Prediction",
    "Failure",
    "Cause",
    "Stage",
    "Verdict",
    "decide_states",
    "ValueSource",
    "ValueRequest",
    "savepoint_major",
    "line_major",
    "backend_family",
    "compatibility",
    "predict_new",
    "node_for_java_type",
    "serializer_class",
    "serializer_display",
    "key_serializer_from_spec",
    "KEY_SERIALIZER_FIELD",
    "ASSUME_DECLARED",
    "SERIALIZABLE_SERIALIZER_1X",
    "ENUM",
    "LIST",
    "MAP",
    "NULLABLE",
]

# the values by their short names, as the tests, scripts and the check's rows use them
FAILS, RESTORES, NOT_DECIDABLE = Verdict.FAILS, Verdict.RESTORES, Verdict.NOT_DECIDABLE
JOB_INIT, TASK_RESTORE, TASK_RUNNING = Stage.JOB_INIT, Stage.TASK_RESTORE, Stage.TASK_RUNNING
AS_IS, RECONFIGURED, AFTER_MIGRATION = CompatResult.AS_IS, CompatResult.RECONFIGURED, CompatResult.AFTER_MIGRATION
INCOMPATIBLE, UNKNOWN = CompatResult.INCOMPATIBLE, CompatResult.UNKNOWN
KEY_SERIALIZER_INCOMPATIBLE = Failure.KEY_SERIALIZER_INCOMPATIBLE
STATE_SERIALIZER_INCOMPATIBLE = Failure.STATE_SERIALIZER_INCOMPATIBLE
STATE_KIND_CHANGED, ENUM_CONSTANT_REMOVED = Failure.STATE_KIND_CHANGED, Failure.ENUM_CONSTANT_REMOVED
STATE_READ_FAILED, MAP_KEY_SCHEMA_CHANGED = Failure.STATE_READ_FAILED, Failure.MAP_KEY_SCHEMA_CHANGED
KRYO_COLLECTION_ON_2X, SNAPSHOT_CLASS_GONE = Failure.KRYO_COLLECTION_ON_2X, Failure.SNAPSHOT_CLASS_GONE
KRYO_CLASS_CHANGED, KRYO2_VALUES_ON_KRYO5 = Failure.KRYO_CLASS_CHANGED, Failure.KRYO2_VALUES_ON_KRYO5
STATE_UNREADABLE, NEW_TYPE_UNKNOWN = Failure.STATE_UNREADABLE, Failure.NEW_TYPE_UNKNOWN
