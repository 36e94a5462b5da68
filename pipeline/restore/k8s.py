"""Flink Kubernetes Operator resources as the deploy settings of a restore check.

A fleet deployed with the Flink Kubernetes Operator keeps each job's deploy settings in a
``FlinkDeployment`` (application mode: ``spec.job`` set) or a ``FlinkSessionJob`` (a job of the
session cluster its ``spec.deploymentName`` names) resource. :func:`read_resources` reads them from
YAML (one or many documents per file, a folder of files); :func:`deploy_settings` maps one onto what
the check uses, as the operator applies it (``FlinkConfigBuilder``): the entry class, arguments
and parallelism (``job.parallelism``, or ``taskManager.replicas`` x task slots) of the job's
``main()``, the Flink line (``flinkVersion``), the Flink configuration the export applies (the keys
that change IDs and chains among them: ``pipeline.max-parallelism``, ``pipeline.operator-chaining.*``),
the savepoint the upgrade restores from (by ``upgradeMode``: the newest under the savepoint and
checkpoint directories; ``initialSavepointPath``) and ``allowNonRestoredState``. Every field is
either used (``used``: field -> how), without effect on a restore (``no_effect``), or named as not
honoured with the reason (``not_honoured``): nothing is dropped silently.

Paths inside the image or the pods (``local:///opt/flink/usrlib/job.jar``,
``file:///flink-data/savepoints``) mean nothing on the machine running the check: ``--map
PREFIX=PATH`` maps a prefix onto a local path (or another URI), and the jar can be given with
``--jar`` as for any check.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

API_GROUP = "flink.apache.org/"
JOB_KINDS = ("FlinkDeployment", "FlinkSessionJob")
UPGRADE_MODES = ("stateless", "savepoint", "last-state")
# Flink configuration keys the check itself applies (the rest of flinkConfiguration goes to the
# export, as -D): where savepoints and checkpoints land, the savepoint path and its flag.
SAVEPOINT_DIR_KEYS = ("execution.checkpointing.savepoint-dir", "state.savepoints.dir")
CHECKPOINT_DIR_KEYS = ("execution.checkpointing.dir", "state.checkpoints.dir")
SAVEPOINT_PATH_KEY = "execution.savepoint.path"
ALLOW_KEY = "execution.savepoint.ignore-unclaimed-state"
# The cluster's own settings (processes, memory, HA, REST, metrics, Kubernetes, the operator):
# they change no operator ID, chain, parallelism or state.
CLUSTER_PREFIXES = (
    "kubernetes.", "high-availability", "jobmanager.", "taskmanager.", "rest.", "web.", "metrics.", "security.",
    "env.", "akka.", "pekko.", "blob.", "resourcemanager.", "cluster.", "heartbeat.", "io.tmp.dirs", "process.",
    "historyserver.", "slot.", "restart-strategy", "fs.", "s3.", "s3a.", "gs.", "azure.",
    "state.backend.local-recovery",
    "execution.checkpointing.interval", "execution.checkpointing.timeout", "execution.checkpointing.num-retained",
    "state.checkpoints.num-retained", "$internal.",
)  # fmt: skip
# Keys that do change what restores, but that a check before the deploy cannot apply.
NOT_HONOURED_KEYS = {
    "pipeline.jobvertex-parallelism-overrides": "per-vertex parallelism the scheduler applies after the JobGraph is "
    "built: the check uses each vertex's parallelism from the job",
    "scheduler-mode": "REACTIVE takes the parallelism from the slots at run time: the check uses the job's",
    "jobmanager.scheduler": "the adaptive scheduler may run vertices at another parallelism than the job's",
    "pipeline.jars": "the job's jar comes from --jar (or jarURI with --map)",
    "pipeline.classpaths": "extra jars come from --classpath",
    "execution.target": "the check captures the job's submission, wherever it would go",
}
AUTOSCALER_PREFIXES = ("job.autoscaler.", "kubernetes.operator.job.autoscaler.")
# Fields of the resource that change nothing a restore decides (images, pods, resources, nonces).
NO_EFFECT_FIELDS = (
    "spec.image", "spec.imagePullPolicy", "spec.serviceAccount", "spec.ingress", "spec.podTemplate",
    "spec.jobManager", "spec.logConfiguration", "spec.mode", "spec.restartNonce", "spec.job.state",
    "spec.job.savepointTriggerNonce", "spec.job.checkpointTriggerNonce", "spec.job.autoscalerResetNonce",
    "metadata.labels", "metadata.annotations", "status",
)  # fmt: skip


class ResourceError(ValueError):
    """A resource that cannot be used: one line naming the file, the resource and the field."""


@dataclass(frozen=True)
class Resource:
    """One document: its kind, name, namespace, the whole object and where it was read."""

    kind: str
    name: str
    namespace: str | None
    doc: dict[str, Any]
    source: str  # "<file>#<document number>"

    @property
    def key(self) -> str:
        """``<namespace>/<name>`` (``<name>`` without a namespace): the check id."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass
