"""Agreement of ``check-restore`` (both halves, through Spark) with real Flink restores, per aspect, per set.

    .venv/bin/python scripts/state_agreement.py conformance/statetypes/statetypes-2.3-s21.jsonl.gz [...]
        [--out-dir conformance/statetypes] [--work DIR]

Each set (``statetypes`` format, docs/statetypes-harness.md) is laid out as a user would have it:
every case's v1 and v2 specs as graph files (with the exporter's ``state_backend``,
``user_classes`` and ``state_key_serializer_snapshot``: nothing is taken from the case's
recorded truth), every case's savepoint (or retained checkpoint) unpacked into its own folder, and
a manifest naming, per case, the savepoint, the new graph and ``savepoint_graph_id`` (v1). The
real ``check-restore`` runs (``pipeline.restore.check.check_restore``) and each case's
``restore_checks`` row is compared with what Flink did, read as in tests/state_vectors.py
(``recorded``: the failure kind from Flink's root exception, the operator its exception chain or
its failed task names, the message with ``<savepoint>`` for the savepoint's path, the failure
stage), on five aspects: verdict, failure, operator_id, message, failure_stage.

Per aspect a case **agrees** (the row's value is Flink's), is **not decidable** (the row says so:
``decidable`` false covers every aspect; a FAILS row's ``undecidable_reasons`` name the aspects it
leaves open: ``reported`` the failure, operator, message and stage, ``operator_id`` the operator
alone, ``failure`` the failure and message, ``message``, ``failure_stage``) or **disagrees**.
Agreement is counted first: a value the row marks uncertain but gets right agrees (the file
counts the rows that leave an aspect open, and how many of them get all five right).

Every case whose v2 spec says what its operators declare (``declared_states``, the seed-41 sets
on) is judged. In a set whose specs do not (seeds 21 and 31), a case whose outcome depends on
state declared only in user code is **listed apart**, with the reason, on every aspect: which
cases are is read from what v2 changed (the case's edits), never from either outcome. v2
declaring a saved state of a user function (keyed, operator or broadcast state) with another kind
or value type (state descriptors live in ``open()`` / ``initializeState()``, not in the
StreamGraph), or building its Avro GenericRecord schema differently in code. Those rows assume
each saved state is declared as before and say so (``states_checked_in_user_code``); the file
shows how many listed-apart cases they get right anyway.

A sixth aspect, **losses**, for the cases Flink restored in sets whose harness probed the
restored values (seed 41 on: ``restored`` per state): the states whose saved values did not come
across (a state v2 no longer declares or renamed, POJO / Avro / Kryo fields dropped, values
absent) against the states the check's ``restore_warnings`` name. It agrees when they are the
same states (no warning where every value came back), is not decidable when the row is, and is
not applicable where Flink did not restore or nothing was probed.

Writes ``<out-dir>/agreement-<set>.txt`` per set (the table, then every disagreement, every
listed-apart case with its reason, and every not-decidable case with the row's reason) and prints
the tables. Exit code 0 when nothing disagrees.

Cases replayed on real Flink (``conformance/statetypes/replays``, scripts/statetypes_replay.py: the
case's v2 restored again from its archived snapshot, several times) carry what the replays showed:
``stable`` (Flink gave the recorded outcome every time) or ``NOT STABLE`` (another outcome in some
run: a race or the JVM's history, where Flink itself is not deterministic); the file lists them
with the check's judgement.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import state_vectors as sv  # noqa: E402
from udfs.restore import state_rules as sr  # noqa: E402

ASPECTS = sv.ASPECTS
LOSSES = "losses"
AGREE, NOT_DECIDABLE, DISAGREE, APART = "agree", "not decidable", "disagree", "listed apart"
NOT_APPLICABLE = "not applicable"
# which aspects an entry of undecidable_reasons ("<aspect>: <why>") leaves open
_OPEN = {
    "reported": ("failure", "operator_id", "message", "failure_stage"),
    "operator_id": ("operator_id",),
    "failure": ("failure", "message"),
    "message": ("message",),
    "failure_stage": ("failure_stage",),
    "verdict": ASPECTS,
}


@dataclass
class Judged:
    """One case: Flink's outcome, the row's, and per aspect agree / not decidable / disagree."""

    case_id: str
    changed: str  # what v2 changed (the case's edits), to read a disagreement by
    apart: str | None  # why the case is listed apart (apart_reason), None: judged
    flink: dict[str, Any]
    row: dict[str, Any]
    aspects: dict[str, str] = field(default_factory=dict)  # agree / not decidable / disagree, listed apart or not
    reasons: list[str] = field(default_factory=list)
    losses: str = NOT_APPLICABLE  # the sixth aspect (module docstring)
    lost: list[str] = field(default_factory=list)  # the states whose saved values Flink did not carry over
    warned: list[str] = field(default_factory=list)  # the states the check's restore_warnings name

    def verdict_on(self, aspect: str) -> str:
        """The aspect as counted: listed apart for a listed-apart case, else its judgement."""
        return APART if self.apart else self.aspects[aspect]


def read_set(path: Path) -> list[dict[str, Any]]:
    name = path.name.removesuffix(".jsonl.gz")
    with gzip.open(path, "rt") as f:
        return [dict(json.loads(x), _set=name) for x in f if x.strip()]


def unpack(case: dict[str, Any], set_dir: Path, dest: Path) -> Path:
    import tarfile

    sp = case["savepoint"]
    with tarfile.open(set_dir / sp["archive"]) as tar:
        tar.extractall(dest, filter="data")
    return dest / sp["dir_name"]


def lay_out(cases: list[dict[str, Any]], sets_dir: Path, root: Path) -> dict[str, Path]:
    """graphs/graphs.jsonl, savepoints/<case>/<folder>, checks.jsonl; case id -> savepoint folder.
    Each case's archive is in its set's folder (``sets_dir/<set>``: cases of several sets mix)."""
    (root / "graphs").mkdir(parents=True)
    folders: dict[str, Path] = {}
    specs, checks = [], []
    for c in cases:
        folder = unpack(c, sets_dir / c["_set"], root / "savepoints" / c["case_id"])
        folders[c["case_id"]] = folder
        specs += [json.dumps(c["v1"]), json.dumps(c["v2"])]
        checks.append({"check_id": c["case_id"], "savepoint": str(folder.relative_to(root)),
                       "graph_id": c["v2"]["graph_id"], "savepoint_graph_id": c["v1"]["graph_id"]})  # fmt: skip
    (root / "graphs" / "graphs.jsonl").write_text("\n".join(specs) + "\n")
    (root / "checks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in checks))
    return folders


def run_check_restore(spark: Any, settings: Any, root: Path) -> dict[str, dict[str, Any]]:
    """The real check-restore over the layout; check id -> its restore_checks row, with the
    check's ``restore_warnings`` rows under ``_warnings``."""
    from pipeline.restore.check import check_restore

    out = root / "out"
    check_restore(spark, str(root / "graphs"), str(root / "checks.jsonl"), str(out), settings)
    rows = spark.read.format("delta").load(str(out / "restore_checks")).toPandas().to_dict("records")
    warned = spark.read.format("delta").load(str(out / "restore_warnings")).toPandas().to_dict("records")
    by_check: dict[str, list[dict[str, Any]]] = {}
    for w in warned:
        by_check.setdefault(w["check_id"], []).append(w)
    return {r["check_id"]: {**r, "_warnings": by_check.get(r["check_id"], [])} for r in rows}


