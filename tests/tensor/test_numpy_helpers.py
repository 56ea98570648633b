"""diff, ediff1d, broadcast_arrays, max_and_argmax, divmod, get_vector_length, and numpy's top-level tril and
triu, against numpy in every mode (every layout, zero-size inputs), gradients, bad arguments."""

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
]


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


def test_native_lowering():
    x, v = gt.dmatrix("x"), gt.dvector("v")
    outs = [gt.diff(x, 2, 0), gt.ediff1d(x, to_end=v), *gt.broadcast_arrays(v, x), *gt.max_and_argmax(x, 1),
            *gt.divmod(x, 1.5)]
    f = gj.function([x, v], outs, mode="FAST_RUN")
    assert f.native.fallback_nodes == []


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
