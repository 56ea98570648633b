"""Issue 32: a gradient, Lop or Rop graph reads a variable only where the math needs its value, and its shape
only through Shape; Rop checks each eval point's shape against its wrt at run time."""

from __future__ import annotations

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as T
from graphjit.compile.maker import UnusedInputError
from graphjit.gradient import Lop, Rop, grad
from graphjit.graph.basic import Variable, ancestors
from graphjit.tensor.shape_base import MatchShape, Shape, Shape_i

from op_check import OP_TEST_MODES

RNG = np.random.default_rng(32)


def reads_value(out: Variable, w: Variable) -> bool:
    """w is an ancestor of out other than through Shape / Shape_i (which read only its shape)."""
    seen, stack = set(), [out]
    while stack:
        v = stack.pop()
        if v is w:
            return True
        if v in seen or v.owner is None:
            continue
        seen.add(v)
        if not isinstance(v.owner.op, (Shape, Shape_i)):
            stack.extend(v.owner.inputs)
    return False


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_the_issue_lop_compiles_without_w(mode):
    x, W, v = T.dmatrix("x"), T.dmatrix("W"), T.dmatrix("v")
    f = gj.function([v, x], Lop(T.dot(x, W), W, v), mode=mode)
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 5))
    np.testing.assert_allclose(f(b, a), a.T @ b, rtol=1e-12)


x, y, W, v = T.dmatrix("x"), T.dmatrix("y"), T.dmatrix("W"), T.dmatrix("v")
b, u = T.dvector("b"), T.dvector("u")

# (name, f(w), wrt, eval point for Lop, whether wrt's shape may be read, value for the wrt and eval points)
NO_VALUE = [
    ("dot", lambda w: T.dot(x, w), W, v, False),
    ("dot-left", lambda w: T.dot(w, x), W, v, False),
    ("transpose", lambda w: w.T, W, v, False),
    ("neg", lambda w: -w, W, v, False),
    ("times-constant", lambda w: w * 2.0, W, v, False),
    ("exp-of-x-times", lambda w: T.exp(x) * w, W, v, True),   # w may broadcast (length 1) at run time
    ("add", lambda w: x + w, W, v, True),
    ("bias", lambda w: x + w, b, v, True),
    ("sum-axis", lambda w: w.sum(axis=0), W, u, True),
    ("mean", lambda w: w.mean(axis=1), W, u, True),
    ("slice", lambda w: w[1:], W, v, True),
    ("reshape", lambda w: w.reshape((-1,)), W, u, True),
]


@pytest.mark.parametrize("name, f, w, ev, shape_read", NO_VALUE, ids=[c[0] for c in NO_VALUE])
def test_lop_and_rop_do_not_read_wrt_values_the_math_does_not_need(name, f, w, ev, shape_read):
    out = f(w)
    lop = Lop(out, w, ev)
    assert not reads_value(lop, w)
    if not shape_read:
        assert w not in set(ancestors([lop]))
    rop = Rop(out, w, w.type("V"))
    assert not reads_value(rop, w)       # the eval point's check reads w's shape only


def test_a_gradient_with_known_grads_needs_only_what_the_math_needs():
    g = grad(None, W, known_grads={T.dot(x, W): v})
    assert W not in set(ancestors([g]))
    a, c = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 4))
    np.testing.assert_allclose(gj.function([x, v], g)(a, c), a.T @ c)
    with pytest.raises(UnusedInputError):
        gj.function([x, v, W], g)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_grad_of_a_cost_takes_every_input_of_the_cost_but_computes_without_unneeded_values(mode):
    """grad's seed is Theano's fill(cost, 1): function([x, W, y], grad(cost, W)) takes W, as in Theano; the
    rewritten graph reads only W's shape (the gradient does not depend on its values)."""
    cost = (T.dot(x, W) * y).sum()
    f = gj.function([x, W, y], grad(cost, W), mode=mode)
    a, w0, c = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4)), RNG.normal(size=(2, 4))
    np.testing.assert_allclose(f(a, w0, c), a.T @ c, rtol=1e-12)
    if mode != "FAST_COMPILE":          # (which skips the rewrites that drop the seed's cost)
        w_in = f.maker.fgraph.inputs[1]
        assert all(isinstance(n.op, (Shape, Shape_i)) for n, _ in f.maker.fgraph.clients[w_in])


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_rop_checks_the_eval_point_shape_at_run_time(mode):
    xx, WW, VV = T.dmatrix("x"), T.dmatrix("W"), T.dmatrix("V")
    f = gj.function([WW, VV, xx], Rop(T.dot(xx, WW), WW, VV), mode=mode)
    a, w0, v0 = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 5)), RNG.normal(size=(4, 5))
    np.testing.assert_allclose(f(w0, v0, a), a @ v0, rtol=1e-12)
    np.testing.assert_allclose(f(w0, np.asfortranarray(v0[:, ::-1]), a), a @ v0[:, ::-1], rtol=1e-12)
    for bad in (RNG.normal(size=(4, 6)), RNG.normal(size=(5, 5)), RNG.normal(size=(4, 1))):
        with pytest.raises(ValueError, match=r"Rop: the eval point 'V' has .*but wrt 'W' has"):
            f(w0, bad, a)
    assert any(isinstance(n.op, MatchShape) for n in f.maker.fgraph.toposort())


def test_rop_shape_check_at_build_time_when_static():
    w3 = T.TensorType("float64", (3, 4))("w3")
    with pytest.raises(ValueError, match="has shape \\(3, 5\\), but wrt 'w3' has shape \\(3, 4\\)"):
        Rop(w3 * 2, w3, T.TensorType("float64", (3, 5))("V"))
    with pytest.raises(ValueError, match="has 1 dimension"):
        Rop(W * 2, W, T.dvector("V"))
    same = Rop(w3 * 2, w3, T.TensorType("float64", (3, 4))("V"))
    assert not any(a.owner is not None and isinstance(a.owner.op, MatchShape) for a in ancestors([same]))
    assert w3 not in set(ancestors([same]))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_the_rop_check_is_rewritten_away_when_the_shapes_provably_agree(mode):
    VV = T.dmatrix("V")
    r = Rop(T.exp(VV) * 2.0, VV, VV * 3.0)
    f = gj.function([VV], r, mode=mode)
    if mode != "FAST_COMPILE":
        assert not any(isinstance(n.op, MatchShape) for n in f.maker.fgraph.toposort())
    a = RNG.normal(size=(2, 3))
    np.testing.assert_allclose(f(a), np.exp(a) * 2 * 3 * a, rtol=1e-12)
