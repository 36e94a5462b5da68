"""The batch murmur3 helpers (one mmh3 call per distinct input, rows gathered from the table)
against mmh3 called row by row, as Flink's hasher feeds Guava's murmur3_128."""

from __future__ import annotations

import struct

import mmh3
import numpy as np

from udfs.flink.murmur3 import HASH_BYTES, generated_base_hashes, uid_hashes


def test_generated_base_hashes_are_murmur3_of_the_repeated_position():
    rng = np.random.default_rng(5)
    positions = np.concatenate([rng.integers(-3, 900, 5000), [2**31 - 1, -(2**31), 0]])
    outs = np.concatenate([rng.integers(0, 12, 5000), [0, 7, 40]])
    got = generated_base_hashes(positions, outs)
    assert got.shape == (len(positions), HASH_BYTES)
    for p, k, h in zip(positions.tolist(), outs.tolist(), got, strict=True):
        assert bytes(h) == mmh3.hash_bytes(struct.pack("<i", p) * (1 + k), 0, True)
    assert generated_base_hashes(np.array([], dtype=np.int64), np.array([], dtype=np.int64)).shape == (0, HASH_BYTES)


def test_uid_hashes_are_murmur3_of_the_utf8_bytes_repeats_included():
    uids = ["a", "source-1", "a", "Ünïcødé-✓", "", "source-1"]
    got = uid_hashes(uids)
    assert [bytes(h) for h in got] == [mmh3.hash_bytes(u.encode("utf-8"), 0, True) for u in uids]
    assert uid_hashes([]).shape == (0, HASH_BYTES)
