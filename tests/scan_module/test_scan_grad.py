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
    "non-sequence computed from another": (
        lambda W, X, h0: gj.scan(lambda x, h, A, B: gt.tanh(gt.dot(A, h) + gt.dot(B, x)), sequences=X,
                                 outputs_info=h0, non_sequences=[W, W * 2])[0],
        [RNG.normal(size=(3, 3)) * 0.4, RNG.normal(size=(4, 3)), RNG.normal(size=3)]),
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


def _second_order_linear(a, x):
    out, _ = gj.scan(lambda xt, h, a: a * h + xt, sequences=x, outputs_info=gt.constant(0.5), non_sequences=a)
    return gj.grad((out * a).sum() + (out ** 2).sum(), a)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_second_order(mode):
    """grad of grad through scan: the backward loop reads a as a non-sequence and through its gradient
    sequence; each path is counted once (it was counted twice)."""
    gj.verify_grad(_second_order_linear, [np.array(0.7), np.array([0.3, -0.2, 0.5])], mode=mode)
    rng = np.random.default_rng(5)
    Wv, Xv, hv = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 3)), rng.normal(size=3)
    gj.verify_grad(lambda W_: gj.grad((_rnn(W_, gt.constant(Xv), gt.constant(hv)) ** 2).sum(), W_), [Wv],
                   mode=mode)


# ---------------------------------------------------------------- while loops (until)

def _until_rnn(W, X, h0, stop):
    """An RNN stopping after the step whose input's first entry exceeds stop."""
    out, _ = gj.scan(lambda x, h, W, s: (gt.tanh(gt.dot(W, h) + x), gj.until(x[0] > s)), sequences=X,
                     outputs_info=h0, non_sequences=[W, stop])
    return out


def _until_points(dtype, stop_row):
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, size=(6, 3))
    if stop_row is not None:
        X[stop_row, 0] = 3.0
    return [(rng.normal(size=(3, 3)) * 0.5).astype(dtype), X.astype(dtype), rng.normal(size=3).astype(dtype)]


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("stop_row", [2, None], ids=["stops early", "runs to n_steps"])
def test_verify_grad_while_loop(stop_row, dtype, mode):
    pt = _until_points(dtype, stop_row)
    fn = gj.function([X := gt.matrix("X", dtype=dtype)], _until_rnn(*[gt.constant(p) for p in (pt[0],)], X,
                                                                    gt.constant(pt[2]), 2.0), mode=mode)
    assert fn(pt[1]).shape == (6 if stop_row is None else stop_row + 1, 3)
    tol = dict(abs_tol=2e-2, rel_tol=2e-2) if dtype == "float32" else {}
    gj.verify_grad(lambda W, X, h0: _until_rnn(W, X, h0, 2.0), pt, mode=mode, **tol)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_while_loop_gradient_values(mode):
    """p -> 1.5 p until p > 10: from p0 = 1 the loop runs 6 steps; d sum(out) / d p0 = sum of 1.5^k, k = 1..6;
    the threshold only decides the number of steps: its gradient is zero."""
    p0, a, thr = gt.dscalar("p0"), gt.dscalar("a"), gt.dscalar("thr")
    out, _ = gj.scan(lambda p, a, thr: (p * a, gj.until(p * a > thr)), outputs_info=p0, non_sequences=[a, thr],
                     n_steps=50)
    f = gj.function([p0, a, thr], [out] + gj.grad(out.sum(), [p0, a, thr]), mode=mode)
    o, g0, ga, gthr = f(1.0, 1.5, 10.0)
    k = np.arange(1, 7)
    np.testing.assert_allclose(o, 1.5 ** k)
    np.testing.assert_allclose(g0, np.sum(1.5 ** k))
    np.testing.assert_allclose(ga, np.sum(k * 1.5 ** (k - 1)))
    assert gthr == 0.0
    o, g0, _, _ = f(20.0, 1.5, 10.0)                              # stops after the first step
    np.testing.assert_allclose([o[0], g0], [30.0, 1.5])


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_while_loop_truncate_gradient(mode):
    x, a = gt.dvector("x"), gt.dscalar("a")
    out, _ = gj.scan(lambda xt, h, a: (a * h + xt, gj.until(xt > 4)), sequences=x, outputs_info=gt.constant(1.0),
                     non_sequences=a, truncate_gradient=2)
    gx = gj.grad(out[-1], x)
    np.testing.assert_allclose(gj.function([x, a], gx, mode=mode)(np.arange(1.0, 9.0), 0.5),
                               [0, 0, 0, 0.5, 1, 0, 0, 0])        # stopped at x = 5: steps 4 and 5 only


# ---------------------------------------------------------------- steps updating shared variables

def _dropout_rnn(srng):
    W, X, h0 = gt.dmatrix("W"), gt.dmatrix("X"), gt.dvector("h0")

    def step(x, h, W):
        mask = srng.uniform(size=(3,)) > 0.3
        noise = srng.normal(loc=h, scale=0.1)                   # its gradient wrt loc is pathwise
        return gt.tanh(gt.dot(W, h) * mask + x + noise)
    out, updates = gj.scan(step, sequences=X, outputs_info=h0, non_sequences=W)
    return [W, X, h0], out, updates