def _listed(value: Any) -> list[str]:
    return [] if value is None else [str(v) for v in value]


def edits_text(case: dict[str, Any]) -> str:
    """The case's edits in one line: ``change_state_kind keyed-1/map_pojo MAP->VALUE; rename_op ...``."""
    out = []
    for e in case["edits"]:
        what = e.get("target") or ""
        if e.get("state"):
            what += "/" + str(e["state"])
        if "old_jar" in e:
            what += f" {e['old_jar']}->{e['new_jar']}"
        elif "old" in e:
            what += f" {e['old']}->{e['new']}"
        out.append(f"{e['type']} {what}".strip())
    backend = case["runtime"]["state_backend"]
    fmt = case["runtime"].get("savepoint_format") or case["runtime"].get("taken_by")
    return f"[{backend} {fmt}] " + ("; ".join(out) or "no edit")


USER_CODE_STATE = "state declared only in user code"
_NOT_IN_GRAPH = "(state descriptors are not in the StreamGraph)"
APART_REASONS = {
    "change_state_kind": f"v2 declares a saved state with another kind in user code {_NOT_IN_GRAPH}",
    "change_value_type": f"v2 declares a saved state with another value type in user code {_NOT_IN_GRAPH}",
    "avro_schema": "v2 builds its Avro GenericRecord schema differently in code (GenericRecordAvroTypeInfo: "
    "no class to describe)",
    "broadcast": "v2 declares the broadcast state with another kind or value type (the descriptor the broadcast "
    "operator holds is not exported: a gap of the exporter, not of the StreamGraph)",
}
# harness program segments (StPlan's operator keys: with a uid, else the segment kind) whose states
# a user function declares: the keyed process function, the CheckpointedFunction's operator state;
# broadcast state is declared in main() and held by the operator; ``win`` is a built-in window operator
_USER_FUNCTION_SEGMENTS = ("keyed", "opstate", "ost")
_BROADCAST_SEGMENTS = ("bc",)


