"""The deploy gate and silent losses (issue 40, item 3): a restore Flink accepts that would lose saved
values prints each loss under its RESTORES verdict, carries them in the JUnit and JSON reports, and
with --fail-on-loss exits 4. Pure Python: the gate's rendering of a result (the Spark run that makes
the result is tests/test_deploy_gate.py's)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from pipeline.restore import command, gate

LOSS = {
    "operator_id": "c4c480dfd694dd77b0a91fa691d5b9e5",
    "state_name": "ride event",
    "backend": "keyed",
    "state_kind": "VALUE",
    "field_path": "value.fields.driverId",
    "loss": "POJO_FIELD_RENAMED",
    "detail": "field 'driverId' of org.apache.flink.training.exercises.common.datatypes.TaxiRide is gone and "
    "'driverIdent' (same type) is new: the saved values of 'driverId' are dropped, 'driverIdent' reads its default",
    "renamed_to": "driverIdent",
    "basis": '["savepoint","declared_states"]',
}
CHECK = {"check_id": "rides vs sp", "graph_id": "rides", "verdict": "RESTORES", "decidable": True}


def result(warnings: list[dict], fail_on_loss: bool, verdict: str = "RESTORES") -> gate.GateResult:
    return gate.GateResult({**CHECK, "verdict": verdict}, savepoint="file:/sp", warnings=warnings,
                           fail_on_loss=fail_on_loss)  # fmt: skip


def test_losses_print_under_a_restores_verdict():
    lines = gate.render(result([LOSS], fail_on_loss=False))
    assert lines[0] == "check-restore: RESTORES: rides from file:/sp"
    assert lines[1] == (
        "  loss: state 'ride event' (value.fields.driverId) of operator c4c480dfd694dd77b0a91fa691d5b9e5: "
        + LOSS["detail"]
    )
    assert len(lines) == 2
    assert gate.render(result([LOSS], fail_on_loss=True))[-1] == "  --fail-on-loss: exit 4 (1 loss)"
    failing = gate.render(result([LOSS], fail_on_loss=True, verdict="FAILS"))
    assert not any("loss" in line for line in failing)  # the restore fails: nothing is restored to lose


def test_exit_codes_with_and_without_fail_on_loss():
    assert result([LOSS], fail_on_loss=False).exit_code == gate.RESTORES_EXIT == 0
    assert result([LOSS], fail_on_loss=True).exit_code == gate.LOSS_EXIT == 4
    assert result([], fail_on_loss=True).exit_code == 0
    assert result([LOSS], fail_on_loss=True, verdict="FAILS").exit_code == gate.FAILS_EXIT
    assert set(gate.EXIT_CODES) == set(command.EXIT_CODES) == {0, 1, 2, 3, 4}


def test_the_reports_carry_the_losses(tmp_path):
    xml, js = gate.write_reports(str(tmp_path / "r"), result([LOSS], fail_on_loss=False))
    case = ET.parse(xml).getroot().find("testcase")
    assert case is not None and case.find("failure") is None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert list(props) == ["loss.POJO_FIELD_RENAMED"] and "driverIdent" in props["loss.POJO_FIELD_RENAMED"]
    assert "loss: state 'ride event'" in (case.findtext("system-out") or "")
    payload = json.loads(js.read_text())
    assert payload["exit_code"] == 0 and payload["loss_warnings"][0]["renamed_to"] == "driverIdent"
    xml, js = gate.write_reports(str(tmp_path / "f"), result([LOSS], fail_on_loss=True))
    root = ET.parse(xml).getroot()
    failure = root.find("testcase/failure")
    assert root.get("failures") == "1" and failure is not None and failure.get("type") == "LOSS"
    assert json.loads(js.read_text())["exit_code"] == 4
