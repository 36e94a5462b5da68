"""Flink Kubernetes Operator resources as deploy settings (pipeline/restore/k8s.py), on resources
written as the operator's own examples write them (tests/k8s/: application and session mode,
several documents in one file, a FlinkStateSnapshot beside a deployment, nested and flat
flinkConfiguration, the autoscaler, reactive mode).

- every field of every job resource is used, said to have no effect on a restore, or named as not
  honoured with the reason: nothing is dropped silently;
- each setting lands where the operator puts it (FlinkConfigBuilder): flinkVersion -> the Flink
  line, job.parallelism (or taskManager.replicas x slots) -> -p, entryClass and args -> main(),
  the configuration that shapes the graph -> the export's -D, the savepoint and checkpoint
  directories by upgradeMode, initialSavepointPath with savepointRedeployNonce, allowNonRestoredState;
- a FlinkSessionJob takes its Flink line and configuration from its session cluster's
  FlinkDeployment in the same file, its own configuration winning;
- ``--map`` maps paths inside the image and the pods; the fleet form makes one manifest record per
  job resource (a stateless one is not checked), and a manifest line naming a resource takes its
  savepoint and flag from it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipeline.restore import k8s
from pipeline.restore.manifest import _check_line, _Resources

HERE = Path(__file__).resolve().parent / "k8s"
MAPS = [("local:///opt/flink/usrlib", "/build/libs"), ("file:///flink-data", "/mnt/flink-data")]


def _settings(file: str, name: str | None = None, maps: list | None = None) -> k8s.DeploySettings:
    resources = k8s.read_resources(str(HERE / file))
    return k8s.deploy_settings(k8s.pick(resources, name, file), resources, MAPS if maps is None else maps)


def _fields(doc: dict) -> set[str]:
    """Every field a job resource sets, as the mapping names them: spec's and spec.job's keys, each
    flinkConfiguration key (flattened), the metadata's labels and annotations."""
    spec = doc.get("spec") or {}
    out = {f"spec.{k}" for k in spec if k not in ("job", "flinkConfiguration", "deploymentName")}
    out |= {f"spec.job.{k}" for k in spec.get("job") or {}}
    out |= {f"flinkConfiguration.{k}" for k in k8s.flatten(spec.get("flinkConfiguration"))}
    if "deploymentName" in spec:
        out.add("spec.deploymentName")
    return out


def _accounted(s: k8s.DeploySettings) -> set[str]:
    names = set(s.used) | set(s.not_honoured) | {n.split(" ")[0] for n in s.no_effect}
    # spec.taskManager's replicas and the session cluster's flinkVersion are named with their owner
    return names | {n.replace(" of ", ".") for n in names} | {"spec.flinkVersion" for n in names if n.startswith(
        "spec.flinkVersion")}  # fmt: skip


@pytest.mark.parametrize("file", sorted(p.name for p in HERE.glob("*.yaml")))
def test_every_field_of_every_job_resource_is_mapped_or_named(file):
    resources = k8s.read_resources(str(HERE / file))
    assert resources and all(r.kind in k8s.JOB_KINDS for r in resources)  # the FlinkStateSnapshot is skipped
    for r in k8s.job_resources(resources):
        s = k8s.deploy_settings(r, resources, MAPS)
        missing = _fields(r.doc) - _accounted(s)
        assert not missing, (file, r.name, missing)
        assert all(why for why in s.not_honoured.values())


def test_an_application_deployment_maps_onto_the_export_and_the_savepoint():
    s = _settings("checkpoint-ha.yaml")
    assert (s.flink, s.entry_class, s.args, s.parallelism) == ("1.20", "com.example.orders.OrdersJob",
                                                             ["--topic", "orders"], 2)  # fmt: skip
    # the keys that shape IDs and chains go to the export; the cluster's stay out
    assert s.dynamic == ["pipeline.max-parallelism=256", "pipeline.operator-chaining.enabled=false"]
    assert "flinkConfiguration.high-availability.storageDir" in s.no_effect
    assert "flinkConfiguration.kubernetes.operator.savepoint.format.type" in s.no_effect
    # savepoint upgrades: the newest below both directories, mapped onto this machine
    assert (s.upgrade_mode, s.allow_non_restored_state) == ("savepoint", False)
    assert s.savepoint_dirs == ["/mnt/flink-data/checkpoints", "/mnt/flink-data/savepoints"]
    assert s.jar is None and s.jar_uri == "local:///opt/flink/usrlib/orders.jar"  # /build/libs has no orders.jar
    assert {"spec.podTemplate", "spec.image", "spec.job.state", "spec.job.savepointTriggerNonce"} <= set(s.no_effect)


def test_the_jar_inside_the_image_is_found_through_map(tmp_path):
    (tmp_path / "orders.jar").write_bytes(b"PK")
    s = _settings("checkpoint-ha.yaml", maps=[("local:///opt/flink/usrlib", str(tmp_path))])
    assert s.jar == str(tmp_path / "orders.jar")
    assert _settings("checkpoint-ha.yaml", maps=[]).jar is None


