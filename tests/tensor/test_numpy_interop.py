"""numpy on symbolic tensors (tensor/numpy_interop.py): numpy defers to Variables, its ufuncs build nodes."""

import operator

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Variable
from graphjit.tensor.numpy_interop import FUNCTIONS, UFUNC_METHODS, UFUNCS

MODES = ["PY", "FAST_RUN", "FAST_COMPILE"]
A = np.array([0.5, -1.5, 2.0])
XV = np.array([1.5, 2.5, -0.5])

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.floordiv,
          operator.mod, operator.lt, operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", BINARY, ids=lambda o: o.__name__)
@pytest.mark.parametrize("left", [A, np.float64(2.5), np.int64(3)], ids=["array", "f64", "i64"])
def test_numpy_on_the_left_builds_a_node(mode, op, left):
    x = gt.dvector("x")
    expr = op(left, x)
    assert isinstance(expr, Variable)
    got = gj.function([x], expr, mode=mode)(XV)
    with np.errstate(all="ignore"):
        want = op(left, XV)
    np.testing.assert_allclose(got, want)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("mode", MODES)
def test_matmul_on_the_left(mode):
    x, m = gt.dvector("x"), np.arange(6.0).reshape(2, 3)
    expr = m @ x
    assert isinstance(expr, Variable)
    np.testing.assert_allclose(gj.function([x], expr, mode=mode)(XV), m @ XV)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(n for n in UFUNCS if getattr(np, n).nin == 1))
def test_unary_ufuncs_build_the_graphjit_op(mode, name):
    ufunc = getattr(np, name)
    dtype = "int64" if name == "invert" else "bool" if name == "logical_not" else "float64"
    x = gt.vector("x", dtype=dtype)
    value = {"int64": np.array([3, -4, 0]), "bool": np.array([True, False, True]),
             "float64": np.array([0.25, 0.5, 0.75])}[dtype]
    expr = ufunc(x)
    assert isinstance(expr, Variable) and expr.owner.op == getattr(gt, UFUNCS[name])(x).owner.op
    with np.errstate(all="ignore"):
        want = ufunc(value)
    np.testing.assert_allclose(gj.function([x], expr, mode=mode)(value), want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(n for n in UFUNCS if getattr(np, n).nin == 2))
def test_binary_ufuncs_on_variables(name):
    dtype = "int64" if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift") \
        else "bool" if name.startswith("logical") else "float64"
    x = gt.vector("x", dtype=dtype)
    expr = getattr(np, name)(x, np.ones(1, dtype=dtype))
    assert isinstance(expr, Variable) and not isinstance(expr, np.ndarray)


def test_equality_with_an_array_is_refused():
    """== on Variables is identity (they are dict keys); with an array it would silently mean something else."""
    x = gt.dvector("x")
    for expr, target in ((lambda: A == x, "eq"), (lambda: x == A, "eq"), (lambda: A != x, "neq"),
                         (lambda: np.equal(x, A), "eq"), (lambda: np.float64(1) == x, "eq")):
        with pytest.raises(TypeError, match=rf"graphjit.tensor.{target}\b"):
            expr()
    y = gt.dvector("y")
    assert (x == x) is True and (x == y) is False and x in [y, x] and {x: 1}[x] == 1


def test_ufunc_methods_and_keywords_name_the_graphjit_function():
    x = gt.dvector("x")
    for (name, method), target in UFUNC_METHODS.items():
        with pytest.raises(TypeError, match=rf"numpy.{name}.{method} .* graphjit.tensor.{target}"):
            getattr(getattr(np, name), method)(x)
    with pytest.raises(TypeError, match="numpy.add.outer"):
        np.add.outer(x, x)
    with pytest.raises(TypeError, match="graphjit.tensor.exp"):
        np.exp(x, out=np.empty(3))
    with pytest.raises(TypeError, match="graphjit.tensor.add"):
        np.add(x, 1, dtype="float32")
    with pytest.raises(TypeError, match="numpy.fmod has no graphjit equivalent"):
        np.fmod(x, 2.0)


@pytest.mark.parametrize("mode", MODES)
def test_array_functions(mode):
    m = gt.dmatrix("m")
    value = np.arange(6.0).reshape(2, 3) - 2.5
    cases = [(np.sum, {}), (np.sum, {"axis": 0}), (np.mean, {"axis": 1}), (np.max, {}), (np.amin, {"axis": 0}),
             (np.prod, {}), (np.cumsum, {"axis": 1}), (np.transpose, {}), (np.round, {}),
             (np.clip, {"a_min": -1.0, "a_max": 1.0}), (np.reshape, {"shape": (3, 2)}), (np.argmax, {"axis": 1})]
    for func, kwargs in cases:
        expr = func(m, **kwargs)
        assert isinstance(expr, Variable), func.__name__
        np.testing.assert_allclose(gj.function([m], expr, mode=mode)(value), func(value, **kwargs))
    expr = np.where(m > 0, m, 0.0)
    np.testing.assert_allclose(gj.function([m], expr, mode=mode)(value), np.where(value > 0, value, 0.0))
    expr = np.dot(value.T, m)
    np.testing.assert_allclose(gj.function([m], expr, mode=mode)(value), value.T @ value)


def test_array_functions_without_equivalent():
    x = gt.dvector("x")
    with pytest.raises(TypeError, match="numpy.sort does not take symbolic tensors"):
        np.sort(x)
    with pytest.raises(TypeError, match="out="):
        np.sum(x, out=np.empty(()))
    assert set(FUNCTIONS.values()) <= set(dir(gt))
    assert set(UFUNCS.values()) <= set(dir(gt))
