"""searchsorted, nonzero/flatnonzero/argwhere/where(cond)/nonzero_values, count_nonzero, bincount and unique against
numpy in every mode (every layout, zero-size inputs, NaNs, bad input), their gradients and native lowering."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import NullTypeGradError, verify_grad
from op_check import OP_TEST_MODES, Case, arr, check_case

NAN = np.nan
SORTED = [-1.0, 0.0, 0.0, 1.5, NAN, NAN]
PROBES = [[NAN, 0.0, -3.0], [1.5, 9.0, 0.0]]
MIXED = [[0.0, -0.0, 2.5], [NAN, 0.0, -1.0]]
ROWS = [[2.0, 1.0, 2.0, 1.0], [0.0, NAN, 0.0, NAN], [2.0, 1.0, 2.0, 1.0]]


def _search_all(a, v, s):
    return [gt.searchsorted(a, v), gt.searchsorted(a, v, side="right"), gt.searchsorted(a[s], v, sorter=s)]


def _nonzero_all(x):
    return [*gt.nonzero(x), gt.where(x)[0], x.nonzero()[-1], gt.flatnonzero(x), gt.argwhere(x), x.nonzero_values(),
            gt.count_nonzero(x), gt.count_nonzero(x, axis=(0, -1), keepdims=True), gt.nonzero(x, True)]


def _np_nonzero_all(a):
    return [*np.nonzero(a), np.where(a)[0], a.nonzero()[-1], np.flatnonzero(a), np.argwhere(a), a.ravel()[np.flatnonzero(a)],
            np.count_nonzero(a), np.count_nonzero(a, axis=(0, -1), keepdims=True), np.array(np.nonzero(a))]


def _unique_all(x, axis=None):
    return list(gt.unique(x, True, True, True, axis=axis))


def _np_unique_all(a, axis=None):
    return list(np.unique(a, True, True, True, axis=axis))


CASES = [
    # a sorted with NaNs last; the sorter case reads a through a permutation (a[s] is sorted)
    Case("searchsorted", _search_all,
         lambda a, v, s: [np.searchsorted(a, v), np.searchsorted(a, v, "right"), np.searchsorted(a[s], v, sorter=s)],
         [arr((6,), values=SORTED), arr((2, 3), values=PROBES), arr((6,), "int32", values=[5, 4, 3, 2, 1, 0])],
         dtypes=("float64",)),
    Case("searchsorted_mixed_dtypes", lambda a, v: gt.searchsorted(a, v, "right"),
         lambda a, v: np.searchsorted(a, v, "right"), [arr((5,), values=[-2, 0, 0, 3, 7]), arr((4,), "float32")],
         dtypes=("int16", "bool")),
    Case("nonzero_family", _nonzero_all, _np_nonzero_all, [arr((3, 2, 4), low=-1, high=1)], dtypes=("int8", "bool")),
    Case("nonzero_family_float", _nonzero_all, _np_nonzero_all, [arr((2, 3), values=MIXED)], dtypes=("float32",)),
    Case("nonzero_0d", lambda x: [gt.flatnonzero(x), gt.argwhere(x), x.nonzero_values(), *_unique_all(x)],
         lambda a: [np.flatnonzero(a), np.argwhere(a), a.ravel()[np.flatnonzero(a)], *_np_unique_all(a)],
         [arr((), values=2.0)],
         dtypes=("float64",)),
    Case("bincount", lambda x: [gt.bincount(x), gt.bincount(x, minlength=9), gt.bincount(x, None, None, True)],
         lambda x: [np.bincount(x), np.bincount(x, minlength=9), np.bincount(x)], [arr((7,), low=0, high=5)],
         dtypes=("int64", "bool")),
    # numpy gives int64 zeros for an empty x even with weights; graphjit's dtype is static (float64): no zero-size
    Case("bincount_weights", lambda x, w: gt.bincount(x, w, minlength=9), lambda x, w: np.bincount(x, w, minlength=9),
         [arr((7,), low=0, high=5), arr((7,), "float32")], dtypes=("int16",), zero_size=False),
    Case("bincount_negative", gt.bincount, np.bincount, [arr((3,), values=[1, -1, 2])], dtypes=("int32",),
         zero_size=False),
    Case("bincount_weights_length", gt.bincount, np.bincount, [arr((3,), values=[1, 0, 2]), arr((2,), "float64")],
         dtypes=("int64",), zero_size=False),
    Case("searchsorted_bad_sorter", lambda a, v, s: gt.searchsorted(a, v, sorter=s),
         lambda a, v, s: np.searchsorted(a, v, sorter=s),
         [arr((3,)), arr((2,)), arr((3,), "int64", values=[5, 7, -1])], dtypes=("float64",), zero_size=False),
    Case("searchsorted_sorter_length", lambda a, v, s: gt.searchsorted(a, v, sorter=s),
         lambda a, v, s: np.searchsorted(a, v, sorter=s),
         [arr((3,)), arr((2,)), arr((2,), "int64", values=[0, 1])], dtypes=("float64",), zero_size=False),
    Case("unique_flat", _unique_all, _np_unique_all, [arr((3, 4), values=ROWS)], dtypes=("float64",)),
    Case("unique_flat_ints", lambda x: [gt.unique(x), *_unique_all(x)], lambda a: [np.unique(a), *_np_unique_all(a)],
         [arr((2, 5), low=-2, high=2)], dtypes=("int32", "bool")),
    # the radix sort's keys: infinities, signed zeros, NaNs, subnormals, the integer extremes
    Case("unique_special_values", _unique_all, _np_unique_all,
         [arr((9,), values=[np.inf, -0.0, NAN, -np.inf, 0.0, 1e-40, NAN, -1e-40, -0.0])], dtypes=("float64", "float32")),
    Case("unique_integer_extremes", _unique_all, _np_unique_all,
         [arr((5,), values=[-2 ** 63, 2 ** 63 - 1, 0, -1, -2 ** 63])], dtypes=("int64",)),
    Case("unique_rows", lambda x: _unique_all(x, 0), lambda a: _np_unique_all(a, 0), [arr((3, 4), values=ROWS)],
         dtypes=("float64",)),
    Case("unique_columns_3d", lambda x: _unique_all(x, -2), lambda a: _np_unique_all(a, -2),
         [arr((2, 4, 2), low=0, high=1)], dtypes=("uint16",)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_against_numpy(case):
    check_case(case)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_gradients(mode):
    x = np.array([3, 0, 3, 1])
    verify_grad(lambda w: gt.bincount(x, w, minlength=5) * np.arange(1.0, 6.0), [np.array([0.5, -1, 2, 3])], mode=mode)
    a, v = gt.dvector("a"), gt.dvector("v")
    ga, gv = gj.grad(gt.searchsorted(a, v).sum() * 1.0 + a.sum() + v.sum(), [a, v])
    f = gj.function([a, v], [ga, gv], mode=mode)
    for g in f(np.arange(3.0), np.array([0.5, 4.0])):
        np.testing.assert_array_equal(g, np.ones_like(g))


@pytest.mark.parametrize("build", [lambda x: gt.unique(x), lambda x: gt.nonzero(x, True) * x.sum()],
                         ids=["unique", "nonzero"])
def test_undefined_gradients(build):
    x = gt.dvector("x")
    with pytest.raises(NullTypeGradError, match="undefined"):
        gj.grad(build(x).sum(), x)


def test_native_lowering():
    x, v, i, w = gt.dmatrix("x"), gt.dvector("v"), gt.lvector("i"), gt.dvector("w")
    outs = [*_search_all(v, x, i), *_nonzero_all(x), gt.bincount(i, w, minlength=3), *_unique_all(x, 1)]
    f = gj.function([x, v, i, w], outs, mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    got = f(np.array(ROWS), np.array(SORTED[:3]), np.array([0, 2, 1]), np.ones(3))
    np.testing.assert_array_equal(got[-4], np.unique(np.array(ROWS), axis=1))


@pytest.mark.parametrize("call, error", [
    (lambda: gt.searchsorted(gt.dmatrix(), 1.0), ValueError),
    (lambda: gt.searchsorted(gt.dvector(), 1.0, side="x"), ValueError),
    (lambda: gt.searchsorted(gt.dvector(), 1.0, sorter=gt.dvector()), TypeError),
    (lambda: gt.bincount(gt.dvector()), TypeError),
    (lambda: gt.bincount(gt.TensorType("uint64", (None,))()), TypeError),
    (lambda: gt.bincount(gt.lmatrix()), ValueError),
    (lambda: gt.bincount(gt.lvector(), minlength=-1), ValueError),
    (lambda: gt.nonzero(gt.dscalar()), ValueError),
    (lambda: gt.where(gt.dvector(), 1.0), ValueError),
    (lambda: gt.unique(gt.dvector(), axis=1), np.exceptions.AxisError),
    (lambda: gt.count_nonzero(gt.dvector(), axis=2), np.exceptions.AxisError),
], ids=["searchsorted_2d", "searchsorted_side", "searchsorted_float_sorter", "bincount_float", "bincount_uint64",
        "bincount_2d", "bincount_minlength", "nonzero_0d", "where_two_args", "unique_axis", "count_nonzero_axis"])
def test_bad_arguments(call, error):
    with pytest.raises(error):
        call()


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_bincount_of_nothing_with_weights_is_float(mode):
    x, w = gt.lvector("x"), gt.dvector("w")
    got = gj.function([x, w], gt.bincount(x, w, minlength=2), mode=mode)(np.zeros(0, "int64"), np.zeros(0))
    assert got.dtype == "float64" and got.tolist() == [0.0, 0.0]


def test_three_argument_where_is_unchanged():
    c, x = gt.bvector("c"), gt.dvector("x")
    f = gj.function([c, x], gt.where(c, x, -x))
    np.testing.assert_array_equal(f(np.array([1, 0], dtype="int8"), np.array([2.0, 3.0])), [2.0, -3.0])


def test_numpy_functions_on_symbolic_tensors():
    x, i = gt.dvector("x"), gt.lvector("i")
    outs = [*np.where(x), np.flatnonzero(x), np.argwhere(x), np.count_nonzero(x), np.searchsorted(x, 0.5),
            np.bincount(i), *np.unique(x, return_counts=True)]
    f = gj.function([x, i], outs, mode="PY")
    a = np.array([0.0, 1.0, 1.0])
    for got, want in zip(f(a, np.array([2, 0])), [*np.where(a), np.flatnonzero(a), np.argwhere(a), np.count_nonzero(a),
                                                  np.searchsorted(a, 0.5), np.bincount([2, 0]),
                                                  *np.unique(a, return_counts=True)]):
        np.testing.assert_array_equal(got, want)