def test_session_jobs_take_their_cluster_from_the_same_file():
    first = _settings("session-deployment-and-jobs.yaml", "basic-session-job-example")
    second = _settings("session-deployment-and-jobs.yaml", "basic-session-job-example2")
    assert first.flink == second.flink == "1.20"
    assert first.dynamic == ["pipeline.max-parallelism=64"] and second.dynamic == ["pipeline.max-parallelism=32"]
    assert (first.upgrade_mode, first.parallelism, first.jar) == ("stateless", 4, None)  # an https jar: --jar
    assert (second.entry_class, second.allow_non_restored_state, second.savepoint_dirs) == (
        "org.apache.flink.streaming.examples.statemachine.StateMachineExample", True, ["s3://flink/savepoints"],
    )  # fmt: skip
    assert "spec.deploymentName" in second.used
    with pytest.raises(k8s.ResourceError, match="2 job resources"):
        _settings("session-deployment-and-jobs.yaml")
    lone = k8s.read_resources(str(HERE / "session-deployment-and-jobs.yaml"))[1:2]
    alone = k8s.deploy_settings(lone[0], lone, [])
    assert alone.flink is None and "is not among the resources read" in alone.not_honoured["spec.deploymentName"]


def test_a_redeploy_restores_from_initial_savepoint_path_and_replicas_set_the_parallelism():
    s = _settings("job-from-savepoint.yaml")
    assert s.redeploy_from_initial and s.initial_savepoint == "/mnt/flink-data/savepoints/savepoint-45305c-d867504446e0"
    assert k8s.savepoint_of(s, lambda dirs: pytest.fail("the directories are not searched")) == s.initial_savepoint
    assert (s.flink, s.parallelism) == ("2.2", 3)  # 3 replicas x 1 slot, as the operator sets parallelism.default


def test_last_state_looks_at_the_checkpoints_first_and_autoscaling_is_named():
    s = _settings("autoscaling.yaml")
    assert s.upgrade_mode == "last-state" and s.savepoint_dirs[0] == "/mnt/flink-data/checkpoints"
    assert s.dynamic == ["pipeline.max-parallelism=24"] and s.args == ["10"]
    assert set(s.not_honoured) == {
        "flinkConfiguration.job.autoscaler.enabled",
        "flinkConfiguration.jobmanager.scheduler",
    }
    assert "flinkConfiguration.job.autoscaler.metrics.window" in s.no_effect


def test_reactive_mode_and_stateless_upgrades():
    s = _settings("reactive.yaml")
    assert "REACTIVE" in s.not_honoured["flinkConfiguration.scheduler-mode"] and "spec.mode" in s.no_effect
    basic = _settings("basic.yaml")
    with pytest.raises(k8s.ResourceError, match="upgradeMode stateless"):
        k8s.savepoint_of(basic, lambda dirs: "x")


def test_the_fleet_form_makes_one_record_per_checked_job(tmp_path):
    """A folder of resources as --checks: a record per job resource whose savepoint can be found
    (the newest under its mapped directories), stateless ones said and left out."""
    sp = tmp_path / "flink-data" / "savepoints" / "savepoint-1"
    sp.mkdir(parents=True)
    (sp / "_metadata").write_bytes(b"x")
    said: list[str] = []
    resolver = _Resources(None, [("file:///flink-data", str(tmp_path / "flink-data"))], said.append)
    local = resolver.newest

    def newest(paths: list[str]) -> str:  # object storage is listed through Spark, which this test does not start
        if any(p.startswith("s3://") for p in paths):
            raise ValueError(f"no Flink _metadata file under {', '.join(paths)}")
        return local(paths)

    resolver.newest = newest  # type: ignore[method-assign]
    records = resolver.checks(str(HERE), None)
    by_id = {r.check_id: r for r in records}
    assert set(by_id) == {"streaming/orders", "autoscaling-example", "basic-reactive-example", "example-deployment"}
    assert by_id["streaming/orders"].savepoint == f"file:{sp}" and by_id["streaming/orders"].graph_id == "orders"
    assert by_id["example-deployment"].savepoint == str(
        tmp_path / "flink-data/savepoints/savepoint-45305c-d867504446e0"
    )
    assert any("basic-example not checked: upgradeMode stateless" in line for line in said)
    assert any("basic-session-job-example2 not checked: no Flink _metadata file under s3://" in line for line in said)
    orders = next(line for line in said if "streaming/orders" in line)
    assert "not honoured, as they shape the graph the fleet is given: " in orders and "spec.job.entryClass" in orders


def test_a_manifest_line_takes_its_savepoint_and_flag_from_the_resource(tmp_path):
    sp = tmp_path / "data" / "checkpoints" / "job" / "chk-7"
    sp.mkdir(parents=True)
    (sp / "_metadata").write_bytes(b"x")
    said: list[str] = []
    resolver = _Resources(None, [("file:///flink-data", str(tmp_path / "data"))], said.append)
    line = {"check_id": "orders@v43", "graph_id": "orders@v43", "resource": str(HERE / "checkpoint-ha.yaml")}
    c = _check_line(json.dumps(line), "checks.jsonl:1", str(tmp_path), None, resolver)
    assert (c.error, c.savepoint_path, c.allow_non_restored_state) == (None, f"file:{sp}", False)
    given = _check_line(json.dumps({**line, "savepoint": "sp/x"}), "checks.jsonl:2", str(tmp_path), None, resolver)
    assert given.savepoint_path == os.path.join(str(tmp_path), "sp/x")
    bad = _check_line(json.dumps({**line, "resource": str(HERE / "basic.yaml")}), "checks.jsonl:3", str(tmp_path),
                      None, resolver)  # fmt: skip
    assert bad.check_id == "orders@v43" and "upgradeMode stateless" in bad.error


def test_bad_maps_and_yaml_are_one_line_errors(tmp_path):
    with pytest.raises(k8s.ResourceError, match="--map expects PREFIX=PATH"):
        k8s.parse_maps(["local:///opt"])
    (tmp_path / "bad.yaml").write_text("apiVersion: [unclosed\n")
    with pytest.raises(k8s.ResourceError, match="not readable YAML"):
        k8s.read_resources(str(tmp_path / "bad.yaml"))
