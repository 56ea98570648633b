"""graphjit -> numba with scan: outputs of a native loop, and scratch buffers that grow mid-call (no leak)."""

from __future__ import annotations

import numba
import numpy as np
from numba.core.runtime import _nrt_python, rtsys

import graphjit as gj
import graphjit.tensor as gt

x, n = gt.dvector("x"), gt.lscalar("n")
# step i allocates temporaries of i + 1 and 2 (i + 2) elements: their scratch buffers grow at every step
_GROWING, _ = gj.scan(lambda i, x: gt.alloc(x[0], i + 1).sum() + gt.alloc(x[1], i + 2, 2).max(),
                      sequences=gt.arange(n), non_sequences=x)
GROWING = gj.function([x, n], _GROWING)


def _growing_ref(v: np.ndarray, m: int) -> np.ndarray:
    return np.array([v[0] * (i + 1) + v[1] for i in range(m)])


@numba.njit
def call(f, a, m):
    return f(a, m)


@numba.njit
def many_calls(f, a, m):
    total = 0.0
    for k in range(m):
        total += f(a, k + 3).sum()
    return total


def test_scan_outputs_from_njit() -> None:
    """A nit-sot output lives in a scratch buffer of the loop: numba's caller gets a copy, not an empty array."""
    assert GROWING.native.fallback_nodes == []
    v = np.array([1.5, -2.0])
    np.testing.assert_allclose(call(GROWING, v, 5), _growing_ref(v, 5))
    np.testing.assert_allclose(call(GROWING, v, 5), GROWING(v, 5))
    assert call(GROWING, v, 0).shape == (0,)


def test_growing_scratch_buffers_are_released() -> None:
    """Every NRT allocation the calls make is freed: the buffers a growing scratch replaces included."""
    v = np.array([1.0, 2.0])
    calls = 150
    want = sum(_growing_ref(v, k + 3).sum() for k in range(calls))
    many_calls(GROWING, v, 2)                    # compiled before counting
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        got = many_calls(GROWING, v, calls)
        after = rtsys.get_allocation_stats()
    finally:
        if not was_enabled:
            _nrt_python.memsys_disable_stats()
    assert got == want
    allocated, freed = after.alloc - before.alloc, after.free - before.free
    assert allocated > calls * 10                # each call regrows its scratch buffers many times
    assert allocated == freed
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
