"""Flink-version semantics profiles, read from ``conf/profiles/*.json`` (every step asks them).

Everything that differs between Flink releases (which edges chain, what the hasher
counts as a chainable output, whether FLIP-27 sources chain into multi-input operators)
lives in those files. This module is the one place in code that reads them, so the
steps downstream ask a profile a question instead of comparing version strings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# conf/ at the top of the repo (a checkout, an editable install); inside the package when
# installed from the wheel, which ships it as pipeline/conf (pyproject.toml). Found by path,
# so that udfs/ imports nothing from pipeline/.
CONF_DIR = ROOT / "conf" if (ROOT / "conf" / "pipeline.json").is_file() else ROOT / "pipeline" / "conf"
PROFILE_DIR = CONF_DIR / "profiles"


@dataclass(frozen=True)
class ChainRules:
    """The sub-conditions of ``StreamingJobGraphGenerator.isChainable`` for one release."""

    upstream_strategies: tuple[str, ...]
    downstream_strategies: tuple[str, ...]
    # HEAD_WITH_SOURCES downstream chains only behind a FLIP-27 source operator.
    head_with_sources_downstream: bool
    # Exchange modes that block chaining of a FORWARD edge (e.g. BATCH).
    blocking_exchange_modes: tuple[str, ...]
    # isChainableInput: two in-edges of one input position (a union) never chain.
    union_type_number_rule: bool
    # A YieldingOperatorFactory never chains behind a chain whose head is a legacy source.
    yielding_after_legacy_source: bool
    # Honour chain_operators_with_different_max_parallelism=false.
    max_parallelism_option: bool
    # FORWARD_FOR_CONSECUTIVE_HASH chains (only valid in a dynamic graph).
    forward_for_consecutive_hash: bool


@dataclass(frozen=True)
class Profile:
    version: str
    tested_releases: tuple[str, ...]
    chain: ChainRules
    # "generator": the hasher counts outputs with the generator's own isChainable;
    # "legacy": the 1.9 hasher's private isChainable (no exchange-mode check).
    hasher_chainable: str
    # FLIP-27 sources chain into HEAD_WITH_SOURCES operators as chain index 0.
    chained_sources: bool
    # What createJobGraph checks about non-chained HYBRID_* exchanges, in order:
    # "batch_only" (1.17+), "default_slot_sharing_group" (1.16+).
    hybrid_checks: tuple[str, ...]
    # Chain entry points: "sorted" by start node id, or "source_hashset" (1.9).
    entry_order: str = "sorted"
    head_chain_index: int = 1
    # "own_inputs" (fixed by FLINK-32680) or "all_in_job" (the 1.12-1.17.1 naming bug).
    chained_source_names: str = "own_inputs"
    notes: tuple[str, ...] = field(default=())


@cache
def _raw(version: str) -> dict[str, Any]:
    """The one read of ``conf/profiles/<version>.json``; every section below comes from it."""
    path = PROFILE_DIR / f"{version}.json"
    if not path.exists():
        raise KeyError(version)
    return json.loads(path.read_text())


@cache
def load_profile(version: str) -> Profile:
    raw = _raw(version)
    c = raw["chain"]
    rules = ChainRules(
        upstream_strategies=tuple(c["upstream_strategies"]),
        downstream_strategies=tuple(c["downstream_strategies"]),
        head_with_sources_downstream=bool(c["head_with_sources_downstream"]),
        blocking_exchange_modes=tuple(c["blocking_exchange_modes"]),
        union_type_number_rule=bool(c["union_type_number_rule"]),
        yielding_after_legacy_source=bool(c["yielding_after_legacy_source"]),
        max_parallelism_option=bool(c["max_parallelism_option"]),
        forward_for_consecutive_hash=bool(c["forward_for_consecutive_hash"]),
    )
    return Profile(
        version=raw["version"],
        tested_releases=tuple(raw.get("tested_releases", ())),
        chain=rules,
        hasher_chainable=raw["hasher_chainable"],
        chained_sources=bool(raw["chained_sources"]),
        hybrid_checks=tuple(raw["hybrid_checks"]),
        entry_order=raw.get("entry_order", "sorted"),
        head_chain_index=int(raw.get("head_chain_index", 1)),
        chained_source_names=raw.get("chained_source_names", "own_inputs"),
        notes=tuple(raw.get("notes", ())),
    )


def supported_versions() -> list[str]:
    return list(_supported_versions())


@cache  # asked once per input graph: the folder is listed once per process (docs/performance.md)
def _supported_versions() -> tuple[str, ...]:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split("."))

    return tuple(sorted((p.stem for p in PROFILE_DIR.glob("*.json")), key=key))


def newest_version() -> str:
    return supported_versions()[-1]


def batch_rules(version: str) -> dict[str, Any]:
    """The ``batch`` section of a version's profile (conf/profiles/<line>.json)."""
    return dict(_raw(version).get("batch", {}))


def restore_rules(version: str) -> dict[str, Any] | None:
    """The ``restore`` section of a version's profile (what :mod:`udfs.restore.rules` needs to
    decide a restore on that line), or None for a line without restore rules."""
    try:
        raw = _raw(version)
    except KeyError:
        return None
    return dict(raw["restore"]) if "restore" in raw else None
