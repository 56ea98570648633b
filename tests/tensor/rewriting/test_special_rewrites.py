"""Hand-written softmax / logsumexp recognised as Softmax / LogSumExp (tensor/rewriting/special.py).

Each form: the op it becomes, scipy's numbers in PY and FAST_RUN, and, for large inputs, the unstable
graph run without rewrites (PY linker) overflowing to inf/nan where the rewritten one does not.
"""

import warnings

import numpy as np
import pytest
import scipy.special as sps

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.mode import Mode

PY = Mode(linker="py", rewriter="fast_run")
RAW = Mode(linker="py", rewriter=None)
x, v, t = gt.dmatrix("x"), gt.dvector("v"), gt.dtensor3("t")
BIG = np.array([[1000.0, 999.0, 0.0], [-5.0, 3.0, 800.0]])
SMALL = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]])


def names(f):
    return [str(n.op) for n in f.maker.fgraph.toposort()]


def raw(inputs, out, vals):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gj.function(inputs, out, mode=RAW)(*vals)


def _max_sub(a, axis):
    return a - gt.max(a, axis=axis, keepdims=True)


def _sm(z, axis, keepdims=True):
    e = gt.exp(z)
    return e / gt.sum(e, axis=axis, keepdims=keepdims)


SOFTMAX = [
    ("last_axis", lambda: _sm(x, -1), 1, "Softmax{axis=1}"),
    ("axis0", lambda: _sm(x, 0), 0, "Softmax{axis=0}"),
    ("all_keepdims", lambda: _sm(x, None), None, "Softmax{axis=None}"),
    ("all_0d_sum", lambda: _sm(x, None, keepdims=False), None, "Softmax{axis=None}"),
    ("max_subtracted", lambda: _sm(_max_sub(x, 1), 1), 1, "Softmax{axis=1}"),
    ("max_over_all_subtracted", lambda: _sm(_max_sub(x, None), 1), 1, "Softmax{axis=1}"),
]


@pytest.mark.parametrize("name, build, axis, op", SOFTMAX, ids=[s[0] for s in SOFTMAX])
def test_softmax_recognised(name, build, axis, op):
    out = build()
    for mode in (PY, "FAST_RUN"):
        f = gj.function([x], out, mode=mode)
        assert names(f) == [op]
        np.testing.assert_allclose(f(SMALL), sps.softmax(SMALL, axis=axis), rtol=1e-12)
        got = f(BIG)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, sps.softmax(BIG, axis=axis), rtol=1e-12)
    if "max" not in name:   # the plain form overflows without the rewrite
        assert not np.all(np.isfinite(raw([x], out, [BIG])))


def test_vector_and_float32():
    f = gj.function([v], _sm(v, None, keepdims=False), mode=PY)
    assert names(f) == ["Softmax{axis=0}"]
    big = np.array([710.0, 0.0, 709.0])
    np.testing.assert_allclose(f(big), sps.softmax(big), rtol=1e-12)
    assert np.isnan(raw([v], _sm(v, None, keepdims=False), [big])).any()
    fx = gt.fmatrix("fx")
    g = gj.function([fx], _sm(fx, 1), mode="FAST_RUN")
    got = g(BIG.astype("float32"))
    assert names(g) == ["Softmax{axis=1}"] and got.dtype == np.float32
    np.testing.assert_allclose(got, sps.softmax(BIG, axis=1), rtol=1e-5, atol=1e-7)


def test_log_of_handwritten_softmax_becomes_log_softmax():
    out = gt.log(_sm(x, 1))
    f = gj.function([x], out, mode=PY)
    assert names(f) == ["LogSoftmax{axis=1}"]
    np.testing.assert_allclose(f(BIG), sps.log_softmax(BIG, axis=1), rtol=1e-12)
    assert not np.all(np.isfinite(raw([x], out, [BIG])))