def declares(spec: dict[str, Any]) -> bool:
    """The spec says what its operators declare (the node field ``declared_states``)."""
    return any("declared_states" in n for n in spec.get("nodes", ()))


def apart_reason(case: dict[str, Any]) -> str | None:
    """Why the case's outcome depends on state declared only in user code, from what v2 changed
    (its edits), or None. Never read from an outcome. None whenever v2's spec says what its
    operators declare: then the check compares the saved states with the declared ones."""
    if declares(case.get("v2") or {}):
        return None
    for e in case["edits"]:
        segment = str(e.get("target", "")).split("-", 1)[0]
        if e["type"] in ("change_state_kind", "change_value_type") and segment in _USER_FUNCTION_SEGMENTS:
            return APART_REASONS[e["type"]]
        if e["type"] in ("change_state_kind", "change_value_type") and segment in _BROADCAST_SEGMENTS:
            return APART_REASONS["broadcast"]
        if e["type"] == "change_user_class" and e.get("target") == "AvroRec":
            return APART_REASONS["avro_schema"]
    return None


def judge(case: dict[str, Any], row: dict[str, Any], folder: Path) -> Judged:
    """The row against Flink's outcome, aspect by aspect."""
    flink = sv.recorded(case, sv.inputs(case, folder))
    message = row.get("message")
    if message:
        message = message.replace(f"file:{folder}", "<savepoint>")
    got = {
        "verdict": row["verdict"],
        "failure": row.get("failure"),
        "operator_id": row.get("operator_id"),
        "message": message,
        "failure_stage": row.get("failure_stage"),
    }
    if row["verdict"] != sr.FAILS:
        got = {a: (got[a] if a == "verdict" else None) for a in ASPECTS}
    reasons = _listed(row.get("undecidable_reasons"))
    open_aspects: set[str] = set(ASPECTS) if row.get("decidable") is False else set()
    for r in reasons:
        open_aspects.update(_OPEN.get(r.split(":", 1)[0].strip(), ()))
    j = Judged(case["case_id"], edits_text(case), apart_reason(case), flink, got, reasons=reasons)
    for a in ASPECTS:
        if row.get("decidable") is False:
            j.aspects[a] = NOT_DECIDABLE
        elif got[a] == flink[a]:
            j.aspects[a] = AGREE
        else:
            j.aspects[a] = NOT_DECIDABLE if a in open_aspects else DISAGREE
    judge_losses(j, case, row)
    return j


def flink_losses(case: dict[str, Any]) -> list[str] | None:
    """The states whose saved values Flink's restore did not carry over, from the harness's probe
    of the restored values (``restored`` of each v1 state: not declared any more, fields lost,
    absent, inconsistent); None when Flink did not restore or nothing was probed."""
    if case["verdict"] != "RESTORED":
        return None
    outcomes = [s.get("restored") for s in case["states_v1"]]
    if not any(outcomes) or any((o or {}).get("outcome") == "unprobed" for o in outcomes):
        return None
    return sorted({s["state_name"] for s in case["states_v1"] if (s.get("restored") or {}).get("lost")})


def judge_losses(j: Judged, case: dict[str, Any], row: dict[str, Any]) -> None:
    """The sixth aspect: the states the check warns of against the states Flink lost (by name:
    a case's state names are its own, one operator each)."""
    lost = flink_losses(case)
    j.warned = sorted({str(w["state_name"]) for w in row.get("_warnings") or ()})
    if lost is None:
        return
    j.lost = lost
    if j.aspects["verdict"] != AGREE:
        j.losses = NOT_DECIDABLE if j.aspects["verdict"] == NOT_DECIDABLE else DISAGREE
    else:
        j.losses = AGREE if j.lost == j.warned else DISAGREE


def counts(judged: list[Judged]) -> dict[str, dict[str, int]]:
    """Per aspect (and ``all five``): how many cases agree, are not decidable, disagree, are listed
    apart; ``losses`` over the cases it applies to."""
    out = {a: dict(Counter(j.verdict_on(a) for j in judged)) for a in ASPECTS}
    out["all five"] = dict(Counter(APART if j.apart else _whole(j) for j in judged))
    out[LOSSES] = dict(Counter(APART if j.apart else j.losses for j in judged if j.losses != NOT_APPLICABLE))
    return out


