"""What decides one graph's tables, as one fingerprint: the spec's content, its Flink line's
profile and the version of the rules.

A scheduled fleet run recomputes only the graphs whose fingerprint is not in the output yet
(``pipeline/compute/run.py``). The spec's content is its JSON with sorted keys, so a re-export
that only reorders keys or changes whitespace matches; the profile is the bytes of
``conf/profiles/<line>.json``, so a change to one line's rules recomputes that line's graphs; the
rules version comes from the caller (a digest of the code and settings that compute the tables),
so a new release recomputes everything.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any

import orjson

from udfs.flink.profiles import PROFILE_DIR
from udfs.spec.contract import ContractError, normalize_version

__all__ = ["REJECTED_FROM", "line_key", "line_salt", "profile_digest", "spec_fingerprint"]

# A rejected graph's known value: its fingerprint, this, and the file its graph_errors row names
# (pipeline/compute/fingerprints.py builds it, pipeline/compute/stage.py matches it)
REJECTED_FROM = " from "


@cache
def profile_digest(version: str) -> str:
    return hashlib.sha256((PROFILE_DIR / f"{version}.json").read_bytes()).hexdigest()


def spec_fingerprint(obj: Any, rules_version: str) -> str | None:
    """The fingerprint of one loaded spec, or None when it has none to match (not an object, an
    unknown Flink line, a value JSON cannot hold): such a graph is always computed."""
    if not isinstance(obj, dict):
        return None
    try:
        line = normalize_version(obj.get("flink_version"))
        canonical = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except (ContractError, TypeError, orjson.JSONEncodeError):
        return None
    h = hashlib.sha256()
    for part in (rules_version.encode(), profile_digest(line).encode(), canonical):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()[:32]


def line_salt(rules_version: str) -> bytes:
    """What a line's key is salted with: the rules version and every line's profile. A line's
    Flink line is not known before it is parsed, so any profile's change changes every key
    (those lines' graphs are then matched by :func:`spec_fingerprint` again, as before keys)."""
    h = hashlib.sha256(rules_version.encode())
    for path in sorted(PROFILE_DIR.glob("*.json")):
        h.update(path.name.encode())
        h.update(profile_digest(path.stem).encode())
    return h.digest()


def line_key(salt: bytes, raw: bytes) -> str:
    """The key of one spec line's bytes as read (pipeline.compute.read.KnownLines): equal keys,
    equal bytes under equal rules and profiles, so the same tables. BLAKE2b, keyed by the salt:
    a cryptographic digest at about the speed of reading the bytes."""
    return hashlib.blake2b(raw, digest_size=16, key=salt).hexdigest()
