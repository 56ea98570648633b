"""Softmax, LogSoftmax, LogSumExp and the crossentropies against scipy.special."""

import numpy as np
import pytest
import scipy.special as sps

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.special import (LogSoftmax, LogSumExp, Softmax, TakeLabels, categorical_crossentropy,
                                     crossentropy_softmax, log_softmax, logsumexp, softmax, take_labels)
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

DTYPES = ("float64", "float32", "int64", "int32")
NINF = -np.inf
EDGE_ROWS = [[NINF, NINF, NINF], [0.0, NINF, 1.0], [np.inf, 0.0, 1.0], [1000.0, 1001.0, 1002.0],
             [-1000.0, -1001.0, -1002.0], [np.nan, 1.0, 2.0]]


def lse_ref(axis=None, keepdims=False):
    """scipy's logsumexp; for empty input (where scipy 1.17 fails with axis=None) log(0) = -inf."""
    def ref(x):
        if x.size == 0:
            with np.errstate(divide="ignore"):
                return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))
        return sps.logsumexp(x, axis=axis, keepdims=keepdims)
    return ref


def _empty_or(fn):
    """scipy's function; for empty input (where scipy raises: no maximum) the empty result numpy-style
    code gives (np.exp(x - x.max(axis, keepdims=True)) ... on a zero-length axis is empty)."""
    def ref(x, axis=None):
        if x.size == 0:
            return np.empty(x.shape, x.dtype if x.dtype.kind == "f" else "float64")
        return fn(x, axis=axis)
    return ref


sm_ref = _empty_or(sps.softmax)
lsm_ref = _empty_or(sps.log_softmax)


def labels_ref(p, y):
    """p[arange(n), y]; unlike numpy indexing, negative labels are errors, not wrapped."""
    if y.size and y.min() < 0:
        raise IndexError("negative label")
    return p[np.arange(p.shape[0]), y]


def xent_ref(p, y):
    return -np.log(labels_ref(p, y))


def xent_softmax_ref(x, y):
    return -labels_ref(lsm_ref(x, -1), y)


LABELS = arr((4,), "int64", low=0, high=2)
PROBS = arr((4, 3), low=0.05, high=1.0)