@pytest.mark.parametrize("build, vals", [
    (lambda: gt.exp(x) / gt.sum(gt.exp(x), axis=1), [np.ones((3, 3))]),               # broadcasts wrongly
    (lambda: gt.exp(x) / gt.sum(gt.exp(2 * x), axis=1, keepdims=True), [SMALL]),      # another sum
    (lambda: gt.exp(t) / gt.sum(gt.exp(t), axis=(0, 1), keepdims=True), [np.ones((2, 3, 4))]),  # two of 3
    (lambda: gt.exp(x) / gt.sum(gt.exp(x), axis=1, keepdims=True, acc_dtype="float32"), [SMALL]),
    (lambda: gt.exp(x) / gt.prod(gt.exp(x), axis=1, keepdims=True), [SMALL]),
], ids=["no_keepdims", "other_sum", "two_axes_of_three", "acc_dtype", "prod"])
def test_softmax_left_alone(build, vals):
    out = build()
    inputs = [t] if vals[0].ndim == 3 else [x]
    f = gj.function(inputs, out, mode=PY)
    assert not any("Softmax" in n for n in names(f))
    np.testing.assert_allclose(f(*vals), raw(inputs, out, vals), rtol=1e-6)


def test_shift_along_the_wrong_axis_is_kept():
    out = _sm(_max_sub(x, 0), 1)      # the shift varies along the softmax axis: softmax of the shifted x
    f = gj.function([x], out, mode=PY)
    assert "Softmax{axis=1}" in names(f) and any("Max" in n for n in names(f))
    np.testing.assert_allclose(f(SMALL), sps.softmax(SMALL - SMALL.max(0), axis=1), rtol=1e-12)


def test_softmax_rewrite_can_be_excluded():
    f = gj.function([x], _sm(x, 1), mode=PY.excluding("local_softmax_from_exp"))
    assert not any("Softmax" in n for n in names(f))


@pytest.mark.parametrize("axis, keep_axes", [(1, (1,)), (0, (0,)), (None, None)])
def test_logsumexp_through_keepdims(axis, keep_axes):
    out = gt.log(gt.sum(gt.exp(x), axis=axis, keepdims=True))
    want = sps.logsumexp(BIG, axis=axis, keepdims=True)
    for mode in (PY, "FAST_RUN"):
        f = gj.function([x], out, mode=mode)
        assert names(f) == [f"LogSumExp{{axis={keep_axes}, keepdims=True}}"]
        got = f(BIG)
        assert got.shape == want.shape and np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not np.all(np.isfinite(raw([x], out, [BIG])))


def test_logsumexp_left_alone():
    f = gj.function([x], gt.log(gt.sum(gt.exp(x) + 1, axis=1, keepdims=True)), mode=PY)
    assert not any("LogSumExp" in n for n in names(f))
    g = gj.function([x], gt.log(gt.max(gt.exp(x), axis=1, keepdims=True)), mode=PY)
    assert not any("LogSumExp" in n for n in names(g))
    h = gj.function([x], gt.log(gt.sum(gt.exp(x), axis=1, keepdims=True)),
                    mode=PY.excluding("local_log_sum_exp_keepdims"))
    assert not any("LogSumExp" in n for n in names(h))


# --- crossentropy forms: log_softmax, gradients finite at |z| = 700 (float64) / 80 (float32) -----------
MODES = ["PY", "FAST_COMPILE", "FAST_RUN"]
LIMIT = {"float64": 700.0, "float32": 80.0}


def _extreme(dtype):
    lim = LIMIT[dtype]
    return np.array([[lim, -lim, 0.0], [-lim, lim, 1.0], [0.0, 1.0, 2.0], [-lim, -lim, lim]], dtype=dtype)


_ONE_HOT = np.eye(3)[[1, 0, 2, 0]]     # the label where the softmax underflows to 0, too
_LABELS = np.array([1, 0, 2, 0])

CROSSENTROPIES = [
    ("one_hot_sum", lambda z, y, lab: -(y * gt.log(gt.softmax(z))).sum(axis=-1), "y"),
    ("one_hot_sum_axis1_mean", lambda z, y, lab: -(y * gt.log(gt.softmax(z, axis=1))).sum(axis=1).mean(), "y"),
    ("handwritten_softmax", lambda z, y, lab: -(y * gt.log(_sm(z, 1))).sum(axis=1), "y"),
    ("categorical_one_hot", lambda z, y, lab: gt.categorical_crossentropy(gt.softmax(z), y), "y"),
    ("categorical_labels", lambda z, y, lab: gt.categorical_crossentropy(gt.softmax(z), lab), "lab"),
]


