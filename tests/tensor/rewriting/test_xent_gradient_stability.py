"""Issue 32: the gradient of the tutorial's hand-written cross-entropy is stable at extreme logits.

``p_1 = 1 / (1 + exp(-dot(x, w) - b))`` and ``xent = -y*log(p_1) - (1-y)*log(1-p_1)`` exactly as Theano's
tutorial writes them: the forward became softplus, but the gradient divided by ``sigmoid(-z)`` built as
``sigmoid(-(a + b))`` while the factor it should cancel was ``sigmoid(-a - b)``; the product
``g / sigmoid(-z) * ... * sigmoid(-z)`` was inf * 0 = NaN once sigmoid(-z) underflowed (|z| > 88 in float32,
> 745 in float64), in every mode. Each case is checked against the closed form d xent / dz = sigmoid(z) - y.
"""

import numpy as np
import pytest
import scipy.special as sps

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.elemwise import DimShuffle

MODES = ["PY", "FAST_COMPILE", "FAST_RUN"]
RTOL = {"float64": 1e-12, "float32": 2e-5}
TINY = {"float64": 1e-300, "float32": 1e-37}
EXTREME = {"float64": [-1e4, -1000.0, -800.0, -746.0, -40.0, -1.0, 0.0, 1.0, 40.0, 746.0, 800.0, 1000.0, 1e4],
           "float32": [-1000.0, -200.0, -90.0, -40.0, -1.0, 0.0, 1.0, 40.0, 90.0, 200.0, 1000.0]}


def dxent_dz(z, y):
    """sigmoid(z) - y without cancellation: -sigmoid(-z) where y is 1."""
    z = np.asarray(z, dtype="float64")
    return np.where(y == 1, -sps.expit(-z), sps.expit(z)) + np.where((y != 0) & (y != 1), sps.expit(z) - y, 0)


def dimshuffled(value, dtype, ndim=1):
    """A Python number as Elemwise may broadcast it: DimShuffle{x}(0-d constant) (the seed's graph shape)."""
    c = gt.constant(np.asarray(value, dtype=dtype))
    return DimShuffle(0, ("x",) * ndim)(c)


# the logit's spellings: the tutorial's -a - b, -(a + b), and a Python 1 broadcast by a DimShuffle
PROBABILITIES = {
    "tutorial": lambda a, b, d: 1 / (1 + gt.exp(-a - b)),
    "negated-sum": lambda a, b, d: 1 / (1 + gt.exp(-(a + b))),
    "sigmoid": lambda a, b, d: gt.sigmoid(a + b),
    "dimshuffled-ones": lambda a, b, d: dimshuffled(1, d) / (dimshuffled(1, d) + gt.exp(-a - b)),
}


def xent(p_1, y, d):
    one = dimshuffled(1, d)
    return -y * gt.log(p_1) - (one - y) * gt.log(one - p_1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("form", sorted(PROBABILITIES))
def test_the_tutorial_cross_entropy_gradient_matches_the_closed_form_at_extreme_logits(form, dtype, mode):
    a, y = gt.vector("a", dtype=dtype), gt.vector("y", dtype=dtype)
    b = gt.scalar("b", dtype=dtype)
    p_1 = PROBABILITIES[form](a, b, dtype)
    cost = xent(p_1, y, dtype)
    ga, gb = gj.grad(cost.sum(), [a, b])
    f = gj.function([a, b, y], [cost, ga, gb], mode=mode)
    z = np.array(EXTREME[dtype], dtype=dtype)
    for shift in (0.0, 3.0):                  # b = 3: the logit a + b with a = z - 3 (exact at these values)
        for t in ((np.arange(z.size) % 2), (np.arange(z.size) + 1) % 2):
            t = t.astype(dtype)
            c, g, g_b = f(z - np.asarray(shift, dtype), np.asarray(shift, dtype), t)
            assert np.all(np.isfinite(c)) and np.all(np.isfinite(g)) and np.isfinite(g_b), (c, g, g_b)
            z64 = (z - np.asarray(shift, dtype)).astype("float64") + shift
            want = dxent_dz(z64, t)
            np.testing.assert_allclose(g, want, rtol=RTOL[dtype], atol=TINY[dtype])
            np.testing.assert_allclose(g_b, want.sum(), rtol=RTOL[dtype], atol=TINY[dtype])
            want_c = t * np.logaddexp(0, -z64) + (1 - t) * np.logaddexp(0, z64)
            np.testing.assert_allclose(c, want_c, rtol=RTOL[dtype], atol=TINY[dtype])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype, scale", [("float32", 1.0), ("float32", 10.0), ("float64", 10.0)])
def test_the_tutorial_gradients_are_finite_and_right_on_its_data_and_ten_times_larger(dtype, scale, mode):
    """The tutorial's own model and data (float32: the exercise; x10: |z| up to ~1000)."""
    rng = np.random.default_rng(0)
    N, feats = 400, 784
    X = (rng.standard_normal((N, feats)) * scale).astype(dtype)
    Y = rng.integers(0, 2, size=N).astype(dtype)
    w0 = rng.standard_normal(feats).astype(dtype)
    x, y = gt.matrix("x", dtype=dtype), gt.vector("y", dtype=dtype)
    w = gj.shared(w0, name="w")
    b = gj.shared(np.asarray(0.0, dtype=dtype), name="b")
    p_1 = 1 / (1 + gt.exp(-gt.dot(x, w) - b))
    xent_ = -y * gt.log(p_1) - (1 - y) * gt.log(1 - p_1)
    cost = xent_.mean() + 0.01 * (w ** 2).sum()
    gw, gb = gj.grad(cost, [w, b])
    got_w, got_b = gj.function([x, y], [gw, gb], mode=mode)(X, Y)
    z = X.astype("float64") @ w0.astype("float64")
    dz = dxent_dz(z, Y)
    want_w = X.T.astype("float64") @ dz / N + 0.02 * w0
    assert np.abs(z).max() > (745 if dtype == "float64" else 88)
    np.testing.assert_allclose(got_w, want_w, rtol=RTOL[dtype] * 10, atol=1e-5 * scale if dtype == "float32"
                               else 1e-12 * scale)
    np.testing.assert_allclose(got_b, dz.mean(), rtol=RTOL[dtype] * 10, atol=1e-5 if dtype == "float32" else 1e-13)
