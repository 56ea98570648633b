"""Gradients through scan (BPTT): verify_grad on every form, truncate_gradient, Lop/Rop, Jacobian/Hessian by scan."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.scan_module.op import Scan
from tests.op_check import OP_TEST_MODES

RNG = np.random.default_rng(7)


def _rnn(W, X, h0):
    out, _ = gj.scan(lambda x, h, W: gt.tanh(gt.dot(W, h) + x), sequences=X, outputs_info=h0, non_sequences=W)
    return out


FORMS = {
    "sit_sot (rnn)": (_rnn, [RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(4, 3)), RNG.normal(size=3)]),
    "mit_sot taps[-2,-1]": (lambda init, X: gj.scan(lambda x, a, b: gt.sin(a) * b + x, sequences=X,
                                                    outputs_info=dict(initial=init, taps=[-2, -1]))[0],
                            [RNG.normal(size=(2, 2)), RNG.normal(size=(4, 2))]),
    "nit_sot (polynomial)": (lambda c, z: gj.scan(lambda ci, p, z: ci * z ** p,
                                                  sequences=[c, gt.arange(c.shape[0])], non_sequences=z)[0],
                             [RNG.normal(size=5), np.array(0.7)]),
    "go_backwards": (lambda X, a0: gj.scan(lambda x, a: gt.tanh(a * x), sequences=X, outputs_info=a0,
                                           go_backwards=True)[0], [RNG.normal(size=(4, 2)), RNG.normal(size=2)]),
    "sequence taps": (lambda X: gj.scan(lambda a, b: a * b, sequences=dict(input=X, taps=[-1, 1]))[0],
                      [RNG.normal(size=(5, 2))]),
    "map": (lambda X, y: gj.map(lambda x, y: gt.exp(x) * y, sequences=X, non_sequences=y)[0],
            [RNG.normal(size=(3, 2)), RNG.normal(size=2)]),
    "reduce (last state)": (lambda X, a0: gj.reduce(lambda x, a: a * x + 1, sequences=X, outputs_info=a0)[0],
                            [RNG.normal(size=(4, 2)), RNG.normal(size=2)]),
    "foldr": (lambda X, a0: gj.foldr(lambda x, a: gt.cos(a) + x, sequences=X, outputs_info=a0)[0],
              [RNG.normal(size=(4, 2)), RNG.normal(size=2)]),
    "two outputs": (lambda X, a0: gj.scan(lambda x, a: [a + x, (a * x).sum()], sequences=X,
                                          outputs_info=[a0, None])[0][1], [RNG.normal(size=(4, 2)), RNG.normal(size=2)]),
    "nested scan": (lambda X: gj.scan(lambda x: gj.scan(lambda v, acc: acc * v + 1, sequences=x,
                                                        outputs_info=gt.constant(1.0))[0][-1], sequences=X)[0],
                    [RNG.normal(size=(3, 4))]),
}


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("form", list(FORMS), ids=str)
def test_verify_grad(form, mode):
    fn, pt = FORMS[form]
    gj.verify_grad(fn, pt, mode=mode)


def test_bptt_graph_is_native():
    W, X, h0 = gt.dmatrix("W"), gt.dmatrix("X"), gt.dvector("h0")
    out = _rnn(W, X, h0)
    f = gj.function([W, X, h0], gj.grad((out ** 2).sum(), [W, X, h0]), mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    assert sum(isinstance(n.op, Scan) for n in f.maker.fgraph.toposort()) == 2


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_truncate_gradient(mode):
    """truncate_gradient=k: the backward pass runs only the last k steps (Theano's semantics)."""
    x, a = gt.dvector("x"), gt.dscalar("a")
    out, _ = gj.scan(lambda xt, h, a: a * h + xt, sequences=x, outputs_info=gt.constant(1.0), non_sequences=a,
                     truncate_gradient=2)
    gx, ga = gj.grad(out[-1], [x, a])
    xv, av = np.arange(1.0, 6.0), 0.5
    gxv, gav = gj.function([x, a], [gx, ga], mode=mode)(xv, av)
    np.testing.assert_allclose(gxv, [0, 0, 0, av, 1])             # d out[-1] / d x_t for the last two steps
    h = [1.0]
    for v in xv:
        h.append(av * h[-1] + v)
    np.testing.assert_allclose(gav, h[-2] + av * h[-3])           # two steps of a * h_{t-1}


def test_rnn_training_matches_finite_differences():
    """An RNN trained for a few SGD steps with BPTT; its gradient matches finite differences."""
    rng = np.random.default_rng(0)
    H, T = 4, 6
    W = gj.shared(rng.normal(size=(H, H)) * 0.3, name="W")
    U = gj.shared(rng.normal(size=(H,)) * 0.3, name="U")
    X, y = gt.dmatrix("X"), gt.dvector("y")
    hs, _ = gj.scan(lambda x, h, W: gt.tanh(gt.dot(W, h) + x), sequences=X, outputs_info=gt.zeros((H,)),
                    non_sequences=W)
    cost = ((gt.dot(hs, U) - y) ** 2).mean()
    gW, gU = gj.grad(cost, [W, U])
    train = gj.function([X, y], cost, updates=[(W, W - 0.5 * gW), (U, U - 0.5 * gU)], mode="FAST_RUN")
    Xv, yv = rng.normal(size=(T, H)), rng.normal(size=T) * 0.5
    losses = [float(train(Xv, yv)) for _ in range(8)]
    assert losses[-1] < losses[0]
    cost_fn = gj.function([X, y], [cost, gW], mode="FAST_RUN")
    c0, g = cost_fn(Xv, yv)
    Wv, eps, num = W.get_value(), 1e-6, np.zeros((H, H))
    for idx in np.ndindex(H, H):
        for sign in (1, -1):
            w = Wv.copy()
            w[idx] += sign * eps
            W.set_value(w)
            num[idx] += sign * float(cost_fn(Xv, yv)[0]) / (2 * eps)
    W.set_value(Wv)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_jacobian_and_hessian_by_scan(mode):
    """Theano's tutorial: the Jacobian and Hessian as scans over the output's indices."""
    x = gt.dvector("x")
    y = x ** 2 * gt.sum(x)
    J, _ = gj.scan(lambda i, y, x: gj.grad(y[i], x), sequences=gt.arange(y.shape[0]), non_sequences=[y, x])
    cost = gt.sum(x ** 3) + gt.prod(x)
    gy = gj.grad(cost, x)
    Hs, _ = gj.scan(lambda i, gy, x: gj.grad(gy[i], x), sequences=gt.arange(gy.shape[0]), non_sequences=[gy, x])
    f = gj.function([x], [J, Hs], mode=mode)
    xv = np.array([1.0, 2.0, 3.0])
    Jv, Hv = f(xv)
    s = xv.sum()
    np.testing.assert_allclose(Jv, np.diag(2 * xv * s) + (xv ** 2)[:, None])
    prod_h = np.array([[0 if i == j else np.prod(np.delete(xv, [i, j])) for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(Hv, np.diag(6 * xv) + prod_h)
    np.testing.assert_allclose(Jv, gj.function([x], gj.jacobian(y, x), mode=mode)(xv))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_lop_and_rop(mode):
    W, h0 = gt.dmatrix("W"), gt.dvector("h0")
    X = gt.dmatrix("X")
    out = _rnn(W, X, h0)
    v, u = gt.dmatrix("v"), gt.dmatrix("u")
    lop = gj.Lop(out, W, u)
    rop = gj.Rop(out, W, v)
    f = gj.function([W, X, h0, u, v], [out, lop, rop], mode=mode)
    rng = np.random.default_rng(3)
    Wv, Xv, hv = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 3)), rng.normal(size=3)
    uv, vv = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    o, lo, ro = f(Wv, Xv, hv, uv, vv)
    g = gj.function([W, X, h0], out, mode=mode)
    eps = 1e-6
    num_rop = (g(Wv + eps * vv, Xv, hv) - g(Wv - eps * vv, Xv, hv)) / (2 * eps)
    np.testing.assert_allclose(ro, num_rop, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.sum(lo * vv), np.sum(uv * ro), rtol=1e-8)   # <u, J v> both ways


def test_grad_of_while_loop_is_not_implemented():
    p0 = gt.dscalar("p0")
    out, _ = gj.scan(lambda p: (p * 2, gj.until(p > 10)), outputs_info=p0, n_steps=10)
    with pytest.raises(Exception, match="while loop"):
        gj.grad(out.sum(), p0)