CASES = [
    Case("softmax_last", softmax, lambda x: sm_ref(x, axis=-1), [arr((3, 4))], DTYPES),
    Case("softmax_axis0", lambda x: softmax(x, 0), lambda x: sm_ref(x, 0), [arr((3, 4))],
         zero_len=4),
    Case("softmax_axis0_empty_axis", lambda x: softmax(x, 0), lambda x: sm_ref(x, 0),
         [arr((3, 4))], zero_len=3),
    Case("softmax_3d_mid", lambda x: softmax(x, 1), lambda x: sm_ref(x, 1), [arr((2, 3, 4))]),
    Case("softmax_all", lambda x: softmax(x, None), lambda x: sm_ref(x, None), [arr((3, 4))]),
    Case("softmax_vector", softmax, sm_ref, [arr((5,))]),
    Case("softmax_edges", softmax, lambda x: sm_ref(x, -1), [arr((6, 3), values=EDGE_ROWS)],
         zero_size=False),
    Case("log_softmax_last", log_softmax, lambda x: lsm_ref(x, -1), [arr((3, 4))], DTYPES),
    Case("log_softmax_axis0", lambda x: log_softmax(x, 0), lambda x: lsm_ref(x, 0),
         [arr((3, 4))]),
    Case("log_softmax_all", lambda x: log_softmax(x, None), lambda x: lsm_ref(x, None),
         [arr((2, 3, 4))]),
    Case("log_softmax_edges", log_softmax, lambda x: lsm_ref(x, -1),
         [arr((6, 3), values=EDGE_ROWS)], zero_size=False),
    Case("logsumexp_all", logsumexp, lse_ref(), [arr((3, 4))], DTYPES),
    Case("logsumexp_axis1", lambda x: logsumexp(x, 1), lse_ref(1), [arr((3, 4))], DTYPES),
    Case("logsumexp_axis1_empty_axis", lambda x: logsumexp(x, 1), lse_ref(1), [arr((3, 4))],
         zero_len=4),
    Case("logsumexp_axes_keepdims", lambda x: logsumexp(x, (0, 2), keepdims=True),
         lse_ref((0, 2), True), [arr((2, 3, 4))]),
    Case("logsumexp_neg_axis", lambda x: logsumexp(x, -1), lse_ref(-1), [arr((2, 3, 4))]),
    Case("logsumexp_scalar", logsumexp, lse_ref(), [arr(())]),
    Case("logsumexp_edges", lambda x: logsumexp(x, 1), lse_ref(1), [arr((6, 3), values=EDGE_ROWS)],
         zero_size=False),
    Case("take_labels", take_labels, labels_ref, [PROBS, LABELS], DTYPES),
    Case("xent_labels", categorical_crossentropy, xent_ref, [PROBS, LABELS]),
    Case("xent_labels_bad", categorical_crossentropy, xent_ref,
         [PROBS, arr((4,), "int64", values=[0, 5, 1, 2])], zero_size=False),
    Case("xent_labels_negative", categorical_crossentropy, xent_ref,
         [PROBS, arr((4,), "int64", values=[0, -1, 1, 2])], zero_size=False),
    Case("xent_onehot", categorical_crossentropy, lambda p, t: -np.sum(t * np.log(p), axis=-1),
         [PROBS, arr((4, 3), low=0, high=1)]),
    Case("xent_softmax_labels", crossentropy_softmax, xent_softmax_ref, [arr((4, 3)), LABELS]),
    Case("xent_softmax_onehot", crossentropy_softmax,
         lambda x, t: -np.sum(t * lsm_ref(x, axis=-1), axis=-1), [arr((4, 3)), arr((4, 3))]),
    Case("softmax_last_empty_axis", softmax, lambda x: sm_ref(x, -1), [arr((3, 4))], zero_len=4),
    Case("softmax_all_empty", lambda x: softmax(x, None), lambda x: sm_ref(x, None), [arr((2, 3))],
         zero_len=3),
    Case("softmax_3d_empty_mid_axis", lambda x: softmax(x, 1), lambda x: sm_ref(x, 1), [arr((2, 3, 4))],
         zero_len=3),
    Case("log_softmax_last_empty_axis", log_softmax, lambda x: lsm_ref(x, -1), [arr((3, 4))], DTYPES,
         zero_len=4),
    Case("log_softmax_axis0_empty_axis", lambda x: log_softmax(x, 0), lambda x: lsm_ref(x, 0),
         [arr((3, 4))], zero_len=3),
    Case("log_softmax_all_empty", lambda x: log_softmax(x, None), lambda x: lsm_ref(x, None),
         [arr((2, 3))], zero_len=3),
    Case("logsumexp_all_empty", logsumexp, lse_ref(), [arr((2, 3))], zero_len=3),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_special(case):
    check_case(case)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_large_inputs_stay_finite_and_exact(dtype):
    x = gt.matrix("x", dtype=dtype)
    f = gj.function([x], [softmax(x), log_softmax(x), logsumexp(x, axis=1)], mode="PY")
    big = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]], dtype=dtype)
    sm, lsm, lse = f(big)
    for value in (sm, lsm, lse):
        assert np.all(np.isfinite(value)) and value.dtype == dtype
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(lse, [1002 + np.log1p(np.exp(-1) + np.exp(-2)), -1000 + np.log(3)],
                               rtol=tol)
    np.testing.assert_allclose(sm[1], [1 / 3] * 3, rtol=tol)
    np.testing.assert_allclose(lsm[0], [-2, -1, 0] - np.log1p(np.exp(-1) + np.exp(-2)), rtol=tol)


def test_all_neg_inf_row():
    x = gt.dmatrix()
    lse = gj.function([x], logsumexp(x, 1), mode="PY")(np.full((2, 3), -np.inf))
    assert np.all(lse == -np.inf)


