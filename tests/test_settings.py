"""conf/pipeline.json is read once into a frozen, typed Settings; a wrong name, type or choice
is one clear error that says what is valid (docs/settings.md). No Spark: the CLI stops
before it starts one."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from pipeline.cli import main
from pipeline.settings import SETTINGS_FILE, Settings, SettingsError, load_settings

from .conftest import ROOT

SECTIONS = "chains, limits, spark, tables, testing"


def test_the_file_loads_into_typed_sections():
    s = load_settings()
    assert s.chains.engine == "graphframes" and s.chains.graphframes_algorithm == "graphx"
    assert isinstance(s.spark.shuffle_partitions, int) and s.limits.max_graph_elements == 500_000
    assert s.testing.raise_in_graph is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.chains.engine = "dataframe"  # type: ignore[misc]
    assert dict(s.chains.graphframes_spark_conf)["spark.sql.adaptive.enabled"] is False
    assert pickle.loads(pickle.dumps(s)) == s


def test_the_file_holds_only_settings():
    """The measurement essays live in docs/settings.md; the file keeps one pointer to it."""
    raw = json.loads(SETTINGS_FILE.read_text())
    comments = [k for k in raw if k.startswith("_")]
    comments += [f"{s}.{k}" for s, v in raw.items() if isinstance(v, dict) for k in v if k.startswith("_")]
    assert comments == ["_doc"] and "docs/settings.md" in raw["_doc"]
    assert (ROOT / "docs" / "settings.md").is_file()


def test_overrides_are_checked_and_typed_like_the_file():
    s = load_settings({"chains.engine": "dataframe", "spark.shuffle_partitions": 3, "testing.raise_in_graph": "g"})
    assert (s.chains.engine, s.spark.shuffle_partitions, s.testing.raise_in_graph) == ("dataframe", 3, "g")
    assert load_settings().chains.engine == "graphframes"  # the file's object is not changed
    assert Settings.from_dict(s.as_dict()) == s  # as_dict round-trips (what bench results record)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"chains.engine": "bogus"}, "unknown chains.engine 'bogus'; use dataframe or graphframes"),
        ({"chains.graphframes_algorithm": "pregel"}, "unknown chains.graphframes_algorithm 'pregel'; use graphframes or graphx"),  # noqa: E501
        ({"pipeline.executor": "staged"}, f"unknown setting 'pipeline.executor'; the sections are {SECTIONS}"),
        ({"hashing.executor": "superstep"}, f"unknown setting 'hashing.executor'; the sections are {SECTIONS}"),
        ({"chains.enigne": "dataframe"}, "unknown setting 'chains.enigne'; chains has engine, graphframes_algorithm"),
        ({"spark.shuffle_partitions": "many"}, "setting spark.shuffle_partitions must be an integer, got 'many'"),
        ({"limits.max_graph_elements": 0}, "setting limits.max_graph_elements must be at least 1, got 0"),
        ({"chains.graphframes_spark_conf": 2}, "setting chains.graphframes_spark_conf must be an object of Spark"),
    ],
)
def test_a_bad_setting_is_one_error_that_says_what_is_valid(overrides, message):
    with pytest.raises(SettingsError) as e:
        load_settings(overrides)
    assert str(e.value).startswith(message), str(e.value)


def test_the_cli_prints_a_bad_choice_as_one_line_before_spark_starts(tmp_path, capsys):
    code = main(
        [
            "compute",
            "--input",
            str(ROOT / "samples" / "wordcount.json"),
            "--output",
            str(tmp_path / "o"),
            "--quiet",
            "--set",
            "chains.graphframes_algorithm=bfs",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == ["flink-jobgraph: unknown chains.graphframes_algorithm 'bfs'; use graphframes or graphx"]
    assert not (tmp_path / "o").exists()