def table(name: str, judged: list[Judged], unchanged: int) -> str:
    """The agreement table of one set, then the disagreements, the listed-apart cases and the not
    decidable cases (and the replayed ones, :func:`replay_stability`)."""
    replays = replay_stability()
    n = len(judged)
    apart = [j for j in judged if j.apart]
    m = n - len(apart)
    lines = [
        f"# {name}: check-restore against Flink, {n} real restores",
        "",
        f"{m} judged; {len(apart)} listed apart (the outcome depends on {USER_CODE_STATE}: reasons below).",
        "",
        "| aspect | agree | not decidable | disagree | listed apart |",
        "|---|---|---|---|---|",
    ]
    table_counts = counts(judged)
    for a in (*ASPECTS, "all five"):
        c = table_counts[a]
        lines.append(
            f"| {a} | {c.get(AGREE, 0)}/{m} | {c.get(NOT_DECIDABLE, 0)} | {c.get(DISAGREE, 0)} | {c.get(APART, 0)} |"
        )
    c = table_counts[LOSSES]
    probed = sum(c.values())
    if probed:
        lines.append(
            f"| {LOSSES} (restored, probed) | {c.get(AGREE, 0)}/{probed - c.get(APART, 0)} | "
            f"{c.get(NOT_DECIDABLE, 0)} | {c.get(DISAGREE, 0)} | {c.get(APART, 0)} |"
        )
    else:
        lines.append(f"| {LOSSES} | - (the set has no probe of the restored values) | | | |")
    anyway = sum(1 for j in apart if _whole(j) == AGREE)
    left_open = [j for j in judged if not j.apart and j.reasons]
    lines += [
        "",
        f"Rows that leave an aspect open (undecidable_reasons not empty): {len(left_open)}; of these, all five "
        f"agree anyway (the row's value was Flink's) in {sum(1 for j in left_open if _whole(j) == AGREE)}",
        f"Rows with inputs taken as unchanged (taken_as_unchanged not empty): {unchanged}",
        "",
        "Listed apart by reason:",
    ]
    reasons = Counter(j.apart for j in apart)
    lines += [f"- {k} {reason}" for reason, k in reasons.most_common()] or ["- none"]
    lines += [
        f"(of these, the rows, which assume every saved state declared as before, get all five right anyway in "
        f"{anyway})",
        "",
        "Disagreements (aspect: Flink | check-restore), with what v2 changed:",
    ]
    wrong = [j for j in judged if not j.apart and (DISAGREE in j.aspects.values() or j.losses == DISAGREE)]
    for j in wrong:
        lines.append(f"- {j.case_id} {j.changed}")
        for a in ASPECTS:
            if j.aspects[a] == DISAGREE:
                lines.append(f"  - {a}: {_short(j.flink[a])} | {_short(j.row[a])}")
        if j.losses == DISAGREE:
            lines.append(f"  - {LOSSES}: {j.lost} | {j.warned}")
    if not wrong:
        lines.append("- none")
    lost = [j for j in judged if j.losses == AGREE and j.lost]
    lines += ["", f"Restores that lost values, each warned of ({len(lost)}; the states):"]
    lines += [f"- {j.case_id} {j.changed}: {', '.join(j.lost)}" for j in lost] or ["- none"]
    lines += ["", "Listed apart (what v2 changed; Flink | check-restore, verdict and failure):"]
    for j in apart:
        flink = f"{j.flink['verdict']} {j.flink['failure'] or ''}".strip()
        row = f"{j.row['verdict']} {j.row['failure'] or ''}".strip()
        lines.append(f"- {j.case_id} {j.changed}: {j.apart}; {flink} | {row}")
    lines += ["", "Not decidable (the row's reasons):"]
    for j in judged:
        which = [a for a in ASPECTS if j.aspects[a] == NOT_DECIDABLE]
        if which and not j.apart:
            what = "all five" if len(which) == len(ASPECTS) else ", ".join(which)
            why = "; ".join(_short(r, 160) for r in j.reasons) or "decidable = false"
            flink = f"{j.flink['verdict']} {j.flink['failure'] or ''}".strip()
            replayed = f" [replays: {replays[j.case_id]}]" if j.case_id in replays else ""
            lines.append(f"- {j.case_id} ({what}; Flink: {flink}; {j.changed}){replayed}: {why}")
    lines += _replayed(judged, replays)
    return "\n".join(lines) + "\n"


REPLAYS = ROOT / "conformance" / "statetypes" / "replays"


