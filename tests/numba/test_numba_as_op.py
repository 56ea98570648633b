"""numba -> graphjit: as_op in PY and FAST_RUN, no Python callback in the fused IR, elementwise fusion."""

from __future__ import annotations

import pickle

import numba
import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.numba import as_op
from graphjit.tensor.type import TensorType

DVEC = TensorType("float64", shape=(None,))


@numba.njit
def running_sum(a):
    out = np.empty_like(a)
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i]
        out[i] = acc
    return out


@numba.njit
def split_signs(a):
    return np.maximum(a, 0.0), np.minimum(a, 0.0)


@numba.njit
def must_be_positive(a):
    if a.min() < 0:
        raise ValueError("negative")
    return a * 1.0


@numba.njit
def huber(a, d):
    return 0.5 * a * a if abs(a) <= d else d * (abs(a) - 0.5 * d)


RUNNING = as_op(running_sum, [DVEC], [DVEC])
SPLIT = as_op(split_signs, [DVEC], [DVEC, DVEC])
HUBER = as_op(huber, ["float64", "float64"], ["float64"], elementwise=True)


def _huber_np(a, d):
    return np.where(np.abs(a) <= d, 0.5 * a * a, d * (np.abs(a) - 0.5 * d))


@pytest.mark.parametrize("mode", ["PY", "FAST_COMPILE", "FAST_RUN"])
def test_tensor_op(mode: str) -> None:
    x = gt.dvector("x")
    f = gj.function([x], RUNNING(x * 2) + 1, mode=mode)
    a = np.arange(5.0)
    np.testing.assert_allclose(f(a), np.cumsum(a * 2) + 1)
    np.testing.assert_allclose(f(a[::-2]), np.cumsum(a[::-2] * 2) + 1)


def test_lowered_without_python_callback() -> None:
    x = gt.dvector("x")
    f = gj.function([x], RUNNING(x) * 3)
    assert f.native.fallback_nodes == []
    assert f'call i32 @"{RUNNING.symbol}"' in f.native.llvm_ir


def test_several_outputs() -> None:
    x = gt.dvector("x")
    pos, neg = SPLIT(x)
    f = gj.function([x], [pos * 2, neg])
    a = np.linspace(-2, 2, 5)
    got = f(a)
    np.testing.assert_allclose(got[0], np.maximum(a, 0) * 2)
    np.testing.assert_allclose(got[1], np.minimum(a, 0))
    assert f.native.fallback_nodes == []


def test_exception_in_numba_code() -> None:
    op = as_op(must_be_positive, [DVEC], [DVEC])
    x = gt.dvector("x")
    f = gj.function([x], op(x))
    np.testing.assert_allclose(f(np.ones(2)), 1.0)
    with pytest.raises(RuntimeError, match="must_be_positive raised"):
        f(-np.ones(2))


def test_wrong_input_type() -> None:
    with pytest.raises(TypeError):
        RUNNING(gt.dmatrix("m"))


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_elementwise_fuses(mode: str) -> None:
    x, d = gt.dvector("x"), gt.dscalar("d")
    f = gj.function([x, d], HUBER(x * 3, d) + gt.exp(x), mode=mode)
    a = np.linspace(-1, 1, 9)
    np.testing.assert_allclose(f(a, 0.5), _huber_np(a * 3, 0.5) + np.exp(a))
    if mode == "FAST_RUN":
        assert f.native.fallback_nodes == [] and f.native.n_loop_groups == 1
        assert HUBER.scalar_op.symbol in f.native.llvm_ir


def test_elementwise_broadcast_and_cast() -> None:
    m = gt.fmatrix("m")
    f = gj.function([m], HUBER(m, 1.0))
    a = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(f(a), _huber_np(a.astype(np.float64), 1.0))


def test_symbols_are_deterministic() -> None:
    again = as_op(huber, ["float64", "float64"], ["float64"], elementwise=True)
    assert again.scalar_op.symbol == HUBER.scalar_op.symbol
    other = as_op(huber, ["float32", "float32"], ["float32"], elementwise=True)
    assert other.scalar_op.symbol != HUBER.scalar_op.symbol


def test_function_with_numba_op_pickles() -> None:
    x = gt.dvector("x")
    f = gj.function([x], HUBER(RUNNING(x), 1.0))
    g = pickle.loads(pickle.dumps(f))
    a = np.arange(4.0)
    np.testing.assert_allclose(g(a), f(a))


_SCALE = np.array([2.0, 3.0])


def _scaled_by(a):
    def f(x):
        return x * a
    return f


def _scaled_by_global(x):
    return x * _SCALE[0]


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_one_code_capturing_different_values_makes_different_ops(mode: str) -> None:
    """Closures of one code over 2.0 and 3.0 are two ops (they were merged and shared one cfunc)."""
    x = gt.dvector("x")
    tensor = [as_op(_scaled_by(a), [gt.dvector], [gt.dvector]) for a in (2.0, 3.0, 2.0)]
    scalar = [as_op(_scaled_by(a), ["float64"], ["float64"], elementwise=True) for a in (2.0, 3.0)]
    assert tensor[0] != tensor[1] and tensor[0] == tensor[2]
    f = gj.function([x], [tensor[0](x), tensor[1](x), scalar[0](x), scalar[1](x)], mode=mode)
    np.testing.assert_array_equal(np.array(f(np.ones(2))), [[2, 2], [3, 3], [2, 2], [3, 3]])


def test_a_global_array_value_is_part_of_the_op() -> None:
    before = as_op(_scaled_by_global, [gt.dvector], [gt.dvector])
    _SCALE[0] = 5.0
    try:
        after = as_op(_scaled_by_global, [gt.dvector], [gt.dvector])
    finally:
        _SCALE[0] = 2.0
    assert before != after and before.symbol != after.symbol
