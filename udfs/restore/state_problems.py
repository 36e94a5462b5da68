"""What the state half finds: one problem per state that fails or cannot be decided, one decision per check.

A problem sits where Flink would meet it (:class:`WalkOrder`): sorting a check's problems by it is
Flink's walk (tasks by vertex, a chain tail first, the phases of one operator in order), so the
first certain failure is the one Flink reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from udfs.restore.state_kinds import Phase, Verdict

__all__ = [
    "StateProblem",
    "StateDecision",
    "WalkOrder",
    "OperatorPosition",
    "reported_decision",
    "ASSUME_DECLARED",
    "ASSUME_OPEN",
]


class OperatorPosition(NamedTuple):
    """Where an operator restores in the new job: tasks (job vertices) fail independently, in
    vertex order as far as any order holds; inside one, the chain's tail restores first."""

    vertex_order: int
    jobvertex_id: str
    tail_first: int  # minus the chain index
    file_index: int  # the operator's place in the savepoint's file

    @property
    def task(self) -> tuple[int, str]:
        return self.vertex_order, self.jobvertex_id


class WalkOrder(NamedTuple):
    """Where a problem sits in Flink's walk: the operator, the phase, the state's place in it."""

    vertex_order: int
    jobvertex_id: str
    tail_first: int
    file_index: int
    phase: Phase
    index: int

    @property
    def task(self) -> tuple[int, str]:
        return self.vertex_order, self.jobvertex_id

    @property
    def operator(self) -> OperatorPosition:
        return OperatorPosition(*self[:4])


@dataclass
class StateProblem:
    """One thing that breaks, may break, or cannot be decided, for one state of one operator.

    ``verdict``: what it contributes (FAILS, NOT_DECIDABLE, or RESTORES for a warning);
    ``failure``: the kind (:class:`Failure`); ``cause``: what changed (:class:`Cause`, POJO_FIELD_RETYPED,
    KRYO_COLLECTION_ON_2X, ...); ``field_path``: where in the state's type; ``message`` /
    ``error_class``: Flink's root exception, in that line's words, ``<hash>`` for identity
    hashes; ``failure_stage``: job_init | task_restore | task_running; ``basis``: what it rests
    on (``savepoint``, ``key_type_in_spec``, ``class_facts``, ``flink_source``, ``observed``);
    ``assumes``: what it takes for granted; ``certain``: the verdict is certain;
    ``uncertain``: aspects left open (message, failure_stage, reported) and why;
    ``reported``: the one Flink's exception names (first in Flink's order); ``order``: its place in
    Flink's walk."""

    verdict: str
    failure: str
    operator_id: str
    state_name: str | None
    backend: str | None = None
    state_kind: str | None = None
    cause: str | None = None
    field_path: str | None = None
    error_class: str | None = None
    message: str | None = None
    failure_stage: str | None = None
    basis: list[str] = field(default_factory=list)
    assumes: list[str] = field(default_factory=list)
    certain: bool = True
    uncertain: dict[str, str] = field(default_factory=dict)
    undecidable_reason: str | None = None
    reported: bool = False
    order: WalkOrder | tuple[()] = ()


