"""numpy's top-level diag, diagonal, trace and pad against numpy in every mode (every layout, zero-size inputs),
their gradients, native lowering and bad arguments."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from op_check import OP_TEST_MODES, Case, arr, check_case

GATHER_MODES = ("edge", "reflect", "symmetric", "wrap")

CASES = [
    Case("diagonal_offsets_axes",
         lambda x: [gt.diagonal(x, 1, 2, 0), gt.diagonal(x, -2, -1, 1), x.diagonal(), gt.trace(x, 1, 0, 2),
                    gt.trace(x, dtype="float32")],
         lambda a: [np.diagonal(a, 1, 2, 0), np.diagonal(a, -2, -1, 1), np.diagonal(a), np.trace(a, 1, 0, 2),
                    np.trace(a, dtype="float32")],
         [arr((3, 4, 5))], dtypes=("float64",), rtol=1e-6),
    Case("diag", lambda m, v: [gt.diag(m, 2), gt.diag(m, -1), gt.diag(m, 7), gt.diag(v, 2), gt.diag(v, -1), gt.diag(v)],
         lambda m, v: [np.diag(m, 2), np.diag(m, -1), np.diag(m, 7), np.diag(v, 2), np.diag(v, -1), np.diag(v)],
         [arr((3, 5)), arr((3,))], dtypes=("float64",), layouts=False),   # diagonal and pad run every layout
    Case("pad_constant",
         lambda x, c: [gt.pad(x, ((1, 2), (3, 0)), constant_values=((1, 2), (3, 4))), gt.pad(x, 2),
                       gt.pad(x, (0, 1), constant_values=-1.5), gt.pad(x, ((1, 0),), constant_values=c)],
         lambda a, c: [np.pad(a, ((1, 2), (3, 0)), constant_values=((1, 2), (3, 4))), np.pad(a, 2),
                       np.pad(a, (0, 1), constant_values=-1.5), np.pad(a, ((1, 0),), constant_values=c)],
         [arr((2, 3)), arr(())], dtypes=("float64",)),
    # pads longer than the axis (numpy iterates); a zero-size axis is numpy's ValueError
    Case("pad_gather_modes", lambda x, y: [gt.pad(x, ((5, 2), (7, 1)), m) for m in GATHER_MODES]
         + [gt.pad(y, 3, m) for m in ("reflect", "symmetric")],
         lambda a, b: [np.pad(a, ((5, 2), (7, 1)), m) for m in GATHER_MODES]
         + [np.pad(b, 3, m) for m in ("reflect", "symmetric")],
         [arr((2, 3)), arr((1, 2))], dtypes=("float64",)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_against_numpy(case):
    check_case(case)


def _cost(x):
    out = (gt.diagonal(x, 1, 2, 1) ** 2).sum() + gt.trace(x, -1, 0, 2).sum() + (gt.diag(x[0, 0], -2) ** 2).sum()
    for k, mode in enumerate(("constant",) + GATHER_MODES):
        out = out + (gt.pad(x[1], ((1, 2), (5, 1 + k)), mode)[:, :8] * np.linspace(-1, 1, 8)).sum()
    return out


def test_gradients():
    verify_grad(_cost, [np.random.default_rng(0).normal(size=(2, 3, 4))], mode="PY")


def test_native_lowering():
    """Every output (values, gradients, int dtypes) native under FAST_RUN, and equal to PY's in each LLVM mode."""
    x, v, i = gt.dtensor3("x"), gt.dvector("v"), gt.itensor3("i")
    outs = [gt.diag(v, 1), gt.trace(i, 1), gt.diagonal(i, 0, 2, 1), gt.diag(i[0], -1), gt.pad(i, 3, "symmetric"),
            gt.pad(i, ((1, 0), (0, 0), (2, 3)), "wrap"), gt.pad(i, 1, "edge"), gj.grad(_cost(x), x)]
    vals = [np.random.default_rng(1).normal(size=(2, 3, 4)), np.arange(2.0),
            np.arange(24, dtype="int32").reshape(2, 3, 4)]
    want = gj.function([x, v, i], outs, mode="PY")(*vals)
    for mode in OP_TEST_MODES[1:]:
        f = gj.function([x, v, i], outs, mode=mode)
        if mode == "FAST_RUN":
            assert f.native.fallback_nodes == []
        for got, w in zip(f(*vals), want):
            assert got.dtype == w.dtype
            np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-12)


def test_no_trace_method():
    """x.trace is the Variable's source line (where it was created), so numpy's ndarray.trace is gt.trace only."""
    x = gt.dmatrix("x")
    assert not callable(x.trace) and x.diagonal(1).owner is not None


def test_top_level_and_linalg_names_differ():
    """linalg's diagonal and trace keep numpy.linalg's axes (the last two); the top-level names take numpy's."""
    x = gt.dtensor3("x")
    val = np.arange(24.0).reshape(2, 3, 4)
    got = gj.function([x], [gt.diagonal(x), gt.linalg.diagonal(x), gt.trace(x), gt.linalg.trace(x)], mode="PY")(val)
    for g, w in zip(got, [np.diagonal(val), np.linalg.diagonal(val), np.trace(val), np.linalg.trace(val)]):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_pad_empty_axis_raises(mode):
    x = gt.dmatrix("x")
    f = gj.function([x], [gt.pad(x, ((0, 0), (1, 0)), "reflect"), gt.pad(x, 1)], mode=mode)
    assert f(np.zeros((0, 2)))[0].shape == (0, 3)
    with pytest.raises(ValueError, match="empty axis 1"):
        f(np.zeros((2, 0)))


@pytest.mark.parametrize("call, error", [
    (lambda: gt.diagonal(gt.dvector()), ValueError),
    (lambda: gt.diagonal(gt.dmatrix(), 0, 1, -1), ValueError),
    (lambda: gt.diagonal(gt.dmatrix(), 0, 0, 2), np.exceptions.AxisError),
    (lambda: gt.diagonal(gt.dmatrix(), 1.0), TypeError),
    (lambda: gt.trace(gt.dvector()), ValueError),
    (lambda: gt.diag(gt.dtensor3()), ValueError),
    (lambda: gt.diag(gt.dscalar()), ValueError),
    (lambda: gt.pad(gt.dmatrix(), -1), ValueError),
    (lambda: gt.pad(gt.dmatrix(), 1.5), TypeError),
    (lambda: gt.pad(gt.dmatrix(), ((1, 2, 3),)), ValueError),
    (lambda: gt.pad(gt.dmatrix(), 1, "median"), ValueError),
    (lambda: gt.pad(gt.dmatrix(), 1, constant_values=gt.dvector()), ValueError),
], ids=["diagonal_vector", "diagonal_same_axes", "diagonal_axis", "diagonal_offset", "trace_vector", "diag_3d",
        "diag_0d", "pad_negative", "pad_float", "pad_shape", "pad_mode", "pad_vector_value"])
def test_bad_arguments(call, error):
    with pytest.raises(error):
        call()
