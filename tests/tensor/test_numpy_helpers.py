"""diff, ediff1d, broadcast_arrays, broadcast_shape, max_and_argmax, divmod, get_vector_length, numpy's top-level
tril and triu, argmax/argmin over several axes, cumsum/cumprod with reverse and n-ary add/mul, against numpy in every mode (every layout, zero-size inputs), gradients, bad arguments."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from op_check import OP_TEST_MODES, Case, arr, check_case

CASES = [
    Case("diff", gt.diff, np.diff, [arr((3, 5))]),
    Case("diff_n2_axis0", lambda x: gt.diff(x, 2, 0), lambda a: np.diff(a, 2, 0), [arr((4, 3))]),
    Case("diff_n0", lambda x: gt.diff(x, 0), lambda a: np.diff(a, 0), [arr((4,))]),
    Case("diff_past_length", lambda x: gt.diff(x, 5), lambda a: np.diff(a, 5), [arr((3,))]),
    Case("diff_bool", gt.diff, np.diff, [arr((6,), "bool")], dtypes=("bool",)),
    Case("diff_int", gt.diff, np.diff, [arr((6,), "int32")], dtypes=("int32",)),
    Case("ediff1d", gt.ediff1d, np.ediff1d, [arr((2, 3))]),
    Case("ediff1d_ends", lambda x: gt.ediff1d(x, to_end=[7.0, 8.0], to_begin=-1.0),
         lambda a: np.ediff1d(a, to_end=[7.0, 8.0], to_begin=-1.0), [arr((4,))]),
    Case("broadcast_arrays", lambda x, y: gt.broadcast_arrays(x, y), lambda a, b: list(np.broadcast_arrays(a, b)),
         [arr((3,)), arr((2, 1))]),
    Case("broadcast_arrays_one", lambda x: gt.broadcast_arrays(x), lambda a: list(np.broadcast_arrays(a)),
         [arr((2, 3))]),
    Case("broadcast_arrays_incompatible", lambda x, y: gt.broadcast_arrays(x, y),
         lambda a, b: list(np.broadcast_arrays(a, b)), [arr((4,)), arr((2, 3))], zero_size=False),
    Case("max_and_argmax", lambda x: list(gt.max_and_argmax(x, 1)),
         lambda a: [np.max(a, 1), np.argmax(a, 1)], [arr((3, 4))], zero_size=False),
    Case("max_and_argmax_all", lambda x: list(gt.max_and_argmax(x)), lambda a: [np.max(a), np.argmax(a)],
         [arr((3, 4))], zero_size=False),
    Case("divmod", lambda x, y: list(gt.divmod(x, y)), lambda a, b: list(np.divmod(a, b)),
         [arr((3, 4)), arr((4,), low=0.5, high=3.0)]),
    Case("divmod_int", lambda x, y: list(gt.divmod(x, y)), lambda a, b: list(np.divmod(a, b)),
         [arr((5,), "int64", low=-9, high=9), arr((5,), "int64", values=[3, -2, 4, 1, -5])], dtypes=("int64",),
         zero_size=False),
    Case("tril_triu", lambda x: [gt.tril(x, -1), gt.triu(x, 1)], lambda a: [np.tril(a, -1), np.triu(a, 1)],
         [arr((2, 3, 4))]),
    Case("broadcast_shape", lambda x, y: [*gt.broadcast_shape(x, y),
                                          *gt.broadcast_shape((x.shape[1], 1), (y.shape[0], 5), arrays_are_shapes=True)],
         lambda a, b: [np.int64(s) for s in np.broadcast_shapes(a.shape, b.shape)
                       + np.broadcast_shapes((a.shape[1], 1), (b.shape[0], 5))],
         [arr((2, 1, 4)), arr((3, 1))], dtypes=("float64",), layouts=False),      # shapes only: no layouts
    Case("broadcast_shape_incompatible", lambda x, y: list(gt.broadcast_shape(x, y)),
         lambda a, b: [np.int64(s) for s in np.broadcast_shapes(a.shape, b.shape)], [arr((2, 3)), arr((4,))],
         dtypes=("float64",), layouts=False, zero_size=False),
    Case("argmax_axes", lambda x: [gt.argmax(x, (0, 2)), gt.argmin(x, (2, -3), keepdims=True),
                                   *gt.max_and_argmax(x, (1, 2)), gt.argmax(x, (0, 1, 2), keepdims=True)],
         lambda a: [_ravel_axes(a, (0, 2)).argmax(-1), _ravel_axes(a, (0, 2)).argmin(-1)[None, :, None],
                    a.max((1, 2)), _ravel_axes(a, (1, 2)).argmax(-1), a.argmax(keepdims=True)],
         [arr((2, 3, 4), "int32", low=-3, high=3)], dtypes=("int32",)),
    Case("cum_reverse", lambda x: [gt.cumsum(x, -1, reverse=True), gt.cumprod(x, None, reverse=True),
                                   x.cumsum(0, reverse=True)],
         lambda a: [np.flip(np.cumsum(np.flip(a, -1), -1), -1), np.cumprod(a.ravel()[::-1])[::-1],
                    np.flip(np.cumsum(np.flip(a, 0), 0), 0)], [arr((3, 4), low=0.5, high=1.5)]),
    Case("nary_add_mul", lambda a, b, c: [gt.add(a, b, c), gt.mul(a, b, c, a)],
         lambda a, b, c: [a + b + c, a * b * c * a], [arr((2, 3)), arr((3,)), arr((2, 1))], dtypes=("float32",),
         layouts=False),                    # the binary Elemwise it folds into is tested on every layout
]


def _ravel_axes(a, axes):
    """numpy's value of an argmax over several axes: those axes moved last and raveled into one."""
    kept = [d for d in range(a.ndim) if d not in axes]
    return np.transpose(a, kept + list(axes)).reshape([a.shape[d] for d in kept] + [-1])


