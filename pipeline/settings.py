"""Execution settings from ``conf/pipeline.json``, checked once at load into a typed object.

:func:`load_settings` reads the file, applies ``--set SECTION.KEY=VALUE`` overrides and
returns a frozen :class:`Settings`; every wrong name, type or choice is one
:class:`SettingsError` (a ``ValueError``: the CLI prints it as one line and exits 2) that
says what is valid. Why each default is what it is, with the measurements:
docs/settings.md.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from udfs.flink.profiles import CONF_DIR, ROOT

__all__ = [
    "CONF_DIR",
    "ROOT",
    "SETTINGS_FILE",
    "ChainSettings",
    "Limits",
    "Settings",
    "SettingsError",
    "SparkSettings",
    "TestingSettings",
    "load_settings",
]

SETTINGS_FILE = CONF_DIR / "pipeline.json"


class SettingsError(ValueError):
    """A setting that does not exist, or a value it cannot take."""


@dataclass(frozen=True)
class SparkSettings:
    master: str = "local[2]"
    shuffle_partitions: int = 8
    arrow_batch_rows: int = 2000
    # JVM options of the driver when the pipeline starts Spark itself (local mode; an active
    # session, e.g. spark-submit's, keeps its own): the collector and JIT, docs/settings.md
    driver_java_options: str = "-XX:+UseParallelGC"
    # added to them for one job's deploy gate (check-restore --savepoint): a run of seconds, where
    # C2's compile time is never won back (docs/settings.md)
    one_job_java_options: str = "-XX:TieredStopAtLevel=1"
    # added to them for a night: a compute run or check-restore re-run (without --full) whose
    # output's newest publish recorded the rules it has (pipeline/runner.is_night), which keeps
    # most rows and ends in seconds on a cold JVM, where C2's compile time is not won back
    # either (docs/settings.md)
    night_java_options: str = "-XX:TieredStopAtLevel=1 -XX:InitialRAMPercentage=17 -XX:MetaspaceSize=256m"
    # Spark SQL confs set for a night, as (name, value) pairs, when the session is local: two
    # shuffle partitions, as many as a 2-core master has task slots, for a night's few rows
    night_spark_conf: tuple[tuple[str, Any], ...] = ()
    # Spark SQL confs set for one job's deploy gate, as (name, value) pairs: whole-stage code
    # generation off, whose compiles a cold JVM never wins back on a few rows (docs/settings.md)
    one_job_spark_conf: tuple[tuple[str, Any], ...] = ()


CHAINS_ENGINES = ("graphframes", "dataframe")
GRAPHFRAMES_ALGORITHMS = ("graphx", "graphframes")


@dataclass(frozen=True)
class ChainSettings:
    """How the connected components of the chainable edges are found (pipeline/compute/chains.py)."""

    engine: str = "graphframes"  # CHAINS_ENGINES
    graphframes_algorithm: str = "graphx"  # GRAPHFRAMES_ALGORITHMS
    graphframes_checkpoint_interval: int = 3
    graphframes_broadcast_threshold: int = 1000000
    # Spark SQL confs set only while GraphFrames iterates, as (name, value) pairs: frozen and
    # picklable (``dict(...)`` of it is the object of conf/pipeline.json)
    graphframes_spark_conf: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Limits:
    """The largest input the per-graph step takes (``limits`` in conf/pipeline.json).

    A graph is parsed, checked and computed in one Python worker, in memory; beyond these
    sizes it is rejected with its own error code (LINE_TOO_LONG, GRAPH_TOO_LARGE) instead
    of taking the worker's memory. The defaults pass a 100,000-node graph and a 10 MB name
    with room to spare (tests/test_malformed_corpus.py runs both).
    """

    max_line_bytes: int = 128 << 20
    max_graph_elements: int = 500_000

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Limits:
        return (settings or load_settings()).limits


@dataclass(frozen=True)
class TableSettings:
    """How the output tables are created (``tables`` in conf/pipeline.json)."""

    # Delta deletion vectors: a re-run that changes a few graphs marks their old rows deleted
    # instead of rewriting the files around them. Readers without that table feature (older
    # delta-rs / ``deltalake``, Polars, some engines) cannot read such tables: false creates
    # them without it (docs/settings.md). Applies when a table is created.
    deletion_vectors: bool = True
    # A replace of at most this many keys (graphs, checks, savepoints) in an existing table is
    # an overwrite with ``replaceWhere key IN (...)``, more is a MERGE: both one commit, the
    # same rows after. The overwrite is the cheaper for a nightly run's few keys, but Delta
    # evaluates its IN list literally, so a long one costs more than the MERGE (docs/performance.md).
    replace_where_max_keys: int = 1200


@dataclass(frozen=True)
class TestingSettings:
    """Test hooks, never in conf/pipeline.json (``--set testing.raise_in_graph=ID``)."""

    __test__ = False  # not a pytest test class
    # the per-graph code raises a RuntimeError for the graph of this id (tests/test_bad_input.py)
    raise_in_graph: str | None = None


_CHOICES = {("chains", "engine"): CHAINS_ENGINES, ("chains", "graphframes_algorithm"): GRAPHFRAMES_ALGORITHMS}
_POSITIVE = {
    ("spark", "shuffle_partitions"),
    ("spark", "arrow_batch_rows"),
    ("chains", "graphframes_checkpoint_interval"),
    ("limits", "max_line_bytes"),
    ("limits", "max_graph_elements"),
}


@dataclass(frozen=True)
class Settings:
    spark: SparkSettings = field(default_factory=SparkSettings)
    chains: ChainSettings = field(default_factory=ChainSettings)
    limits: Limits = field(default_factory=Limits)
    tables: TableSettings = field(default_factory=TableSettings)
    testing: TestingSettings = field(default_factory=TestingSettings)
    jars_dir: str = ".cache/jars"

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Settings:
        """Check every section and key of ``raw`` (conf/pipeline.json's shape); keys that start
        with ``_`` are comments."""
        sections = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(k for k in raw if k not in sections and not k.startswith("_"))
        if unknown:
            raise SettingsError(f"unknown setting {unknown[0]!r}; the sections are {', '.join(sorted(sections))}")
        values: dict[str, Any] = {}
        for name, f in sections.items():
            if name not in raw:
                continue
            if name == "jars_dir":
                values[name] = _typed("jars_dir", raw[name], str)
                continue
            section_type = f.default_factory  # the section's dataclass
            section = raw[name]
            if not isinstance(section, dict):
                raise SettingsError(f"setting {name!r} must be an object of keys, got {section!r}")
            values[name] = _section(name, section_type, section)
        return cls(**values)

    def with_overrides(self, overrides: dict[str, Any]) -> Settings:
        """A copy with ``{"section.key": value}`` applied, checked like the file."""
        raw = self.as_dict()
        for dotted, value in overrides.items():
            section, sep, key = dotted.partition(".")
            if not sep or not key:
                raise SettingsError(f"a setting is named SECTION.KEY, got {dotted!r}")
            if not isinstance(raw.get(section), dict):
                sections = sorted(k for k, v in raw.items() if isinstance(v, dict))
                raise SettingsError(f"unknown setting {dotted!r}; the sections are {', '.join(sections)}")
            raw[section][key] = value
        return Settings.from_dict(raw)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (what bench results record)."""

        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if dataclasses.is_dataclass(value):
                value = {s.name: getattr(value, s.name) for s in dataclasses.fields(value)}
                for key in ("graphframes_spark_conf", "one_job_spark_conf", "night_spark_conf"):
                    if key in value:
                        value[key] = dict(value[key])
            out[f.name] = value
        return out


def _typed(name: str, value: Any, want: type) -> Any:
    if want is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SettingsError(f"setting {name} must be an integer, got {value!r}")
    elif want is str:
        if not isinstance(value, str):
            raise SettingsError(f"setting {name} must be a string, got {value!r}")
    return value


def _section(name: str, section_type: type, raw: dict[str, Any]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(section_type)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key.startswith("_"):
            continue
        dotted = f"{name}.{key}"
        if key not in fields:
            raise SettingsError(f"unknown setting {dotted!r}; {name} has {', '.join(sorted(fields))}")
        choices = _CHOICES.get((name, key))
        if choices is not None and value not in choices:
            raise SettingsError(f"unknown {dotted} {value!r}; use {' or '.join(sorted(choices))}")
        default = fields[key].default
        if key.endswith("_spark_conf"):
            if not isinstance(value, dict):
                raise SettingsError(f"setting {dotted} must be an object of Spark confs, got {value!r}")
            value = tuple(value.items())
        elif key == "raise_in_graph":
            value = None if value is None else _typed(dotted, value, str)
        elif isinstance(default, bool | int | str):
            value = _typed(dotted, value, type(default))
        if (name, key) in _POSITIVE and value < 1:
            raise SettingsError(f"setting {dotted} must be at least 1, got {value!r}")
        values[key] = value
    return section_type(**values)


def load_settings(overrides: dict[str, Any] | None = None) -> Settings:
    """conf/pipeline.json with ``overrides`` (``{"section.key": value}``) applied, checked."""
    settings = Settings.from_dict(json.loads(SETTINGS_FILE.read_text()))
    return settings.with_overrides(overrides) if overrides else settings