class DeploySettings:
    """What one job resource sets for the restore check, and what became of each of its fields."""

    resource: Resource
    flink: str | None = None
    jar: str | None = None
    jar_uri: str | None = None
    entry_class: str | None = None
    args: list[str] | None = None
    parallelism: int | None = None
    dynamic: list[str] = field(default_factory=list)  # KEY=VALUE for the export
    allow_non_restored_state: bool | None = None
    upgrade_mode: str = "stateless"
    savepoint_dirs: list[str] = field(default_factory=list)  # newest _metadata below them
    initial_savepoint: str | None = None
    redeploy_from_initial: bool = False  # savepointRedeployNonce with initialSavepointPath
    used: dict[str, str] = field(default_factory=dict)
    no_effect: list[str] = field(default_factory=list)
    not_honoured: dict[str, str] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        """The field mapping as the JSON report keeps it."""
        return {"resource": f"{self.resource.kind} {self.resource.key}", "source": self.resource.source,
                "used": self.used, "no_effect": self.no_effect, "not_honoured": self.not_honoured}  # fmt: skip


def read_resources(path: str) -> list[Resource]:
    """Every Flink job resource (and the session clusters they name) of a YAML file (several
    documents, ``---`` between them) or of every ``.yaml`` / ``.yml`` file of a folder, in file
    order. Other kinds (a ``FlinkStateSnapshot``, a ``Service``) are skipped."""
    import yaml

    files = sorted(p for p in Path(path).rglob("*") if p.suffix in (".yaml", ".yml")) if os.path.isdir(path) else [
        Path(path)
    ]  # fmt: skip
    if not files:
        raise ResourceError(f"{path}: no .yaml or .yml file")
    out = []
    for f in files:
        try:
            docs = list(yaml.safe_load_all(f.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError) as e:
            raise ResourceError(f"{f}: not readable YAML ({str(e).splitlines()[0]})") from e
        for i, doc in enumerate(docs, start=1):
            if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(API_GROUP):
                meta = doc.get("metadata") or {}
                if doc.get("kind") in JOB_KINDS and meta.get("name"):
                    out.append(Resource(doc["kind"], str(meta["name"]), meta.get("namespace"), doc, f"{f}#{i}"))
    return out


def job_resources(resources: list[Resource]) -> list[Resource]:
    """The resources that run a job: a FlinkSessionJob, or a FlinkDeployment with ``spec.job``."""
    return [r for r in resources if r.kind == "FlinkSessionJob" or (r.doc.get("spec") or {}).get("job")]


def pick(resources: list[Resource], name: str | None, path: str) -> Resource:
    """The one job resource of ``resources`` (or the one called ``name``: ``name`` or
    ``namespace/name``)."""
    jobs = job_resources(resources)
    if name:
        jobs = [r for r in jobs if name in (r.name, r.key)]
    if len(jobs) != 1:
        names = ", ".join(f"{r.kind} {r.key}" for r in job_resources(resources)) or "none"
        which = f" called {name}" if name else ""
        raise ResourceError(f"{path}: {len(jobs)} job resources{which} (FlinkDeployment with spec.job, "
                            f"FlinkSessionJob; found: {names}): pick one with --resource-name")  # fmt: skip
    return jobs[0]


def flatten(config: Any, prefix: str = "") -> dict[str, str]:
    """``flinkConfiguration`` as Flink keys and string values: nested maps joined with dots (the
    operator accepts both ``state.savepoints.dir: x`` and ``state: {savepoints.dir: x}``),
    booleans as ``true`` / ``false``."""
    out: dict[str, str] = {}
    for key, value in (config or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        elif isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, list):
            out[name] = ";".join(str(v) for v in value)
        elif value is not None:
            out[name] = str(value)
    return out


def map_path(value: str, maps: list[tuple[str, str]]) -> str:
    """``value`` with the longest matching ``--map`` prefix replaced (``local:///opt/flink/usrlib``
    -> ``build/libs``); relative local results against the working directory."""
    for prefix, target in sorted(maps, key=lambda m: -len(m[0])):
        if value == prefix or value.startswith(prefix.rstrip("/") + "/"):
            mapped = target.rstrip("/") + value[len(prefix.rstrip("/")) :]
            return mapped if "://" in mapped or mapped.startswith("file:") else os.path.abspath(mapped)
    return value


def parse_maps(pairs: list[str]) -> list[tuple[str, str]]:
    """``--map PREFIX=PATH`` pairs."""
    out = []
    for pair in pairs:
        prefix, sep, target = pair.partition("=")
        if not sep or not prefix or not target:
            raise ResourceError(f"--map expects PREFIX=PATH (e.g. local:///opt/flink/usrlib=build/libs), got {pair!r}")
        out.append((prefix, target))
    return out


def deploy_settings(r: Resource, resources: list[Resource], maps: list[tuple[str, str]]) -> DeploySettings:
    """The check's settings from one job resource (and, for a FlinkSessionJob, from the session
    cluster's FlinkDeployment among ``resources``), every field accounted for."""
    spec = r.doc.get("spec") or {}
    s = DeploySettings(r)
    cluster = _session_cluster(r, resources, s) if r.kind == "FlinkSessionJob" else r
    cluster_spec = (cluster.doc.get("spec") or {}) if cluster else {}
    _flink_version(cluster_spec, cluster, s)
    config = {**flatten(cluster_spec.get("flinkConfiguration")), **flatten(spec.get("flinkConfiguration"))}
    _job_fields(spec.get("job") or {}, s, maps)
    _parallelism(spec, cluster_spec, config, s)
    _configuration(config, s, maps)
    for name in NO_EFFECT_FIELDS:
        if _has(r.doc, name):
            s.no_effect.append(name)
    _unknown_fields(r.doc, s)
    return s


def _has(doc: dict, dotted: str) -> bool:
    node: Any = doc
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _session_cluster(r: Resource, resources: list[Resource], s: DeploySettings) -> Resource | None:
    """The FlinkDeployment a FlinkSessionJob runs on, when it is among the resources read."""
    name = (r.doc.get("spec") or {}).get("deploymentName")
    found = [c for c in resources if c.kind == "FlinkDeployment" and c.name == name and c.namespace == r.namespace]
    if found:
        s.used["spec.deploymentName"] = (
            f"the session cluster {found[0].key} ({found[0].source}): its flinkVersion and flinkConfiguration"
        )
        return found[0]
    s.not_honoured["spec.deploymentName"] = (
        f"the session cluster {name!r} is not among the resources read: its flinkVersion and flinkConfiguration are "
        "not known (give --flink, and the cluster's file too)"
    )
    return None


def _flink_version(cluster_spec: dict, cluster: Resource | None, s: DeploySettings) -> None:
    version = cluster_spec.get("flinkVersion")
    if not version:
        return
    text = str(version)
    if text.startswith("v") and "_" in text:
        s.flink = text[1:].replace("_", ".")
        where = "spec.flinkVersion" if cluster is s.resource else f"spec.flinkVersion of {cluster.key}"
        s.used[where] = f"the Flink line {s.flink} (--flink)"
    else:
        s.not_honoured["spec.flinkVersion"] = f"{text!r} is not a FlinkVersion such as v1_20"


def _job_fields(job: dict, s: DeploySettings, maps: list[tuple[str, str]]) -> None:
    """``spec.job``: the jar, entry class, arguments, upgrade mode, savepoint and its flag."""
    if job.get("jarURI"):
        s.jar_uri = str(job["jarURI"])
        s.jar = _local_jar(s.jar_uri, maps)
        s.used["spec.job.jarURI"] = f"the job's jar: {s.jar}" if s.jar else "named; the jar comes from --jar"
    if job.get("entryClass"):
        s.entry_class = str(job["entryClass"])
        s.used["spec.job.entryClass"] = "the main class (--main-class)"
    if job.get("args") is not None:
        s.args = [str(a) for a in job["args"]]
        s.used["spec.job.args"] = "main()'s arguments"
    mode = str(job.get("upgradeMode") or "stateless")
    if mode not in UPGRADE_MODES:
        raise ResourceError(f"{s.resource.source}: spec.job.upgradeMode {mode!r}: expected one of {UPGRADE_MODES}")
    s.upgrade_mode = mode
    s.used["spec.job.upgradeMode"] = {
        "stateless": "the upgrade restores no state: nothing to check",
        "savepoint": "the upgrade restores from a savepoint of the running job: the newest under the savepoint "
        "and checkpoint directories stands for it",
        "last-state": "the upgrade restores from the latest checkpoint: the newest under the checkpoint and "
        "savepoint directories",
    }[mode]
    if job.get("allowNonRestoredState") is not None:
        s.allow_non_restored_state = bool(job["allowNonRestoredState"])
        s.used["spec.job.allowNonRestoredState"] = "--allow-non-restored-state"
    if job.get("initialSavepointPath"):
        s.initial_savepoint = map_path(str(job["initialSavepointPath"]), maps)
        s.redeploy_from_initial = job.get("savepointRedeployNonce") is not None
        s.used["spec.job.initialSavepointPath"] = (
            "the savepoint the redeploy restores from (savepointRedeployNonce is set)" if s.redeploy_from_initial
            else "the savepoint when the directories hold none (a first deployment)"
        )  # fmt: skip
    if job.get("savepointRedeployNonce") is not None:
        s.used["spec.job.savepointRedeployNonce"] = "with initialSavepointPath: the savepoint to check"


def _local_jar(uri: str, maps: list[tuple[str, str]]) -> str | None:
    """The jar on this machine: ``--map`` applied, then a ``file:`` URI or a plain path that exists."""
    mapped = map_path(uri, maps)
    if mapped.startswith("file:"):
        mapped = mapped[len("file://") :] if mapped.startswith("file://") else mapped[len("file:") :]
    return mapped if "://" not in mapped and os.path.isfile(mapped) else None


def _parallelism(spec: dict, cluster_spec: dict, config: dict[str, str], s: DeploySettings) -> None:
    """The job's parallelism as the operator sets ``parallelism.default``: taskManager.replicas x
    task slots when replicas are set, else job.parallelism, else the configuration's."""
    replicas = (spec.get("taskManager") or {}).get("replicas")
    slots = int(config.get("taskmanager.numberOfTaskSlots", "1") or 1)
    job_p = int((spec.get("job") or {}).get("parallelism") or 0)
    if replicas:
        s.parallelism = int(replicas) * slots
        if job_p > 0:
            s.no_effect.append("spec.job.parallelism (taskManager.replicas set: the operator ignores it)")
        s.used["spec.taskManager.replicas"] = (
            f"parallelism {s.parallelism} (replicas x numberOfTaskSlots, as the operator sets it; job.parallelism is "
            "then ignored)"
        )
    elif job_p > 0:
        s.parallelism = job_p
        s.used["spec.job.parallelism"] = f"parallelism {job_p} (-p)"
    elif config.get("parallelism.default"):
        s.parallelism = int(config["parallelism.default"])
        s.used["flinkConfiguration.parallelism.default"] = f"parallelism {s.parallelism} (-p)"
    if _has({"spec": spec}, "spec.taskManager"):
        s.no_effect.append("spec.taskManager" + (" (but replicas)" if replicas else ""))


def _configuration(config: dict[str, str], s: DeploySettings, maps: list[tuple[str, str]]) -> None:
    """Each flinkConfiguration key: applied by the check (savepoint and checkpoint directories, the
    savepoint path and its flag), passed to the export (-D), of the cluster only, or not honoured."""
    for key, value in sorted(config.items()):
        where = f"flinkConfiguration.{key}"
        if key in SAVEPOINT_DIR_KEYS or key in CHECKPOINT_DIR_KEYS:
            s.savepoint_dirs.append(map_path(value, maps))
            s.used[where] = "searched for the newest savepoint or checkpoint"
        elif key == SAVEPOINT_PATH_KEY:
            s.initial_savepoint = s.initial_savepoint or map_path(value, maps)
            s.used[where] = "the savepoint when the directories hold none"
        elif key == ALLOW_KEY:
            if s.allow_non_restored_state is None:  # job.allowNonRestoredState wins, as the operator sets it after
                s.allow_non_restored_state = value.lower() == "true"
            s.used[where] = "--allow-non-restored-state"
        elif key == "parallelism.default":
            continue  # _parallelism
        elif key in NOT_HONOURED_KEYS:
            s.not_honoured[where] = NOT_HONOURED_KEYS[key]
        elif key.startswith(AUTOSCALER_PREFIXES):
            if key.endswith("autoscaler.enabled") and value.lower() == "true":
                s.not_honoured[where] = "the autoscaler changes parallelism at run time: the check uses the job's"
            else:
                s.no_effect.append(where)
        elif key.startswith(CLUSTER_PREFIXES):
            s.no_effect.append(where)
        else:
            s.dynamic.append(f"{key}={value}")
            s.used[where] = "passed to the export (-D)"
    # the savepoint dirs in the order the upgrade mode looks: last-state the checkpoints first
    if s.upgrade_mode == "last-state":
        cps = [map_path(config[k], maps) for k in CHECKPOINT_DIR_KEYS if k in config]
        s.savepoint_dirs = cps + [d for d in s.savepoint_dirs if d not in cps]


_KNOWN_SPEC = {"job", "flinkVersion", "flinkConfiguration", "deploymentName", "taskManager"}
_KNOWN_JOB = {"jarURI", "entryClass", "args", "parallelism", "upgradeMode", "allowNonRestoredState",
              "initialSavepointPath", "savepointRedeployNonce"}  # fmt: skip


def _unknown_fields(doc: dict, s: DeploySettings) -> None:
    """Fields this mapping does not know (a newer operator's): named, as not honoured."""
    accounted = set(s.no_effect) | set(s.used) | set(s.not_honoured)
    spec = doc.get("spec") or {}
    for key in spec:
        name = f"spec.{key}"
        if key not in _KNOWN_SPEC and name not in accounted:
            s.not_honoured[name] = "a field this check does not know"
    for key in spec.get("job") or {}:
        name = f"spec.job.{key}"
        if key not in _KNOWN_JOB and name not in accounted:
            s.not_honoured[name] = "a field this check does not know"


# The annotations a job resource may carry for the fleet check: the graph id of its job in the
# given specs (default: the resource's name) and of the version that took its savepoint.
GRAPH_ID_ANNOTATION = "flink-jobgraph/graph-id"
PREVIOUS_GRAPH_ID_ANNOTATION = "flink-jobgraph/previous-graph-id"
# What the fleet form takes from a resource; the rest shapes the graph, which the fleet is given.
FLEET_FIELDS = ("spec.job.upgradeMode", "spec.job.allowNonRestoredState", "spec.job.initialSavepointPath",
                "spec.job.savepointRedeployNonce")  # fmt: skip
GRAPH_SHAPING = "shapes the job's graph, which the fleet takes as given (export the job with it)"
FLEET_CONFIG_KEYS = (*SAVEPOINT_DIR_KEYS, *CHECKPOINT_DIR_KEYS, SAVEPOINT_PATH_KEY, ALLOW_KEY)


def is_resource_path(path: str) -> bool:
    """A local YAML file, or a local folder whose files are all YAML: resources, not a manifest."""
    if "://" in path and not path.startswith("file:"):
        return False
    plain = path.removeprefix("file:")
    if os.path.isfile(plain):
        return plain.endswith((".yaml", ".yml"))
    files = [p for p in Path(plain).rglob("*") if p.is_file() and not p.name.startswith((".", "_"))]
    return os.path.isdir(plain) and bool(files) and all(p.suffix in (".yaml", ".yml") for p in files)


def savepoint_of(s: DeploySettings, newest: Any) -> str:
    """The savepoint a deploy of the resource restores from: ``initialSavepointPath`` for a
    redeploy (``savepointRedeployNonce``), else the newest below the savepoint and checkpoint
    directories (``newest``: paths -> savepoint, raising ValueError when they hold none), else
    ``initialSavepointPath``; a ResourceError when it restores none (stateless) or names none."""
    r = s.resource
    if s.redeploy_from_initial and s.initial_savepoint:
        return s.initial_savepoint
    if s.upgrade_mode == "stateless":
        raise ResourceError("upgradeMode stateless: the operator upgrades it without its state")
    if s.savepoint_dirs:
        try:
            return newest(s.savepoint_dirs)
        except ValueError:
            if not s.initial_savepoint:
                raise
    if s.initial_savepoint:
        return s.initial_savepoint
    raise ResourceError(f"{r.kind} {r.key} ({r.source}): no savepoint or checkpoint directory in its "
                        "flinkConfiguration and no initialSavepointPath")  # fmt: skip


def fleet_fields(s: DeploySettings) -> None:
    """The fields' mapping for the fleet form: what shapes the job's graph (jar, entry class,
    arguments, parallelism, Flink version, the configuration the export applies) is not honoured
    there, as the fleet takes the graph as given; the savepoint fields are used."""
    kept = {*FLEET_FIELDS, *(f"flinkConfiguration.{k}" for k in FLEET_CONFIG_KEYS)}
    for name in [n for n in s.used if n not in kept]:
        s.not_honoured[name] = GRAPH_SHAPING
        del s.used[name]


def fleet_check(s: DeploySettings, newest: Any) -> dict[str, Any]:
    """The manifest object (SPEC section 5) of a job resource in the fleet form: check id
    ``<namespace>/<name>``, the graph id from the annotation ``flink-jobgraph/graph-id`` (default
    the name), the savepoint (:func:`savepoint_of`), allowNonRestoredState. Its jar, entry class,
    arguments, parallelism and configuration shape the graph, which the fleet takes as given:
    they are named as not honoured here (``check-restore --resource`` exports the job with them)."""
    r = s.resource
    annotations = (r.doc.get("metadata") or {}).get("annotations") or {}
    fleet_fields(s)
    obj = {"check_id": r.key, "savepoint": savepoint_of(s, newest),
           "graph_id": str(annotations.get(GRAPH_ID_ANNOTATION) or r.name),
           "allow_non_restored_state": bool(s.allow_non_restored_state)}  # fmt: skip
    if annotations.get(PREVIOUS_GRAPH_ID_ANNOTATION):
        obj["savepoint_graph_id"] = str(annotations[PREVIOUS_GRAPH_ID_ANNOTATION])
    return obj