@dataclass
class StateDecision:
    """The state half of one check: FAILS when some problem certainly fails (then ``failure``,
    ``operator_id``, ``state_name``, ``message``, ``failure_stage`` are the reported one's),
    NOT_DECIDABLE when none fails for sure but something cannot be decided, else RESTORES.
    ``assumes``: what every verdict here takes for granted; ``depends_on_user_code``: the states
    (``operator_id/state``) checked only when user code requests them, whose verdict therefore
    holds only if the new job declares them as the old one did (kind, type): a change there is
    not decidable without running the job; ``taken_as_unchanged``: the inputs that were missing
    and taken as unchanged (``class <name>``: a user class in the saved types without facts;
    ``key of <operator>``: no key serializer in the spec; ``backend of <operator>``: a canonical
    savepoint and no configured backend); ``warnings``: the silent losses a restore Flink accepts
    would bring (:mod:`udfs.restore.state_warnings`)."""

    verdict: str
    problems: list[StateProblem]
    failure: str | None = None
    operator_id: str | None = None
    state_name: str | None = None
    uncertain: dict[str, str] = field(default_factory=dict)  # what of the reported failure is left open, why
    error_class: str | None = None
    message: str | None = None
    failure_stage: str | None = None
    assumes: list[str] = field(default_factory=list)
    depends_on_user_code: list[str] = field(default_factory=list)
    taken_as_unchanged: list[str] = field(default_factory=list)
    warnings: list[Any] = field(default_factory=list)  # silent losses (state_warnings.RestoreWarning)
    value_requests: list[Any] = field(default_factory=list)  # streams whose bytes would decide (ValueRequest)

    @property
    def reported(self) -> StateProblem | None:
        return next((p for p in self.problems if p.reported), None)


ASSUME_DECLARED = (
    "the new job declares every saved state as the old one did (same name, kind and Java type); "
    "a changed declaration is in user code and not decidable without running the job"
)
ASSUME_OPEN = (
    "the state is requested in open()/initializeState(); first requested while processing records: task_running"
)


def reported_decision(items: list[StateProblem]) -> StateDecision:
    """Flink reports the first failure in its walk order; failures in different tasks race."""
    items.sort(key=lambda p: p.order)
    fails = [p for p in items if p.verdict == Verdict.FAILS]
    undecided = [p for p in items if p.verdict == Verdict.NOT_DECIDABLE]
    decision = StateDecision(Verdict.RESTORES, items, assumes=[ASSUME_DECLARED])
    if fails:
        first = fails[0]
        _report(decision, first)
        order = first.order
        if len({p.order.task for p in fails}) > 1:
            decision.uncertain[_race_key(fails)] = "failures in several tasks: Flink reports whichever task fails first"
        registered = [p for p in fails if p.order.operator == order.operator and p.order.phase == Phase.REGISTER]
        if order.phase == Phase.REGISTER and len(registered) > 1:
            decision.uncertain["reported"] = (
                "several states of the operator fail at registration: Flink names the first the user code requests "
                "(the savepoint's order here: RocksDB's registration order, a hash order for heap savepoints)"
            )
        if undecided and any(p.order < order for p in undecided):
            decision.uncertain.setdefault("reported", "an earlier step is not decidable")
        elif any(p.order.task != order.task for p in undecided):
            decision.uncertain.setdefault(
                "reported", "a state of another task is not decidable: if that task fails, Flink may report it first"
            )
    elif undecided:
        decision.verdict = Verdict.NOT_DECIDABLE
        decision.uncertain = {"verdict": "; ".join(sorted({p.undecidable_reason or p.failure for p in undecided}))}
    return decision


def _race_key(fails: list[StateProblem]) -> str:
    """What a race between tasks leaves open: only the operator when each task's first failure
    is the same failure with the same message at the same stage (the same class of a lost
    serializer in every task, say), else the whole reported failure."""
    firsts: dict[tuple[int, str], StateProblem] = {}
    for p in fails:
        firsts.setdefault(p.order.task, p)
    same = {(p.failure, p.error_class, p.message, p.failure_stage) for p in firsts.values()}
    return "operator_id" if len(same) == 1 and not any(p.uncertain for p in firsts.values()) else "reported"


def _report(decision: StateDecision, first: StateProblem) -> None:
    """The decision names the failure Flink reports."""
    first.reported = True
    decision.verdict = Verdict.FAILS
    decision.failure, decision.operator_id, decision.state_name = first.failure, first.operator_id, first.state_name
    decision.error_class, decision.message = first.error_class, first.message
    decision.failure_stage = first.failure_stage
    decision.uncertain = dict(first.uncertain)
