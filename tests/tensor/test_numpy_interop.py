"""numpy on symbolic tensors (tensor/numpy_interop.py): numpy defers to Variables, its ufuncs build nodes."""

import operator

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Variable
from graphjit.scalar.basic import as_ufunc, registered_scalar_ops
from graphjit.tensor.numpy_interop import (FUNCTIONS, UFUNC_METHODS, UFUNC_OVERRIDES, graphjit_name,
                                           ufunc_targets)

MODES = ["PY", "FAST_RUN", "FAST_COMPILE"]
A = np.array([0.5, -1.5, 2.0])
XV = np.array([1.5, 2.5, -0.5])

# every numpy ufunc that routed before the map was derived from the scalar-op registry -> its graphjit.tensor name
UFUNCS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "true_div", "true_divide": "true_div",
    "floor_divide": "int_div", "remainder": "mod", "power": "pow", "minimum": "minimum", "maximum": "maximum",
    "negative": "neg", "absolute": "abs", "sign": "sign", "square": "sqr", "reciprocal": "reciprocal",
    "less": "lt", "greater": "gt", "less_equal": "le", "greater_equal": "ge",
    "bitwise_and": "and_", "bitwise_or": "or_", "bitwise_xor": "xor", "invert": "invert",
    "left_shift": "left_shift", "right_shift": "right_shift", "logical_not": "logical_not",
    "logical_and": "logical_and", "logical_or": "logical_or", "isnan": "isnan", "isinf": "isinf",
    "isfinite": "isfinite", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "round_half_to_even",
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
    "log1p": "log1p", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "arcsin": "arcsin",
    "arccos": "arccos", "arctan": "arctan", "arctan2": "arctan2", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "arcsinh": "arcsinh", "arccosh": "arccosh", "arctanh": "arctanh", "matmul": "matmul",
}
# numpy's own ufuncs that route (scipy's are checked by the registry walk below)
NUMPY_ROUTED = sorted(u.__name__ for u in ufunc_targets() if getattr(np, u.__name__, None) is u)

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
@pytest.mark.parametrize("name", sorted(n for n in NUMPY_ROUTED if getattr(np, n).nin == 1))
def test_unary_ufuncs_build_the_graphjit_op(mode, name):
    ufunc = getattr(np, name)
    dtype = "int64" if name == "invert" else "bool" if name == "logical_not" else "float64"
    x = gt.vector("x", dtype=dtype)
    value = {"int64": np.array([3, -4, 0]), "bool": np.array([True, False, True]),
             "float64": np.array([0.25, 0.5, 0.75])}[dtype]
    expr = ufunc(x)
    target = getattr(gt, UFUNCS[name]) if name in UFUNCS else ufunc_targets()[ufunc]
    assert isinstance(expr, Variable) and expr.owner.op == target(x).owner.op
    with np.errstate(all="ignore"):
        want = ufunc(value)
    np.testing.assert_allclose(gj.function([x], expr, mode=mode)(value), want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(n for n in NUMPY_ROUTED if getattr(np, n).nin == 2))
def test_binary_ufuncs_on_variables(name):
    dtype = "int64" if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd",
                                "lcm") \
        else "bool" if name.startswith("logical") else "float64"
    x = gt.vector("x", dtype=dtype)
    expr = getattr(np, name)(x, np.ones(1, dtype=dtype))
    assert isinstance(expr, Variable) and not isinstance(expr, np.ndarray)


def test_every_ufunc_that_routed_before_still_routes_to_the_same_function():
    x, y = gt.dvector("x"), gt.dvector("y")
    for name, target in UFUNCS.items():
        ufunc, fn = getattr(np, name), getattr(gt, target)
        args = (x,) if ufunc.nin == 1 else (x, y)
        if name in ("invert", "left_shift", "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor"):
            args = tuple(gt.lvector() for _ in args)
        assert ufunc(*args).owner.op == fn(*args).owner.op, name
        assert graphjit_name(ufunc_targets()[ufunc]) == f"graphjit.tensor.{target}", name


def _declared_ufunc(op):
    ufunc = as_ufunc(op.numpy)
    return ufunc if ufunc is not None and ufunc.nin == op.nin and ufunc.nout == 1 else None


def test_every_declared_scalar_op_with_a_ufunc_routes():
    """The registry walk: each scalar op declared with a ufunc (numpy's or scipy's, graphjit's or a user's)
    makes that ufunc build its Elemwise, unless the first op declared with it or an override takes it."""
    import scipy.special  # noqa: F401  (scipy's ufuncs route once scipy is loaded; routing never imports it)
    ops = [(op, _declared_ufunc(op)) for op in registered_scalar_ops()]
    ops = [(op, u) for op, u in ops if u is not None]
    assert len(ops) >= 80
    for op, ufunc in ops:
        dtype = "float64" if "f" in op.allowed_kinds else "int64"
        inputs = [gt.vector(f"x{i}", dtype=dtype) for i in range(op.nin)]
        values = [np.array([0.25, 0.5, 0.75]) if dtype == "float64" else np.array([3, 4, 6])] * op.nin
        if ufunc in (np.equal, np.not_equal):
            with pytest.raises(TypeError, match="compares Variables by identity"):
                ufunc(*inputs)
            continue
        expr = ufunc(*inputs)
        first = next(o for o, u in ops if u is ufunc)
        if ufunc in UFUNC_OVERRIDES:
            assert expr.owner.op == UFUNC_OVERRIDES[ufunc](*inputs).owner.op
            continue
        assert expr.owner.op.scalar_op is first, (op.name, ufunc)
        if first is op:
            with np.errstate(all="ignore"):
                want = ufunc(*values)
            np.testing.assert_allclose(gj.function(inputs, expr, mode="PY")(*values), want, rtol=1e-12)
    assert np.fmod(gt.dvector(), 2.0).owner.op == gt.fmod


def test_overrides_map_to_graphjit_functions():
    for ufunc, fn in UFUNC_OVERRIDES.items():
        assert getattr(gt, graphjit_name(fn).rsplit(".", 1)[1]) is fn, ufunc


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
    for (ufunc, method), target in UFUNC_METHODS.items():
        with pytest.raises(TypeError, match=rf"numpy.{ufunc.__name__}.{method} .* graphjit.tensor.{target.__name__}"):
            getattr(ufunc, method)(x)
    with pytest.raises(TypeError, match="numpy.add.outer"):
        np.add.outer(x, x)
    with pytest.raises(TypeError, match="graphjit.tensor.exp"):
        np.exp(x, out=np.empty(3))
    with pytest.raises(TypeError, match="graphjit.tensor.add"):
        np.add(x, 1, dtype="float32")
    with pytest.raises(TypeError, match="numpy.heaviside has no graphjit equivalent"):
        np.heaviside(x, 2.0)


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
    assert all(getattr(gt, fn.__name__) is fn for fn in FUNCTIONS.values())
    assert set(UFUNCS.values()) <= set(dir(gt))
    for name, fn in zip(["sum", "amax", "around", "concatenate", "dot"], [gt.sum, gt.max, gt.round, gt.concatenate,
                                                                        gt.dot]):
        assert FUNCTIONS[getattr(np, name)] is fn