def replay_stability(folder: Path = REPLAYS) -> dict[str, str]:
    """Case ID -> ``stable over N runs`` / ``NOT STABLE over N runs``, from the replays' reports
    (``replays-*.txt``, what scripts/statetypes_replay.py prints)."""
    out: dict[str, str] = {}
    for f in sorted(folder.glob("replays-*.txt")):
        case = None
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("st-"):
                case = line.split()[0]
            elif case and "over" in line and ("stable" in line or "STABLE" in line):
                out[case] = line.strip()
                case = None
    return out


def _replayed(judged: list[Judged], replays: dict[str, str]) -> list[str]:
    """The replayed cases of the set: what Flink did run after run, and the check's judgement."""
    mine = [j for j in judged if j.case_id in replays]
    if not mine:
        return []
    lines = [
        "",
        "Replayed on real Flink (conformance/statetypes/replays: v2 restored again from the case's archived "
        "snapshot; NOT STABLE: Flink itself reported another outcome in some run, a race between tasks or "
        "subtasks or the JVM's history, which the check leaves open rather than pick one):",
    ]
    for j in mine:
        which = [a for a in ASPECTS if j.aspects[a] == NOT_DECIDABLE]
        judged_as = f"not decidable on {', '.join(which)}" if which else "all five agree"
        race = [r for r in j.reasons if "fails first" in r or "fail differently" in r]
        flagged = "; the row marks the reported failure a race" if race and not which else ""
        lines.append(f"- {j.case_id}: {replays[j.case_id]}; check-restore: {judged_as}{flagged}")
    return lines


SUMMARY_HEAD = (
    "| set | restores | judged | all five agree | not decidable | disagree | listed apart | losses agree |\n"
    "|---|---|---|---|---|---|---|---|"
)


def summary_line(name: str, judged: list[Judged]) -> str:
    """One line of the table over sets (:data:`SUMMARY_HEAD`): the all-five counts, then the
    losses aspect over the restored, probed cases (``-``: the set has no probe of the values)."""
    every = counts(judged)
    c = every["all five"]
    m = len(judged) - c.get(APART, 0)
    losses = every[LOSSES]
    judged_losses = sum(v for k, v in losses.items() if k != APART)
    cells = (
        str(len(judged)),
        str(m),
        f"{c.get(AGREE, 0)}/{m}",
        *(str(c.get(k, 0)) for k in (NOT_DECIDABLE, DISAGREE, APART)),
        f"{losses.get(AGREE, 0)}/{judged_losses}" if judged_losses else "-",
    )
    return f"| {name} | " + " | ".join(cells) + " |"


def _whole(j: Judged) -> str:
    """A case on all five aspects: disagrees if one does, else agrees if all do."""
    if DISAGREE in j.aspects.values():
        return DISAGREE
    return AGREE if all(v == AGREE for v in j.aspects.values()) else NOT_DECIDABLE


def _short(v: Any, n: int = 200) -> str:
    s = "None" if v is None else str(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def agreement(spark: Any, settings: Any, path: Path, work: Path) -> tuple[str, list[Judged]]:
    name = path.name.removesuffix(".jsonl.gz")
    cases = read_set(path)
    root = work / name
    if root.exists():
        shutil.rmtree(root)
    folders = lay_out(cases, path.parent, root)
    rows = run_check_restore(spark, settings, root)
    judged = [judge(c, rows[c["case_id"]], folders[c["case_id"]]) for c in cases]
    unchanged = sum(1 for c in cases if _listed(rows[c["case_id"]].get("taken_as_unchanged")))
    return table(name, judged, unchanged), judged


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sets", nargs="+", type=Path, help="statetypes sets (.jsonl.gz, the set's folder beside it)")
    p.add_argument("--out-dir", type=Path, help="where agreement-<set>.txt goes (default: beside each set)")
    p.add_argument("--work", type=Path, help="scratch folder for the layouts (default: a temporary one)")
    args = p.parse_args(argv)

    from pipeline.session import get_spark
    from pipeline.settings import load_settings

    settings = load_settings({"spark.master": "local[2]", "spark.shuffle_partitions": 4})
    spark = get_spark(settings, app_name="state-agreement")
    wrong = 0
    summary = [SUMMARY_HEAD]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        for path in args.sets:
            text, judged = agreement(spark, settings, path, work)
            name = path.name.removesuffix(".jsonl.gz")
            out = (args.out_dir or path.parent) / f"agreement-{name}.txt"
            out.write_text(text)
            print(text)
            summary.append(summary_line(name, judged))
            wrong += sum(1 for j in judged if not j.apart and (DISAGREE in j.aspects.values() or j.losses == DISAGREE))
    spark.stop()
    print("\n".join(summary))
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