@pytest.mark.parametrize("case", CASES, ids=str)
def test_against_numpy(case):
    check_case(case)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_gradients(mode):
    rng = np.random.default_rng(0)
    m = rng.normal(size=(3, 4))
    for fn, pt in [(lambda x: gt.diff(x, 2, 0) ** 2, m),
                   (lambda x: gt.ediff1d(x, to_begin=0.5) ** 2, m),
                   (lambda x: gt.broadcast_arrays(x, np.ones((2, 1, 4)))[0] * np.arange(24.0).reshape(2, 3, 4), m),
                   (lambda x: gt.max_and_argmax(x, 0)[0], m)]:
        verify_grad(fn, [pt], mode=mode)


def test_gradients_reverse_and_nary():
    """Checked numerically in PY; test_native_lowering compiles them natively."""
    m = np.random.default_rng(0).normal(size=(3, 4))
    for fn in [lambda x: gt.cumsum(x, 0, reverse=True) ** 2, lambda x: gt.cumprod(x, None, reverse=True),
               lambda x: gt.mul(x, x, np.ones(4) * 2, x) + gt.add(x, 1, x)]:
        verify_grad(fn, [m], mode="PY")


def test_nary_keeps_the_op():
    """add(a, b, c) folds from the left into the module's own Elemwise instances (rewrites compare them)."""
    a, b, c = gt.dvectors("a", "b", "c")
    out = gt.add(a, b, c)
    assert out.owner.op is gt.add and out.owner.inputs[1] is c and out.owner.inputs[0].owner.op is gt.add
    assert gt.mul(a, b, c).owner.op is gt.mul
    with pytest.raises(TypeError):
        gt.sub(a, b, c)


def test_native_lowering():
    x, v = gt.dmatrix("x"), gt.dvector("v")
    outs = [gt.diff(x, 2, 0), gt.ediff1d(x, to_end=v), *gt.broadcast_arrays(v, x), *gt.max_and_argmax(x, 1),
            *gt.divmod(x, 1.5), *gt.broadcast_shape(x, v), gt.argmax(x, (0, 1)), gt.argmin(x, (1, 0), True),
            gt.cumsum(x, 1, reverse=True), gt.add(x, v, x), gt.mul(v, v, v),
            gj.grad(gt.cumprod(x, None, reverse=True).sum() + gt.cumsum(x, -1, reverse=True)[0].sum(), x)]
    f = gj.function([x, v], outs, mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    m = np.arange(1.0, 7.0).reshape(2, 3)
    got = f(m, np.ones(3))
    # d/dx_k of sum_i prod_{j >= i} x_j is sum_{i <= k} prod_{j >= i, j != k} x_j (x = 1..6; row 1 is k = 3..5)
    np.testing.assert_allclose(got[-1][1], [1920 / 4, 1950 / 5, 1956 / 6])


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_broadcast_shape_checked_at_run_time(mode):
    x, y = gt.dmatrix("x"), gt.dvector("y")
    f = gj.function([x, y], list(gt.broadcast_shape(x, y)), mode=mode)
    assert [int(s) for s in f(np.ones((2, 1)), np.ones(5))] == [2, 5]
    with pytest.raises(ValueError, match="dimension 1 cannot be broadcast"):
        f(np.ones((2, 3)), np.ones(5))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        gt.broadcast_shape((2, 3), (4, 3), arrays_are_shapes=True)


def test_get_vector_length():
    x = gt.dtensor3("x")
    assert gt.get_vector_length(x.shape) == 3
    assert gt.get_vector_length(gt.as_tensor_variable([4, 5])) == 2
    assert gt.get_vector_length(gt.TensorType("float64", (6,))("s")) == 6
    assert gt.get_vector_length(gt.stack([x.shape[0], x.shape[2]])) == 2
    with pytest.raises(ValueError, match="not known"):
        gt.get_vector_length(gt.dvector("v"))
    with pytest.raises(ValueError, match="needs a vector"):
        gt.get_vector_length(gt.dmatrix("m"))


@pytest.mark.parametrize("call, error", [
    (lambda x: gt.diff(x, -1), ValueError),
    (lambda x: gt.diff(x, 1.5), ValueError),
    (lambda x: gt.diff(x, 1, 2), np.exceptions.AxisError),
    (lambda x: gt.diff(x[0, 0]), ValueError),
], ids=["negative_n", "float_n", "axis", "scalar"])
def test_bad_arguments(call, error):
    with pytest.raises(error):
        call(gt.dmatrix("x"))