def test_static_shapes_and_dtypes():
    x = gt.tensor("int32", (2, 3, None))
    assert softmax(x).type == gt.TensorType("float64", (2, 3, None))
    assert logsumexp(x, 1).type.shape == (2, None)
    assert logsumexp(x, (0, 2), keepdims=True).type.shape == (1, 3, 1)
    assert logsumexp(gt.fmatrix()).type == gt.TensorType("float32", ())
    assert softmax(gt.fvector()).dtype == "float32"
    assert take_labels(gt.tensor("float64", (5, 3)), gt.lvector()).type.shape == (5,)
    assert gt.softmax is softmax and gt.math.logsumexp is logsumexp


def test_bad_arguments():
    with pytest.raises(np.exceptions.AxisError):
        softmax(gt.dmatrix(), 2)
    with pytest.raises(np.exceptions.AxisError):
        logsumexp(gt.dmatrix(), 3)
    with pytest.raises(TypeError, match="complex"):
        softmax(gt.zmatrix())
    with pytest.raises(TypeError, match="TakeLabels"):
        take_labels(gt.dmatrix(), gt.dvector())
    with pytest.raises(ValueError, match="TakeLabels"):
        take_labels(gt.tensor("float64", (3, 2)), gt.tensor("int64", (4,)))
    with pytest.raises(TypeError):
        categorical_crossentropy(gt.dmatrix(), gt.ltensor3())


def test_runtime_label_count_mismatch():
    p, y = gt.dmatrix(), gt.lvector()
    f = gj.function([p, y], take_labels(p, y), mode="PY")
    with pytest.raises(ValueError, match="3 rows but 2 labels"):
        f(np.ones((3, 2)), np.zeros(2, "int64"))


INFER = [
    (softmax, [arr((3, 4))]),
    (lambda x: softmax(x, None), [arr((3, 4))]),
    (log_softmax, [arr((2, 3, 4))]),
    (logsumexp, [arr((3, 4))]),
    (lambda x: logsumexp(x, 1, keepdims=True), [arr((3, 4))]),
    (lambda x: logsumexp(x, (0, 2)), [arr((2, 3, 4))]),
    (take_labels, [PROBS, LABELS]),
]


@pytest.mark.parametrize("build, inputs", INFER)
def test_infer_shape(build, inputs):
    check_infer_shape(build, inputs)


@pytest.mark.parametrize("op, make_inputs", [
    (Softmax(-1), lambda: [gt.dmatrix()]),
    (Softmax(None), lambda: [gt.dmatrix()]),
    (LogSoftmax(0), lambda: [gt.fmatrix()]),
    (LogSumExp((1,), True), lambda: [gt.dtensor3()]),
    (LogSumExp(None, False), lambda: [gt.dvector()]),
    (TakeLabels(), lambda: [gt.dmatrix(), gt.lvector()]),
], ids=lambda v: str(v) if hasattr(v, "make_node") else None)  # no addresses in ids (xdist)
def test_op_contract(op, make_inputs):
    check_op_contract(op, make_inputs)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
@pytest.mark.parametrize("shape, axis", [((3, 0), 1), ((3, 0), -1), ((0, 4), 0), ((0, 0), None), ((2, 0, 3), 1)])
def test_zero_length_axis_is_empty_not_an_error(mode, shape, axis):
    # numpy-style code: np.exp(x - x.max(axis, keepdims=True)) ... on a (3, 0) array along axis 1 is (3, 0)
    x = gt.TensorType("float64", (None,) * len(shape))("x")
    v = np.zeros(shape)
    outs = [softmax(x, axis), log_softmax(x, axis), logsumexp(x, axis),
            gj.grad((softmax(x, axis) * 2).sum(), x), gj.grad((log_softmax(x, axis) * 2).sum(), x),
            gj.grad(logsumexp(x, axis).sum(), x)]
    sm, lsm, lse, g_sm, g_lsm, g_lse = gj.function([x], outs, mode=mode)(v)
    for out in (sm, lsm, g_sm, g_lsm, g_lse):
        assert out.shape == shape and out.dtype == np.float64
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(lse, np.log(np.sum(np.exp(v), axis=axis)))
