"""The local part of Flink's ``isChainable``, vectorised over edge rows.

Input rows are stream edges joined with the attributes of their source (``up_*``) and
target (``down_*``) nodes and of their graph. Everything ``isChainable`` checks that
depends on one edge alone is evaluated here, for all edges at once. The one rule that
is not local -- a yielding operator never chains behind a chain whose head is a legacy
source -- needs the chain above the edge and is resolved per graph in
:mod:`udfs.flink.yielding_rule`.

Output columns:
- ``chainable_input``: ``isChainableInput`` without the yielding rule (used for
  FLIP-27 sources chained into HEAD_WITH_SOURCES operators, where in-degree is > 1);
- ``chainable_local``: ``isChainable`` without the yielding rule (adds in-degree == 1);
- ``hasher_chainable_local``: what the hasher counts as a chainable output, without the
  yielding rule (differs from ``chainable_local`` only for the 1.9 hasher);
- ``yield_sensitive``: the edge is locally chainable and its target is yielding, so the
  per-graph rule may still veto it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from udfs.flink.profiles import ChainRules, Profile, load_profile

# Partitioners that are a ForwardPartitioner in Flink (``instanceof ForwardPartitioner``).
FORWARD_PARTITIONERS = ("FORWARD", "FORWARD_FOR_UNSPECIFIED")

# Node attributes the rules read, joined onto each edge as up_* (source) and down_* (target).
NODE_RULE_ATTRS = (
    "has_operator",
    "chaining_strategy",
    "slot_sharing_group",
    "parallelism",
    "max_parallelism",
    "source_kind",
    "yielding",
)

EDGE_RULE_INPUT_COLUMNS = (
    "partitioner",
    "exchange_mode",
    "down_in_degree",
    "same_type_in_edges",
    "up_has_operator",
    "down_has_operator",
    "up_chaining_strategy",
    "down_chaining_strategy",
    "up_slot_sharing_group",
    "down_slot_sharing_group",
    "up_parallelism",
    "down_parallelism",
    "up_max_parallelism",
    "down_max_parallelism",
    "up_source_kind",
    "down_yielding",
    "chaining_enabled",
    "chain_different_max_parallelism",
    "dynamic",
    "flink_version",
)


def _operators_chainable(df: pd.DataFrame, rules: ChainRules) -> np.ndarray:
    up = df["up_chaining_strategy"]
    down = df["down_chaining_strategy"]
    ok = (
        df["up_has_operator"].to_numpy(bool)
        & df["down_has_operator"].to_numpy(bool)
        & up.isin(rules.upstream_strategies).to_numpy()
    )
    down_ok = down.isin(rules.downstream_strategies).to_numpy()
    if rules.head_with_sources_downstream:
        down_ok |= ((down == "HEAD_WITH_SOURCES") & (df["up_source_kind"] == "FLIP27")).to_numpy()
    return ok & down_ok


def _partitioner_chainable(df: pd.DataFrame, rules: ChainRules, check_exchange: bool) -> np.ndarray:
    # ForwardForUnspecifiedPartitioner is a ForwardPartitioner: it chains like FORWARD
    forward = df["partitioner"].isin(FORWARD_PARTITIONERS).to_numpy()
    if check_exchange:
        forward &= ~df["exchange_mode"].isin(rules.blocking_exchange_modes).to_numpy()
    if rules.forward_for_consecutive_hash:
        consecutive_hash = df["partitioner"].str.startswith("FORWARD_FOR_CONSECUTIVE_HASH")  # also ...HASH[k]
        forward |= (consecutive_hash & df["dynamic"]).to_numpy(bool)
    return forward


def _flags_for_profile(df: pd.DataFrame, profile: Profile) -> pd.DataFrame:
    rules = profile.chain
    common = (
        df["chaining_enabled"].to_numpy(bool)
        & (df["up_slot_sharing_group"].to_numpy(object) == df["down_slot_sharing_group"].to_numpy(object))
        & _operators_chainable(df, rules)
        & (df["up_parallelism"].to_numpy() == df["down_parallelism"].to_numpy())
    )
    if rules.max_parallelism_option:
        same_max = df["up_max_parallelism"].to_numpy() == df["down_max_parallelism"].to_numpy()
        common &= df["chain_different_max_parallelism"].to_numpy(bool) | same_max
    one_input = df["down_in_degree"].to_numpy() == 1
    no_union = df["same_type_in_edges"].to_numpy() == 1
    chainable_input = common & _partitioner_chainable(df, rules, check_exchange=True)
    if rules.union_type_number_rule:
        chainable_input &= no_union
    chainable_local = chainable_input & one_input
    if profile.hasher_chainable == "generator":
        hasher_local = chainable_local
    else:  # the 1.9 hasher's private copy of isChainable, which ignores the exchange mode
        hasher_local = common & _partitioner_chainable(df, rules, check_exchange=False) & one_input
    yield_sensitive = (chainable_local | hasher_local) & df["down_yielding"].to_numpy(bool)
    if not rules.yielding_after_legacy_source:
        yield_sensitive = np.zeros(len(df), dtype=bool)
    return pd.DataFrame(
        {
            "chainable_input": chainable_input,
            "chainable_local": chainable_local,
            "hasher_chainable_local": hasher_local,
            "yield_sensitive": yield_sensitive,
        },
        index=df.index,
    )


def evaluate_edge_rules(df: pd.DataFrame) -> pd.DataFrame:
    """Rule flags for a batch of edge rows that may mix graphs of several versions."""
    parts = [
        _flags_for_profile(group, load_profile(version)) for version, group in df.groupby("flink_version", sort=False)
    ]
    if not parts:
        return pd.DataFrame(
            {
                c: np.zeros(0, bool)
                for c in ("chainable_input", "chainable_local", "hasher_chainable_local", "yield_sensitive")
            }
        )
    return pd.concat(parts).reindex(df.index)
