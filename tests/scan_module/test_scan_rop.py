"""Scan.R_op (forward mode: one loop carrying the tangents) against the Lop-of-Lop identity and finite
differences; the Hessian-vector product of an RNN loss."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import applys_between
from graphjit.scan_module.op import Scan
from tests.op_check import OP_TEST_MODES

RNG = np.random.default_rng(17)


def _rnn(W, X, h0):
    return gj.scan(lambda x, h, W: gt.tanh(gt.dot(W, h) + x), sequences=X, outputs_info=h0, non_sequences=W)[0]


FORMS = {
    "rnn": (_rnn, [(3, 3), (4, 3), (3,)]),
    "mit_sot": (lambda init, X: gj.scan(lambda x, a, b: gt.sin(a) * b + x, sequences=X,
                                        outputs_info=dict(initial=init, taps=[-2, -1]))[0], [(2, 2), (4, 2)]),
    "nit_sot": (lambda X, y: gj.map(lambda x, y: gt.exp(x) * y, sequences=X, non_sequences=y)[0], [(3, 2), (2,)]),
    "integer sequence": (lambda c, z: gj.scan(lambda ci, p, z: ci * z ** p, sequences=[c, gt.arange(c.shape[0])],
                                              non_sequences=z)[0], [(5,), ()]),
    "go_backwards": (lambda X, a0: gj.scan(lambda x, a: gt.tanh(a * x), sequences=X, outputs_info=a0,
                                           go_backwards=True)[0], [(4, 2), (2,)]),
    "reduce (last state)": (lambda X, a0: gj.reduce(lambda x, a: a * x + 1, sequences=X, outputs_info=a0)[0],
                            [(4, 2), (2,)]),
    "until": (lambda X, h0: gj.scan(lambda x, h: (gt.tanh(h + x), gj.until(x[0] > 2.5)), sequences=X,
                                    outputs_info=h0)[0], [(6, 2), (2,)]),
}


def _points(shapes, form):
    pts = [RNG.normal(size=s) * 0.5 for s in shapes]
    if form == "until":
        pts[0][2, 0] = 3.0                                        # stops after step 2
    return pts


def _scan_names(outputs):
    return sorted(n.op.info.name for n in applys_between([], outputs) if isinstance(n.op, Scan))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("form", list(FORMS))
def test_rop_matches_lop_of_lop_and_finite_differences(form, mode):
    fn, shapes = FORMS[form]
    ins = [gt.TensorType("float64", (None,) * len(s))(f"in{i}") for i, s in enumerate(shapes)]
    vs = [i.type(f"v{k}") for k, i in enumerate(ins)]
    out = fn(*ins)
    fwd = gj.Rop(out, ins, vs, use_op_rop=True)                  # raises if an op on the path has no R_op
    rev = gj.Rop(out, ins, vs, use_op_rop=False)
    assert any(name.endswith("_tangents") for name in _scan_names([fwd]))
    assert not any(name.endswith("_tangents") for name in _scan_names([rev]))
    f = gj.function(ins + vs, [fwd, rev], mode=mode)
    g = gj.function(ins, out, mode=mode)
    pts, dirs = _points(shapes, form), [RNG.normal(size=s) for s in shapes]
    a, b = f(*pts, *dirs)
    eps = 1e-6
    num = (g(*[p + eps * d for p, d in zip(pts, dirs)]) - g(*[p - eps * d for p, d in zip(pts, dirs)])) / (2 * eps)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a, num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_rop_float32(mode):
    W, X, h0, V = gt.fmatrix("W"), gt.fmatrix("X"), gt.fvector("h0"), gt.fmatrix("V")
    out = _rnn(W, X, h0)
    r = gj.Rop(out, W, V, use_op_rop=True)
    assert r.dtype == "float32"
    f = gj.function([W, X, h0, V], r, mode=mode)
    Wv, Xv, hv, Vv = [RNG.normal(size=s).astype("float32") * 0.5 for s in [(3, 3), (4, 3), (3,), (3, 3)]]
    g = gj.function([W, X, h0], out, mode=mode)
    num = (g(Wv + 1e-2 * Vv, Xv, hv).astype("float64") - g(Wv - 1e-2 * Vv, Xv, hv)) / 2e-2
    np.testing.assert_allclose(f(Wv, Xv, hv, Vv), num, rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_hessian_vector_product_of_rnn_loss(mode):
    """Rop of the gradient (forward over reverse, through both the forward and the backward loop) equals
    the Lop-of-Lop result, the finite differences of the gradient, and H v from the full Hessian."""
    W, X, h0, V = gt.dmatrix("W"), gt.dmatrix("X"), gt.dvector("h0"), gt.dmatrix("V")
    cost = (_rnn(W, X, h0) ** 2).sum()
    gW = gj.grad(cost, W)
    hv = gj.Rop(gW, W, V)
    assert any(name.endswith("_tangents") for name in _scan_names([hv]))
    hv_rev = gj.Rop(gW, W, V, use_op_rop=False)
    f = gj.function([W, X, h0, V], [hv, hv_rev], mode=mode)
    grad_fn = gj.function([W, X, h0], gW, mode=mode)
    Wv, Xv, hv0, Vv = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(5, 3)), RNG.normal(size=3), RNG.normal(
        size=(3, 3))
    a, b = f(Wv, Xv, hv0, Vv)
    eps = 1e-6
    num = (grad_fn(Wv + eps * Vv, Xv, hv0) - grad_fn(Wv - eps * Vv, Xv, hv0)) / (2 * eps)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a, num, rtol=1e-6, atol=1e-8)
    flat = gt.dvector("w")
    H = gj.hessian((_rnn(flat.reshape((3, 3)), gt.constant(Xv), gt.constant(hv0)) ** 2).sum(), flat)
    Hv = gj.function([flat], H, mode=mode)(Wv.ravel())
    np.testing.assert_allclose(a.ravel(), Hv @ Vv.ravel(), rtol=1e-8, atol=1e-10)


@pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")
@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_rop_with_float_shared_state(mode):
    """A tangent of a shared state the step updates enters the first step only (updates are constants), like
    the gradient: <u, J v> agrees both ways."""
    s = gj.shared(np.array([0.5, -0.3]), name="s")
    X = gt.dmatrix("X")
    out, _ = gj.scan(lambda x, h: (gt.sin(h * s + x), {s: s * 0.9 + x}), sequences=X,
                     outputs_info=gt.constant(np.array([0.3, 0.8])))
    v, u = gt.dvector("v"), gt.dmatrix("u")
    jv = gj.Rop(out, s, v, use_op_rop=True)
    ju = gj.Lop(out, s, u)
    f = gj.function([X, v, u], [jv, ju], mode=mode, no_default_updates=True)
    Xv, vv, uv = RNG.normal(size=(3, 2)), RNG.normal(size=2), RNG.normal(size=(3, 2))
    a, b = f(Xv, vv, uv)
    np.testing.assert_allclose(np.sum(uv * a), np.sum(b * vv), rtol=1e-10)
    assert np.any(a[1:] != 0)                                     # the first step's change propagates
