"""The committed restore golden sets (harness/restore output) keep the shared vectors' format.

Why: the restore check and its agreement script read these sets exactly like
``shared/vectors/restore``; a harness change that renamed a field, lost a ``_metadata`` file or
recorded a verdict inconsistently would silently shrink what CI checks. No Spark, no JVM: it
reads the files only (well under a second).
"""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "restore"
SHARED = ROOT.parent / "shared" / "vectors" / "restore" / "savepoint-2.3-s11.jsonl.gz"
SETS = sorted(GOLDEN.glob("savepoint-*-s*.jsonl.gz"))
# _metadata format version per Flink line (RESTORE.md section 2)
FORMAT = {"1.15": 3, "1.20": 4, "2.0": 5, "2.3": 6}
SAVEPOINT_KEYS = {
    "state_backend", "incremental", "checkpoint_storage", "inline_threshold", "format", "taken_by",
    "records_before_savepoint", "magic_number", "metadata_version", "metadata_bytes", "checkpoint_id",
    "master_states", "operators", "handle_types",
}


def _cases(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def _tar(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_golden_sets_exist() -> None:
    lines = {p.name.split("-")[1] for p in SETS}
    assert {"2.3", "1.20"} <= lines


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_golden_set_format(path: Path) -> None:
    cases = _cases(path)
    assert len(cases) >= 10
    metadata = _tar(path.with_name(path.name.replace(".jsonl.gz", "-metadata.tar.gz")))
    line = path.name.split("-")[1]
    top_keys = set(_cases(SHARED)[0]) if SHARED.exists() else None
    for c in cases:
        if top_keys is not None:
            assert set(c) == top_keys, c["case_id"]
        assert c["flink_version"] == line and c["v1"]["graph_id"] == c["case_id"] + "/v1"
        sp = c["savepoint"]
        assert SAVEPOINT_KEYS <= set(sp), c["case_id"]
        raw = metadata[c["savepoint_metadata"]]
        assert len(raw) == sp["metadata_bytes"]
        magic, version = struct.unpack(">II", raw[:8])
        assert f"0x{magic:08x}" == sp["magic_number"] == "0x4960672d"
        assert version == sp["metadata_version"] == FORMAT[line]
        # Flink saves every operator of v1 under its generated ID, setUidHash or not
        saved = {o["operator_id"] for o in sp["operators"]}
        assert saved == {op["operator_id"] for op in c["v1_expected"]["operators"].values()}, c["case_id"]
        for suffix in ("", "_allow_non_restored"):
            failed = c["verdict" + suffix] == "FAILED"
            assert c["verdict" + suffix] in ("RESTORED", "FAILED")
            assert (c["error_class" + suffix] is not None) == failed
            assert (c["failure_stage" + suffix] in ("job_init", "task")) == failed
            if failed:
                assert "/savepoint-" not in c["error_message" + suffix], "savepoint path not masked"
        # allowNonRestoredState is tried only when the strict start failed, and never makes it worse
        assert c["verdict_allow_non_restored_run"] == (c["verdict"] == "FAILED")
        if c["verdict"] == "RESTORED":
            assert c["verdict_allow_non_restored"] == "RESTORED"


def test_summary_script_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "restore_cases_summary.py"), str(SETS[0])],
        check=True, capture_output=True, text=True,
    ).stdout
    assert out.startswith(f"== {SETS[0].name}: ") and "_metadata format versions" in out
