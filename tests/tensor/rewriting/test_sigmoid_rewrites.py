"""The logistic function recognised as sigmoid, its logs as softplus, stable gradients (tensor/rewriting/sigmoid.py).

Each form: the ops of the rewritten graph, scipy's values in the stable range, and values and gradients at
|z| = 700 (float64) / 80 (float32) equal to the analytic ones, in PY, FAST_COMPILE and FAST_RUN; with
``excluding("stabilize")`` the graph is left alone (and the gradient is NaN again, so the tests can fail).
"""

import warnings

import numpy as np
import pytest
import scipy.special as sps

import graphjit as gj
import graphjit.tensor as gt

MODES = ["PY", "FAST_COMPILE", "FAST_RUN"]
LIMIT = {"float64": 700.0, "float32": 80.0}
RTOL = {"float64": 1e-12, "float32": 2e-6}


def ops(f):
    return [str(n.op).replace(",inplace", "") for n in f.maker.fgraph.toposort()]


def values(dtype):
    lim = LIMIT[dtype]
    return np.array([-lim, -40.0, -3.0, -0.5, 0.0, 0.5, 3.0, 40.0, lim], dtype=dtype)


def unstabilized(inputs, outputs, vals, mode="FAST_RUN"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gj.function(inputs, outputs, mode=gj.get_mode(mode).excluding("stabilize"))(*vals)


def one(dtype="float64"):
    return np.array(1, dtype=dtype)


# name, build(z), the ops it becomes, sigmoid(sign * z)
SIGMOIDS = [
    ("one_over_one_plus_exp_neg", lambda z: 1 / (1 + gt.exp(-z)), ["Elemwise{sigmoid}"], 1),
    ("exp_plus_one", lambda z: 1 / (gt.exp(-z) + 1), ["Elemwise{sigmoid}"], 1),
    ("exp_over_one_plus_exp", lambda z: gt.exp(z) / (1 + gt.exp(z)), ["Elemwise{sigmoid}"], 1),
    ("exp_over_exp_plus_one", lambda z: gt.exp(z) / (gt.exp(z) + 1), ["Elemwise{sigmoid}"], 1),
    ("one_over_one_plus_exp", lambda z: 1 / (1 + gt.exp(z)), ["Elemwise{neg}", "Elemwise{sigmoid}"], -1),
    ("pow_minus_one", lambda z: (1 + gt.exp(-z)) ** -1, ["Elemwise{sigmoid}"], 1),
    ("reciprocal", lambda z: gt.reciprocal(1 + gt.exp(-z)), ["Elemwise{sigmoid}"], 1),
    ("reciprocal_r", lambda z: gt.reciprocal(gt.exp(-z) + 1), ["Elemwise{sigmoid}"], 1),
    ("one_minus_sigmoid", lambda z: 1 - gt.sigmoid(z), ["Elemwise{neg}", "Elemwise{sigmoid}"], -1),
    ("one_plus_neg_sigmoid", lambda z: 1 + (-gt.sigmoid(z)), ["Elemwise{neg}", "Elemwise{sigmoid}"], -1),
    ("one_minus_handwritten", lambda z: 1 - 1 / (1 + gt.exp(-z)), ["Elemwise{neg}", "Elemwise{sigmoid}"], -1),
    ("float32_one", lambda z: one("float32") / (one("float32") + gt.exp(-z)), ["Elemwise{sigmoid}"], 1),
    ("int8_one", lambda z: one("int8") / (one("int8") + gt.exp(-z)), ["Elemwise{sigmoid}"], 1),
]


@pytest.mark.parametrize("name, build, want, sign", SIGMOIDS, ids=[s[0] for s in SIGMOIDS])
@pytest.mark.parametrize("mode", MODES)
def test_sigmoid_recognised(name, build, want, sign, mode):
    z = gt.dvector("z")
    out = build(z)
    f = gj.function([z], out, mode=mode)
    assert ops(f) == want
    v = values("float64")
    np.testing.assert_allclose(f(v), sps.expit(sign * v), rtol=1e-13, atol=0)
    assert ops(gj.function([z], out, mode=gj.get_mode(mode).excluding("stabilize"))) != want


def test_tutorial_probability_is_sigmoid_of_the_logit():
    """1 / (1 + exp(-dot(x, w) - b)) -> sigmoid(dot(x, w) + b): the double negation is not built."""
    x, w, b = gt.dmatrix("x"), gt.dvector("w"), gt.dscalar("b")
    f = gj.function([x, w, b], 1 / (1 + gt.exp(-gt.dot(x, w) - b)), mode="PY")
    sig = [n for n in f.maker.fgraph.toposort() if "sigmoid" in str(n.op)]
    assert len(sig) == 1 and "neg" not in str(sig[0].inputs[0].owner.op)
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((5, 784)), rng.standard_normal(784)
    np.testing.assert_allclose(f(xv, wv, 0.5), sps.expit(xv @ wv + 0.5), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_constants_of_other_dtype_compute_in_the_output_dtype(dtype):
    """A float64 1 with float32 z gives float64, computed in float64 (z cast before sigmoid)."""
    z = gt.vector("z", dtype=dtype)
    out = gt.constant(np.ones(1)) / (1 + gt.exp(-z))
    f = gj.function([z], out, mode="FAST_RUN")
    assert "Elemwise{sigmoid}" in ops(f) and f.maker.fgraph.outputs[0].dtype == "float64"
    v = values(dtype)
    np.testing.assert_allclose(f(v), sps.expit(v.astype("float64")), rtol=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_broadcastable_constants(mode):
    """ones((1, 1)) / (ones(1) + exp(-z)) for a matrix z, and (1 + exp(-z)) ** float32(-1)."""
    z = gt.dmatrix("z")
    v = values("float64").reshape(3, 3)
    for out in (gt.constant(np.ones((1, 1))) / (gt.constant(np.ones(1)) + gt.exp(-z)),
                (gt.constant(np.ones((1, 1), "float32")) + gt.exp(-z)) ** np.float32(-1)):
        f = gj.function([z], out, mode=mode)
        assert ops(f) == ["Elemwise{sigmoid}"]
        np.testing.assert_allclose(f(v), sps.expit(v), rtol=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_a_constant_that_broadcasts_the_result_is_kept(mode):
    """ones(3) / (ones(3) + exp(-z)) with z of length 1 at run time has length 3."""
    z = gt.dvector("z")
    three = gt.constant(np.ones(3))
    f = gj.function([z], three / (three + gt.exp(-z)), mode=mode)
    got = f(np.array([0.5]))
    np.testing.assert_allclose(got, np.full(3, sps.expit(0.5)), rtol=1e-13)


# name, build(z), ops (in order), value(z), d value / dz
LOGS = [
    ("log_sigmoid", lambda z: gt.log(gt.sigmoid(z)), ["Elemwise{neg}", "Elemwise{softplus}", "Elemwise{neg}"],
     lambda v: -np.logaddexp(0, -v), lambda v: sps.expit(-v)),
    ("log_one_minus_sigmoid", lambda z: gt.log(1 - gt.sigmoid(z)), ["Elemwise{softplus}", "Elemwise{neg}"],
     lambda v: -np.logaddexp(0, v), lambda v: -sps.expit(v)),
    ("log1p_neg_sigmoid", lambda z: gt.log1p(-gt.sigmoid(z)), ["Elemwise{softplus}", "Elemwise{neg}"],
     lambda v: -np.logaddexp(0, v), lambda v: -sps.expit(v)),
    ("log_handwritten", lambda z: gt.log(1 / (1 + gt.exp(-z))),
     ["Elemwise{neg}", "Elemwise{softplus}", "Elemwise{neg}"],
     lambda v: -np.logaddexp(0, -v), lambda v: sps.expit(-v)),
    ("log_one_minus_handwritten", lambda z: gt.log(1 - 1 / (1 + gt.exp(-z))),
     ["Elemwise{softplus}", "Elemwise{neg}"], lambda v: -np.logaddexp(0, v), lambda v: -sps.expit(v)),
    ("log_exp_over", lambda z: gt.log(gt.exp(z) / (1 + gt.exp(z))),
     ["Elemwise{neg}", "Elemwise{softplus}", "Elemwise{neg}"],
     lambda v: -np.logaddexp(0, -v), lambda v: sps.expit(-v)),
    ("softplus", lambda z: gt.softplus(z), ["Elemwise{softplus}"], lambda v: np.logaddexp(0, v), sps.expit),
    ("sigmoid", lambda z: gt.sigmoid(z), ["Elemwise{sigmoid}"], sps.expit,
     lambda v: sps.expit(v) * sps.expit(-v)),
]


@pytest.mark.parametrize("name, build, want, value, deriv", LOGS, ids=[s[0] for s in LOGS])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", MODES)
def test_logs_of_sigmoid_and_their_gradients(name, build, want, value, deriv, dtype, mode):
    z = gt.vector("z", dtype=dtype)
    out = build(z)
    assert ops(gj.function([z], out, mode=mode)) == want
    f = gj.function([z], [out, gj.grad(out.sum(), z)], mode=mode)
    v = values(dtype)
    got, g = f(v)
    exact = v.astype("float64")
    assert got.dtype == g.dtype == np.dtype(dtype)
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(g))
    np.testing.assert_allclose(got, value(exact), rtol=RTOL[dtype], atol=0)
    # float32's sigmoid'(80) = 1.8e-35 is a normal number; below that only the exponent range matters
    np.testing.assert_allclose(g, deriv(exact), rtol=RTOL[dtype], atol=1e-300 if dtype == "float64" else 1e-44)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_grad_of_log_one_minus_sigmoid_is_minus_one_for_large_x(dtype):
    """The issue's repro: NaN for x >= 17 (float32) / 37 (float64) before; -sigmoid(x) now."""
    x = gt.scalar("x", dtype=dtype)
    cost = gt.log(1 - gt.sigmoid(x))
    for mode in MODES:
        g = gj.function([x], gj.grad(cost, x), mode=mode)
        for xv in (17.0, 37.0, 40.0, LIMIT[dtype]):
            assert float(g(np.asarray(xv, dtype))) == pytest.approx(-1.0, rel=1e-6)
    raw = unstabilized([x], [gj.grad(cost, x)], [np.asarray(40.0, dtype)])
    assert not np.isfinite(raw[0])


@pytest.mark.parametrize("mode", MODES)
def test_excluding_stabilize_leaves_the_graph_alone(mode):
    z = gt.dvector("z")
    out = gt.log(1 - 1 / (1 + gt.exp(-z)))
    f = gj.function([z], out, mode=gj.get_mode(mode).excluding("stabilize"))
    assert "Elemwise{sigmoid}" not in ops(f) and "Elemwise{softplus}" not in ops(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isinf(f(np.array([800.0]))[0])


@pytest.mark.parametrize("mode", MODES)
def test_binary_crossentropy_with_sigmoid(mode):
    """-(y log sigmoid(z) + (1-y) log(1 - sigmoid(z))): softplus forms, gradient sigmoid(z) - y anywhere."""
    z, y = gt.dvector("z"), gt.dvector("y")
    for p in (gt.sigmoid(z), 1 / (1 + gt.exp(-z))):
        cost = gt.binary_crossentropy(p, y)
        f = gj.function([z, y], [cost, gj.grad(cost.sum(), z)], mode=mode)
        assert not any("log" in o for o in ops(f))
        v = values("float64")
        t = (np.arange(v.size) % 2).astype("float64")
        got, g = f(v, t)
        want = t * np.logaddexp(0, -v) + (1 - t) * np.logaddexp(0, v)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        want_g = np.where(t == 1, -sps.expit(-v), sps.expit(v))   # sigmoid(v) - t without cancellation
        np.testing.assert_allclose(g, want_g, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("mode", MODES)
def test_cancelled_factor_keeps_the_broadcast_shape(mode):
    """(a / sigmoid(m)) * sigmoid(m) -> a, broadcast to m's shape when a may be smaller (a is 3 x 1 here)."""
    a, m = gt.dmatrix("a"), gt.dmatrix("m")
    s = gt.sigmoid(m)
    f = gj.function([a, m], a / s * s, mode=mode)
    assert "Elemwise{true_div}" not in ops(f)
    av, mv = np.arange(3.0).reshape(3, 1), np.full((3, 4), -800.0)
    np.testing.assert_array_equal(f(av, mv), np.broadcast_to(av, (3, 4)))


def test_sigmoid_product_identities():
    """exp(t) * sigmoid(-t) -> sigmoid(t); sigmoid(t) / exp(t) -> sigmoid(-t)."""
    t = gt.dvector("t")
    v = values("float64")
    for out, want in ((gt.exp(t) * gt.sigmoid(-t), sps.expit(v)), (gt.sigmoid(t) / gt.exp(t), sps.expit(-v))):
        f = gj.function([t], out, mode="FAST_RUN")
        assert "Elemwise{exp}" not in ops(f)
        np.testing.assert_allclose(f(v), want, rtol=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_hand_built_graph_of_plain_variables(mode):
    """Apply nodes built by hand with plain Variables (the seed's long example): the rewrites leave what
    they cannot rebuild alone instead of raising, and x * 1 still drops the 1 (cannot_broadcast, keep_type)."""
    from graphjit.graph.basic import Apply, Variable
    from graphjit.tensor.type import TensorType
    vec = TensorType("float64", (None,))
    x, e, d, q, m = (Variable(type=vec, name=n) for n in "xedqm")
    one = gt.constant(np.ones(1))
    Apply(op=gt.exp, inputs=[x], outputs=[e])
    Apply(op=gt.add, inputs=[one, e], outputs=[d])
    Apply(op=gt.true_div, inputs=[one, d], outputs=[q])
    Apply(op=gt.mul, inputs=[x, one], outputs=[m])
    f = gj.function([x], [q, m], mode=mode)
    v = np.array([0.0, 8.0, -8.0])
    got_q, got_m = f(v)
    np.testing.assert_allclose(got_q, sps.expit(-v), rtol=1e-13)
    np.testing.assert_array_equal(got_m, v)
