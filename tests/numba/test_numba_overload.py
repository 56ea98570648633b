"""graphjit -> numba: compiled Functions called inside @njit (argument, global, scalars, tuples, errors)."""

from __future__ import annotations

import ctypes
import time

import numba
import numpy as np
import pytest
from numba.core.errors import TypingError

import graphjit as gj
import graphjit.tensor as gt

x, y = gt.dvector("x"), gt.dvector("y")
ADD = gj.function([x, y], x + y)
TWO = gj.function([x, y], [x * y, (x - y).sum()])
s = gt.dscalar("s")
SCALE = gj.function([x, s], x * s)


@numba.njit
def call2(f, a, b):
    return f(a, b)


@numba.njit
def call1(f, a):
    return f(a)


@numba.njit
def add_global(a, b):
    return ADD(a, b)


@numba.njit
def loop_add(f, a, b, n):
    total = 0.0
    for _ in range(n):
        total += f(a, b)[0]
    return total


def test_argument_and_global() -> None:
    a, b = np.arange(5.0), np.ones(5)
    np.testing.assert_allclose(call2(ADD, a, b), a + b)
    np.testing.assert_allclose(add_global(a, b), a + b)


def test_strided_views_passed_without_copy() -> None:
    a = np.arange(10.0)
    np.testing.assert_allclose(call2(ADD, a[::2], a[::-2]), a[::2] + a[::-2])


def test_multiple_outputs_are_a_tuple() -> None:
    a, b = np.arange(4.0), np.full(4, 2.0)
    prod, diff = call2(TWO, a, b)
    np.testing.assert_allclose(prod, a * b)
    assert diff.shape == () and float(diff) == float((a - b).sum())


def test_scalar_inputs() -> None:
    a = np.arange(3.0)
    np.testing.assert_allclose(call2(SCALE, a, 2.5), a * 2.5)
    np.testing.assert_allclose(call2(SCALE, a, 3), a * 3)          # int -> float64 scalar accepted
    np.testing.assert_allclose(call2(SCALE, a, np.array(4.0)), a * 4)


@pytest.mark.parametrize("args", [(np.arange(3, dtype=np.int32), np.ones(3)),
                                  (np.ones((2, 2)), np.ones(2)), (np.ones(2), 1.0)])
def test_wrong_types_are_typing_errors(args: tuple) -> None:
    with pytest.raises(TypingError, match="graphjit.Function"):
        call2(ADD, *args)


def test_float_to_int_scalar_rejected() -> None:
    n = gt.lscalar("n")
    f = gj.function([x, n], x * n)
    with pytest.raises(TypingError, match="without loss"):
        call2(f, np.ones(2), 1.5)


def test_runtime_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="shape mismatch|broadcast"):
        call2(ADD, np.ones(3), np.ones(2))


@pytest.mark.parametrize("shape,good,bad", [((4,), (4,), (3,)), ((1, None), (1, 5), (2, 5)),
                                             ((None, 3), (2, 3), (2, 4))])
def test_declared_lengths_checked_in_numba(shape, good, bad) -> None:
    """A static length (or broadcastable 1) of the graph is checked on arrays numba passes, as outside it."""
    v = gt.TensorType("float64", shape=shape)("v")
    f = gj.function([v], v * 2.0)
    np.testing.assert_array_equal(call1(f, np.ones(good)), np.full(good, 2.0))
    with pytest.raises(TypeError, match=r"argument 0 \('v'\): expected length"):
        call1(f, np.ones(bad))
    with pytest.raises(TypeError, match="'v'"):
        f(np.ones(bad))


def test_shared_variables_rejected_at_typing() -> None:
    w = gj.shared(np.ones(3), name="w")
    upd = gj.function([x], (x * w).sum(), updates=[(w, w * 2)])
    with pytest.raises(TypingError, match="updates shared variables"):
        numba.njit(lambda a: upd(a))(np.ones(3))


def test_py_mode_rejected_at_typing() -> None:
    f = gj.function([x, y], x + y, mode="PY")
    with pytest.raises(TypingError, match="LLVM linker"):
        call2(f, np.ones(2), np.ones(2))


def test_outputs_owned_by_numba() -> None:
    @numba.njit
    def many(f, a, b):
        acc = np.zeros_like(a)
        for _ in range(1000):
            acc += f(a, b)
        return acc
    np.testing.assert_allclose(many(ADD, np.ones(3), np.ones(3)), 2000.0)


def test_native_entry_from_ctypes() -> None:
    from graphjit.link.llvm.ir import layouts as L
    assert ADD.native.entry_address and len(ADD.native.in_specs) == 2
    assert ADD.native.ctypes_signature._argtypes_ == (ctypes.c_void_p,) * 4


def test_call_overhead_from_njit() -> None:
    a, b = np.ones(1), np.ones(1)
    loop_add(ADD, a, b, 10)
    n = 200_000
    best = min(_timed(loop_add, a, b, n) for _ in range(3))
    print(f"graphjit Function from njit, size-1 x+y: {best / n * 1e9:.0f} ns per call")
    assert best / n < 5e-6


def _timed(fn, a, b, n) -> float:
    t0 = time.perf_counter()
    fn(ADD, a, b, n)
    return time.perf_counter() - t0


_CACHED_CHILD = '''
import json, warnings
import numba, numpy as np
import graphjit as gj, graphjit.tensor as gt
x = gt.dvector("x")
F = gj.function([x], gt.exp(x) + 1)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")

    @numba.njit(cache=True)
    def g(a):
        return F(a) * 2

    out = g(np.arange(3.0))
print(json.dumps({"ok": bool(np.allclose(out, (np.exp(np.arange(3.0)) + 1) * 2)),
                  "uncacheable": any("Cannot cache" in str(w.message) for w in caught)}))
'''


@pytest.mark.soak
def test_njit_cache_never_keeps_a_functions_address(tmp_path) -> None:
    # the entry's (and the allocator's) address is this process's only: numba must not cache code holding it
    import json
    import os
    import subprocess
    import sys
    script = tmp_path / "cached_child.py"
    script.write_text(_CACHED_CHILD)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), GRAPHJIT_CACHE_DIR=str(tmp_path / "gj"),
               PYTHONPATH=os.path.join(root, "src"))
    for _ in range(2):
        proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert result == {"ok": True, "uncacheable": True}
