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
    """``hasher.putString(uid, UTF_8)``: murmur3 of the uid's UTF-8 bytes."""
    out = np.empty((len(uids), HASH_BYTES), dtype=np.uint8)
    for i, uid in enumerate(uids):
        out[i] = np.frombuffer(mmh3.hash_bytes(uid.encode("utf-8"), 0, True), dtype=np.uint8)
    return out


def generated_base_hashes(positions: np.ndarray, chainable_outs: np.ndarray) -> np.ndarray:
    """The node-local part of a generated hash, before input hashes are folded in."""
    out = np.empty((len(positions), HASH_BYTES), dtype=np.uint8)
    for i, (pos, k) in enumerate(zip(positions.tolist(), chainable_outs.tolist(), strict=False)):
        data = struct.pack("<i", pos) * (1 + k)
        out[i] = np.frombuffer(mmh3.hash_bytes(data, 0, True), dtype=np.uint8)
    return out


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