@pytest.mark.parametrize("name, build, target", CROSSENTROPIES, ids=[c[0] for c in CROSSENTROPIES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", MODES)
def test_crossentropy_of_softmax_is_stable(name, build, target, dtype, mode):
    """The value is -log_softmax(z) at the label, the gradient softmax(z) - one_hot, at |z| up to the limit."""
    z, y, lab = gt.matrix("z", dtype=dtype), gt.matrix("y", dtype=dtype), gt.lvector("lab")
    cost = build(z, y, lab)
    grad = gj.grad(cost.sum(), z)
    inputs, tval = ([z, y], _ONE_HOT.astype(dtype)) if target == "y" else ([z, lab], _LABELS)
    f = gj.function(inputs, [cost, grad], mode=mode)
    assert any("LogSoftmax" in n for n in names(f)) and not any("Elemwise{log}" in n for n in names(f))
    zv = _extreme(dtype)
    got, g = f(zv, tval)
    z64 = zv.astype("float64")
    each = -(sps.log_softmax(z64, axis=1) * _ONE_HOT).sum(axis=1)
    np.testing.assert_allclose(got, each.mean() if got.ndim == 0 else each, rtol=1e-6 if dtype == "float32" else 1e-12)
    want = (sps.softmax(z64, axis=1) - _ONE_HOT) / (len(zv) if "mean" in name else 1)
    assert g.dtype == np.dtype(dtype) and np.all(np.isfinite(g))
    np.testing.assert_allclose(g, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=np.finfo(dtype).tiny)


def test_crossentropy_gradient_unstable_without_stabilize():
    z, y = gt.dmatrix("z"), gt.dmatrix("y")
    grad = gj.grad(-(y * gt.log(gt.softmax(z))).sum(), z)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mode = gj.get_mode("FAST_RUN").excluding("stabilize")
        g = gj.function([z, y], grad, mode=mode)(_extreme("float64"), _ONE_HOT)
    assert not np.all(np.isfinite(g))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", MODES)
def test_log_softmax_and_logsumexp_gradients_at_extremes(dtype, mode):
    z = gt.matrix("z", dtype=dtype)
    zv = _extreme(dtype)
    z64 = zv.astype("float64")
    w = np.arange(12.0).reshape(4, 3).astype(dtype)
    for out, want in ((gt.log_softmax(z) * w, sps.softmax(z64, axis=1) * -w.sum(axis=1, keepdims=True) + w),
                      (gt.log(gt.softmax(z)) * w, sps.softmax(z64, axis=1) * -w.sum(axis=1, keepdims=True) + w),
                      (gt.logsumexp(z, axis=1), sps.softmax(z64, axis=1))):
        g = gj.function([z], gj.grad(out.sum(), z), mode=mode)(zv)
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=np.finfo(dtype).tiny)


@pytest.mark.parametrize("mode", MODES)
def test_deep_learning_tutorial_negative_log_likelihood(mode):
    """-mean(log(softmax(z))[arange(n), y]) (Theano's deep learning tutorial): log_softmax forward, the
    gradient (softmax(z) - one_hot) / n finite where softmax underflows."""
    z, lab = gt.dmatrix("z"), gt.lvector("lab")
    cost = -gt.mean(gt.log(gt.softmax(z))[gt.arange(lab.shape[0]), lab])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # AdvancedSubtensor runs its perform under the LLVM linker
        f = gj.function([z, lab], [cost, gj.grad(cost, z)], mode=mode)
    assert any("LogSoftmax" in n for n in names(f)) and not any("Elemwise{log}" in n for n in names(f))
    zv = _extreme("float64")
    c, g = f(zv, _LABELS)
    assert c == pytest.approx(-(sps.log_softmax(zv, axis=1) * _ONE_HOT).sum() / 4, rel=1e-12)
    np.testing.assert_allclose(g, (sps.softmax(zv, axis=1) - _ONE_HOT) / 4, rtol=1e-12, atol=1e-300)
