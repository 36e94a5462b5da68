"""Guava ``Hashing.murmur3_128(0)`` as Flink's StreamGraphHasherV2 uses it, over arrays.

Guava's ``putInt`` feeds 4 little-endian bytes, and ``asBytes()`` returns h1 then h2,
little-endian: exactly ``mmh3.hash_bytes(data, 0, x64arch=True)``. A generated hash
feeds ``hashes.size()`` once for the node and once more per chainable output, so its
input is that int repeated ``1 + k`` times. Input hashes are then folded byte by byte
as Java does it, ``hash[j] = (byte) (hash[j] * 37 ^ in[j])``; only the low 8 bits
survive the cast, so unsigned 8-bit arithmetic gives the same bytes.
"""

from __future__ import annotations

import struct

import mmh3
import numpy as np

HASH_BYTES = 16


def uid_hashes(uids: list[str]) -> np.ndarray:
    """``hasher.putString(uid, UTF_8)``: murmur3 of the uid's UTF-8 bytes (each distinct uid
    hashed once)."""
    distinct = {u: i for i, u in enumerate(dict.fromkeys(uids))}
    table = np.frombuffer(b"".join(mmh3.hash_bytes(u.encode("utf-8"), 0, True) for u in distinct), dtype=np.uint8)
    table = table.reshape(-1, HASH_BYTES)
    return table[[distinct[u] for u in uids]] if uids else np.empty((0, HASH_BYTES), dtype=np.uint8)


def generated_base_hashes(positions: np.ndarray, chainable_outs: np.ndarray) -> np.ndarray:
    """The node-local part of a generated hash, before input hashes are folded in.

    It depends on (position, chainable outputs) alone, and across a batch of graphs few
    such pairs are distinct (positions restart at 0 in every graph): murmur3 runs once per
    distinct pair and the rows are gathered from that table."""
    if not len(positions):
        return np.empty((0, HASH_BYTES), dtype=np.uint8)
    positions = np.asarray(positions, dtype=np.int64)
    outs = np.asarray(chainable_outs, dtype=np.int64)
    span = int(outs.max()) + 1  # one int64 key per pair: positions and counts are Java ints
    distinct, inverse = np.unique((positions - positions.min()) * span + outs, return_inverse=True)
    pos = distinct // span + positions.min()
    table = np.frombuffer(
        b"".join(
            mmh3.hash_bytes(struct.pack("<i", p) * (1 + k), 0, True)
            for p, k in zip(pos.tolist(), (distinct % span).tolist(), strict=True)
        ),
        dtype=np.uint8,
    ).reshape(-1, HASH_BYTES)
    return table[inverse.reshape(-1)]


def fold_inputs(base: np.ndarray, inputs: list[np.ndarray]) -> np.ndarray:
    """Fold input hashes, in in-edge order, into one or many base hashes at once."""
    h = base.copy()
    for other in inputs:
        h = (h * np.uint8(37)) ^ other
    return h


def to_hex(hashes: np.ndarray) -> list[str]:
    text = np.ascontiguousarray(hashes, dtype=np.uint8).tobytes().hex()
    step = 2 * HASH_BYTES
    return [text[i : i + step] for i in range(0, len(text), step)]


def from_hex(values: list[str]) -> np.ndarray:
    return np.array([list(bytes.fromhex(v)) for v in values], dtype=np.uint8).reshape(-1, HASH_BYTES)
