"""Flink's restore decision for one (savepoint, new JobGraph) pair, in plain Python.

This is the JobMaster's check at job start, step by step as Flink runs it
(``Checkpoints.loadAndValidateCheckpoint`` then ``StateAssignmentOperation.assignStates``):

1. every saved operator state, in the order the ``_metadata`` file lists it, is looked up
   among the new job's operator IDs (generated and user-defined, ``OperatorIDPair``);
   a match whose saved max parallelism differs from a vertex max parallelism that was
   *configured* fails ("Max parallelism mismatch"); no match + state fails ("Cannot map
   checkpoint/savepoint state"), unless allowNonRestoredState; no match + no state is dropped;
2. (1.9/1.10, FLINK-16638) a state matched only through a user-defined ID then fails the
   completeness check ("There is no operator for the state"), walked in Java HashMap order;
3. per vertex, the states are assigned (user-defined ID first when set, since 1.14 only when
   the savepoint holds state under it: FLINK-13973), and a vertex that received subtask
   states checks its parallelism against each state's max parallelism.

What differs between Flink lines is data (:class:`RestoreProfile`, the ``restore`` section of
``conf/profiles/<line>.json`` as :mod:`udfs.flink.profiles` reads it), so this module never
compares versions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from udfs.flink.job_graph import default_max_parallelism
from udfs.flink.profiles import restore_rules

RESTORES, FAILS, ERROR = "RESTORES", "FAILS", "ERROR"
UNMAPPED_STATE = "UNMAPPED_STATE"
MAX_PARALLELISM_MISMATCH = "MAX_PARALLELISM_MISMATCH"
PARALLELISM_ABOVE_MAX = "PARALLELISM_ABOVE_MAX"
NO_OPERATOR_FOR_STATE = "NO_OPERATOR_FOR_STATE"  # 1.9/1.10 completeness check (FLINK-16638)

# Per-saved-operator outcomes.
MATCHED = "MATCHED"  # restored into the new job
DROPPED_EMPTY = "DROPPED_EMPTY"  # no new operator, no state: Flink skips it silently
SKIPPED = "SKIPPED"  # no new operator, has state, allowNonRestoredState: state discarded
LOST = "LOST"  # no new operator, has state: the restore fails on it
MATCHED_NOT_ASSIGNED = "MATCHED_NOT_ASSIGNED"  # matched, but the vertex took the other ID's state
NOT_REACHED = "NOT_REACHED"  # Flink threw before looking at it

MAX_PARALLELISM_DEFAULT = -1  # JobVertex.MAX_PARALLELISM_DEFAULT: not configured


@dataclass(frozen=True)
class RestoreProfile:
    """The restore rules of one Flink line (``conf/profiles/<line>.json`` -> ``restore``)."""

    # False in 1.9/1.10: the lookup holds generated IDs, expanded with user-defined IDs on the
    # first miss, and the completeness check then rejects a state matched only that way.
    user_defined_ids_complete: bool
    # FLINK-13973 (1.14+): a vertex uses its user-defined ID only if the savepoint holds it.
    user_defined_id_only_if_saved: bool
    # "collected_subtask_states" (1.14+: TaskStateAssignment.hasNonFinishedState) or
    # "any_matched_state" (before: any matched OperatorState makes the task stateful).
    parallelism_check_when: str
    # "hashmap" (1.14+: oldState is a HashMap keyed by generated ID) or "operator_order".
    parallelism_check_order: str
    messages: dict[str, str]

    @staticmethod
    def for_line(version: str | None) -> RestoreProfile | None:
        """The rules of a Flink line from its profile, None for a line without them."""
        raw = restore_rules(version) if version else None
        return None if raw is None else RestoreProfile.from_dict(raw)

    @staticmethod
    def from_dict(raw: dict) -> RestoreProfile:
        return RestoreProfile(
            user_defined_ids_complete=bool(raw["user_defined_ids_complete"]),
            user_defined_id_only_if_saved=bool(raw["user_defined_id_only_if_saved"]),
            parallelism_check_when=str(raw["parallelism_check_when"]),
            parallelism_check_order=str(raw["parallelism_check_order"]),
            messages=dict(raw["messages"]),
        )


@dataclass(frozen=True)
class SavedOperator:
    """One operator state of a ``_metadata`` file, as Flink reads it."""

    operator_id: str
    parallelism: int
    max_parallelism: int
    has_state: bool  # any handle in any subtask, or coordinator state
    subtask_count: int = 0  # subtask states stored (Flink's getNumberCollectedStates); -1: fully finished
    state_size: int = 0

    @staticmethod
    def from_dict(row: Mapping[str, Any], subtask_count_key: str = "subtask_count") -> SavedOperator:
        """One operator of a savepoint as its readers hold it: a ``savepoint_operators`` row, the
        fields of the ``_metadata`` reader's ``OperatorState``, or what Flink itself read as the
        restore harness recorded it (there the count is ``subtask_states``). A fully finished
        operator counts -1 subtask states; a missing count or size is 0."""
        return SavedOperator(
            operator_id=row["operator_id"],
            parallelism=int(row["parallelism"]),
            max_parallelism=int(row["max_parallelism"]),
            has_state=bool(row["has_state"]),
            subtask_count=-1 if row.get("fully_finished") else int(row.get(subtask_count_key) or 0),
            state_size=int(row.get("state_size") or 0),
        )


@dataclass(frozen=True)
class NewVertex:
    """One JobVertex of the new job (the pipeline's ``job_vertices`` row)."""

    jobvertex_id: str
    parallelism: int
    max_parallelism: int  # the head's StreamNode value; -1 = not configured
    operator_ids: Sequence[str]  # JobVertex.getOperatorIDs() order
    user_operator_ids: Sequence[str | None]
    vertex_order: int = 0

    @staticmethod
    def from_dict(row: Mapping[str, Any]) -> NewVertex:
        """A ``job_vertices`` row, as JSON or as a pandas record: a user-defined ID that is
        null, empty or NaN (pandas' null in an object column) is no user-defined ID."""
        return NewVertex(
            jobvertex_id=row["jobvertex_id"],
            parallelism=int(row["parallelism"]),
            max_parallelism=int(row["max_parallelism"]),
            operator_ids=list(row["operator_ids"]),
            user_operator_ids=[u if isinstance(u, str) and u else None for u in row["user_operator_ids"]],
            vertex_order=int(row["vertex_order"]),
        )

    def resolved_max_parallelism(self) -> int:
        """What ExecutionJobVertex.getMaxParallelism() returns before any restore."""
        if self.max_parallelism == MAX_PARALLELISM_DEFAULT:
            return compute_default_max_parallelism(self.parallelism)
        return self.max_parallelism

    @property
    def max_parallelism_configured(self) -> bool:
        return self.max_parallelism != MAX_PARALLELISM_DEFAULT


@dataclass
class OperatorOutcome:
    operator_index: int  # position in the _metadata file
    operator_id: str
    status: str
    matched_via: str | None = None  # "generated" | "user_defined"
    jobvertex_id: str | None = None
    generated_operator_id: str | None = None  # the new operator's generated ID it maps to


@dataclass
class Decision:
    verdict: str
    failure: str | None
    operator_id: str | None
    message: str | None
    dropped_operator_ids: list[str]
    operators: list[OperatorOutcome] = field(default_factory=list)


# KeyGroupRangeAssignment.computeDefaultMaxParallelism, the one rule (udfs/flink/job_graph.py)
compute_default_max_parallelism = default_max_parallelism


def _java_id_hash(operator_id: str) -> int:
    """AbstractID.hashCode of an OperatorID printed as hex (lower long first), spread as HashMap.hash."""
    lower, upper = int(operator_id[:16], 16), int(operator_id[16:], 16)
    h = (lower ^ (lower >> 32) ^ upper ^ (upper >> 32)) & 0xFFFFFFFF
    return h ^ (h >> 16)


def java_hashmap_order(ids: Sequence[str], initial_capacity: int) -> list[str]:
    """Iteration order of a java.util.HashMap<OperatorID, ?> built by inserting ``ids`` in order.

    Buckets in index order, insertion order within a bucket (resizes keep it); the table
    starts at tableSizeFor(initial_capacity) and doubles while size exceeds 0.75 of it.
    """
    cap = 1
    while cap < max(initial_capacity, 1):
        cap <<= 1
    while len(ids) > int(cap * 0.75):
        cap <<= 1
    return [i for _, _, i in sorted((_java_id_hash(i) & (cap - 1), n, i) for n, i in enumerate(ids))]


def _expected_size_capacity(n: int) -> int:
    """CollectionUtil.newHashMapWithExpectedSize(n)'s initial capacity."""
    return n + 1 if n < 3 else int(n / 0.75 + 1.0)


OperatorLookup = dict[str, tuple[NewVertex, int]]  # operator ID -> (vertex, position in its operator IDs)


@dataclass(frozen=True)
class Failure:
    """Why the restore fails: the failure kind, the ID it names (the saved operator's, or the
    vertex's for PARALLELISM_ABOVE_MAX) and the rest of its message's fields."""

    kind: str
    failing_id: str
    fields: dict[str, object] = field(default_factory=dict)

    def message(self, profile: RestoreProfile, savepoint_pointer: str) -> str:
        """The profile's message of this kind; each names the ID by its own placeholder
        ({operator_id} or {jobvertex_id})."""
        return profile.messages[self.kind].format(
            savepoint=savepoint_pointer, operator_id=self.failing_id, jobvertex_id=self.failing_id, **self.fields
        )


def decide(
    saved: Sequence[SavedOperator],
    vertices: Sequence[NewVertex],
    allow_non_restored_state: bool,
    profile: RestoreProfile,
    savepoint_pointer: str,
) -> Decision:
    """Flink's verdict; the first failure in Flink's own walk order is the one reported. The
    steps are the module's three (:func:`load_and_validate`,
    :func:`check_state_mapping_completeness`, :func:`assign_states`), each only if the one
    before did not fail."""
    generated, user_defined = operator_id_lookups(vertices)
    outcomes, matched, failure = load_and_validate(saved, generated, user_defined, allow_non_restored_state)
    by_id = {o.operator_id: o for o in outcomes}
    if failure is None and not profile.user_defined_ids_complete:
        failure = check_state_mapping_completeness(matched, generated, allow_non_restored_state, len(saved))
        if failure is not None:
            by_id[failure.failing_id].status = LOST
    unassigned: list[str] = []
    if failure is None:
        failure, unassigned = assign_states(vertices, matched, profile)
    if failure is not None:
        return Decision(
            FAILS, failure.kind, failure.failing_id, failure.message(profile, savepoint_pointer), [], outcomes
        )
    for op_id in unassigned:
        by_id[op_id].status = MATCHED_NOT_ASSIGNED
    dropped = [o.operator_id for o in outcomes if o.status in (DROPPED_EMPTY, SKIPPED, MATCHED_NOT_ASSIGNED)]
    return Decision(RESTORES, None, None, None, dropped, outcomes)


def operator_id_lookups(vertices: Sequence[NewVertex]) -> tuple[OperatorLookup, OperatorLookup]:
    """The new job's operators by generated ID and by user-defined ID (Flink's
    ``OperatorIDPair``); an ID held twice maps to the last holder in vertex order."""
    generated: OperatorLookup = {}
    user_defined: OperatorLookup = {}
    for v in vertices:
        for pos, (gen, usr) in enumerate(zip(v.operator_ids, v.user_operator_ids, strict=True)):
            generated[gen] = (v, pos)
            if usr:
                user_defined[usr] = (v, pos)
    return generated, user_defined


def load_and_validate(
    saved: Sequence[SavedOperator],
    generated: OperatorLookup,
    user_defined: OperatorLookup,
    allow_non_restored_state: bool,
) -> tuple[list[OperatorOutcome], dict[str, SavedOperator], Failure | None]:
    """Step 1, ``Checkpoints.loadAndValidateCheckpoint``: each saved operator in file order,
    looked up by generated ID, then by user-defined ID. Returns every saved operator's outcome
    (NOT_REACHED past a failure), the matched states by saved ID in file order (the order of
    Flink's HashMap puts), and the failure if any."""
    outcomes = [OperatorOutcome(i, s.operator_id, NOT_REACHED) for i, s in enumerate(saved)]
    matched: dict[str, SavedOperator] = {}
    for out, s in zip(outcomes, saved, strict=True):
        hit = generated.get(s.operator_id)
        via = "generated"
        if hit is None and s.operator_id in user_defined:
            hit, via = user_defined[s.operator_id], "user_defined"
        if hit is not None:
            v, pos = hit
            out.matched_via, out.jobvertex_id, out.generated_operator_id = via, v.jobvertex_id, v.operator_ids[pos]
            if s.max_parallelism != v.resolved_max_parallelism() and v.max_parallelism_configured:
                out.status = LOST
                mismatch = {"saved_max": s.max_parallelism, "new_max": v.max_parallelism}
                return outcomes, matched, Failure(MAX_PARALLELISM_MISMATCH, s.operator_id, mismatch)
            out.status = MATCHED
            matched[s.operator_id] = s
        elif allow_non_restored_state:
            out.status = SKIPPED if s.has_state else DROPPED_EMPTY
        elif s.has_state:
            out.status = LOST
            return outcomes, matched, Failure(UNMAPPED_STATE, s.operator_id)
        else:
            out.status = DROPPED_EMPTY
    return outcomes, matched, None


def check_state_mapping_completeness(
    matched: dict[str, SavedOperator], generated: OperatorLookup, allow_non_restored_state: bool, saved_count: int
) -> Failure | None:
    """Step 2 where user-defined IDs are not complete (1.9/1.10),
    ``StateAssignmentOperation.checkStateMappingCompleteness``: in the HashMap order of the
    matched states, the first one matched only through a user-defined ID fails."""
    for op_id in java_hashmap_order(list(matched), saved_count):
        if op_id in generated:
            continue
        if not allow_non_restored_state:
            return Failure(NO_OPERATOR_FOR_STATE, op_id)
        # Only logged ("Skipped checkpoint state"): the state stays, and the vertex that
        # uses the user-defined ID still restores it in step 3.
    return None


def assign_states(
    vertices: Sequence[NewVertex], matched: dict[str, SavedOperator], profile: RestoreProfile
) -> tuple[Failure | None, list[str]]:
    """Step 3, ``StateAssignmentOperation.assignStates``: per vertex in JobGraph order, which
    matched state each operator takes (its user-defined ID's when set, since FLINK-13973 only
    if that was saved; else its generated ID's), then, for a vertex that is stateful by the
    profile's rule, the parallelism check against each taken state's max parallelism, in the
    profile's order. Returns the failure if any, and the matched IDs no operator took."""
    local = dict(matched)
    for v in sorted(vertices, key=lambda x: x.vertex_order):
        taken: list[tuple[str, SavedOperator]] = []  # (generated id, state)
        for gen, usr in zip(v.operator_ids, v.user_operator_ids, strict=True):
            use = usr if usr and (not profile.user_defined_id_only_if_saved or usr in local) else gen
            state = local.pop(use, None)
            if state is not None:
                taken.append((gen, state))
        if profile.parallelism_check_when == "collected_subtask_states":
            stateful = any(s.subtask_count > 0 for _, s in taken)
        else:
            stateful = bool(taken)
        if not stateful:
            continue
        if profile.parallelism_check_order == "hashmap":
            order = java_hashmap_order([g for g, _ in taken], _expected_size_capacity(len(v.operator_ids)))
            states = dict(taken)
            taken = [(g, states[g]) for g in order]
        for _, s in taken:
            if s.max_parallelism < v.parallelism:
                fields = {"saved_max": s.max_parallelism, "parallelism": v.parallelism}
                return Failure(PARALLELISM_ABOVE_MAX, v.jobvertex_id, fields), []
    return None, list(local)


@dataclass
class Problems:
    """Everything that stops the restore, not only the first one Flink reports (for fixes)."""

    unmapped: list[int]  # indexes of saved operators with state that no new operator ID matches
    max_parallelism: list[tuple[int, NewVertex]]  # matched, configured max parallelism differs
    parallelism: list[tuple[NewVertex, int]]  # vertex, lowest saved max parallelism below its parallelism


def all_problems(saved: Sequence[SavedOperator], vertices: Sequence[NewVertex]) -> Problems:
    lookup: dict[str, NewVertex] = {}
    for v in vertices:
        for gen, usr in zip(v.operator_ids, v.user_operator_ids, strict=True):
            lookup[gen] = v
            if usr:
                lookup.setdefault(usr, v)
    out = Problems([], [], [])
    lowest: dict[str, int] = {}
    for i, s in enumerate(saved):
        v = lookup.get(s.operator_id)
        if v is None:
            if s.has_state:
                out.unmapped.append(i)
            continue
        if v.max_parallelism_configured and s.max_parallelism != v.max_parallelism:
            out.max_parallelism.append((i, v))
        if s.subtask_count > 0 and s.max_parallelism < v.parallelism:
            lowest[v.jobvertex_id] = min(lowest.get(v.jobvertex_id, s.max_parallelism), s.max_parallelism)
    out.parallelism = [(v, lowest[v.jobvertex_id]) for v in vertices if v.jobvertex_id in lowest]
    return out