# a step updating shared variables runs its Python perform in the LLVM modes (link/llvm/driver/scan.py)
@pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")
@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_grad_through_random_draws(mode):
    """A step drawing random numbers (its generators are shared states the loop updates): the backward loop
    reads the draws the forward made; finite differences with the same draws agree."""
    from graphjit.tensor.random import RandomStream
    ins, out, updates = _dropout_rnn(RandomStream(seed=3))
    assert len(updates) == 2
    cost = (out ** 2).sum()
    f = gj.function(ins, [cost] + gj.grad(cost, ins), mode=mode, no_default_updates=True)
    fc = gj.function(ins, cost, mode=mode, no_default_updates=True)
    rng = np.random.default_rng(0)
    pt = [rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 3)), rng.normal(size=3)]
    _, *grads = f(*pt)
    for k, (p, g) in enumerate(zip(pt, grads)):
        num = np.zeros_like(p)
        for idx in np.ndindex(*p.shape):
            hi, lo = [q.copy() for q in pt], [q.copy() for q in pt]
            hi[k][idx] += 1e-6
            lo[k][idx] -= 1e-6
            num[idx] = (fc(*hi) - fc(*lo)) / 2e-6
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)


def _unrolled(X, a, s, n):
    """The float-state loop below unrolled, its updates wrapped in disconnected_grad (the definition)."""
    h, sv, c = gt.zeros((2,)), s, 0
    for t in range(n):
        h = gt.sin(h * sv + X[t] * a)
        c = c + (h ** 2).sum()
        sv = gj.disconnected_grad(sv * 0.9 + X[t] * a)
    return c


# a step updating shared variables runs its Python perform in the LLVM modes (link/llvm/driver/scan.py)
@pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")
@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_grad_with_float_shared_state(mode):
    """The step reads and updates a float shared s: the gradient is that of the unrolled loop with its updates
    not differentiated (so d/ds is the first step's read)."""
    s = gj.shared(np.array([0.5, -0.3]), name="s")
    X, a = gt.dmatrix("X"), gt.dscalar("a")
    out, updates = gj.scan(lambda x, h, a: (gt.sin(h * s + x * a), {s: s * 0.9 + x * a}), sequences=X,
                           outputs_info=gt.zeros((2,)), non_sequences=a)
    cost = (out ** 2).sum()
    f = gj.function([X, a], [cost] + gj.grad(cost, [X, a, s]), mode=mode, no_default_updates=True)
    Xs, As, Ss = gt.dmatrix(), gt.dscalar(), gt.dvector()
    ref_cost = _unrolled(Xs, As, Ss, 3)
    ref = gj.function([Xs, As, Ss], [ref_cost] + gj.grad(ref_cost, [Xs, As, Ss]), mode="PY")
    Xv = np.random.default_rng(1).normal(size=(3, 2))
    for got, want in zip(f(Xv, 0.7), ref(Xv, 0.7, s.get_value())):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    upd = gj.function([X, a], updates[s], mode=mode)(Xv, 0.7)     # the updates themselves still run
    want = s.get_value()
    for t in range(3):
        want = want * 0.9 + Xv[t] * 0.7
    np.testing.assert_allclose(upd, want)


def test_grad_through_final_shared_value_is_not_implemented():
    s = gj.shared(np.array([0.5, -0.3]), name="s")
    X = gt.dmatrix("X")
    out, updates = gj.scan(lambda x, h: (h + x * s, {s: s * x}), sequences=X, outputs_info=gt.zeros((2,)))
    with pytest.raises(gj.gradient.NullTypeGradError, match="final value of a shared variable"):
        gj.grad(updates[s].sum() + out.sum(), X)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_while_loop_of_zero_steps(mode):
    p0, n = gt.dscalar("p0"), gt.lscalar("n")
    out, _ = gj.scan(lambda p: (p * 2, gj.until(p > 10)), outputs_info=p0, n_steps=n)
    f = gj.function([p0, n], [out, gj.grad(out.sum(), p0)], mode=mode)
    o, g = f(1.0, 0)
    assert o.shape == (0,) and g == 0.0
    np.testing.assert_allclose(f(1.0, 2)[1], 6.0)


@pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")
@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_grad_with_integer_counter_and_until(mode):
    """An integer shared counter read by the step (recorded per step), in a while loop."""
    c = gj.shared(np.int64(1), name="c")
    x = gt.dvector("x")
    out, _ = gj.scan(lambda xt, h: (h * gt.cast(c, "float64") + xt, {c: c + 1}, gj.until(xt > 5)), sequences=x,
                     outputs_info=gt.constant(1.0))
    f = gj.function([x], [out, gj.grad(out[-1], x)], mode=mode, no_default_updates=True)
    o, g = f(np.array([1.0, 1.0, 9.0, 1.0]))                     # h = 1*1+1, 2*2+1, 3*5+9: stops at x = 9
    np.testing.assert_allclose(o, [2.0, 5.0, 24.0])
    np.testing.assert_allclose(g, [6.0, 3.0, 1.0, 0.0])
