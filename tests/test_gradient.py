"""graphjit.gradient: the seed's integer rules, disconnected and undefined gradients, known_grads,
consider_constant, the gradient-only ops, Lop/Rop, jacobian, hessian and second derivatives."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import (DisconnectedInputError, DisconnectedType, NullTypeGradError, Lop, Rop,
                               disconnected_grad, grad, grad_clip, grad_scale, grad_undefined,
                               hessian, hessian_vector_product, jacobian, zero_grad)
from graphjit.compile.maker import UnusedInputError
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.graph.type import NullType

RNG = np.random.default_rng(1234)


def run(inputs, outputs, *values, mode="PY"):
    return gj.function(inputs, outputs, mode=mode, on_unused_input="ignore")(*values)


# --- the seed's five integer cases -----------------------------------------------------------------

def test_case1_integer_dot_has_zero_gradients():
    x, y = gt.lvector("x"), gt.lvector("y")
    gx, gy = grad(gt.dot(x, y), [x, y])
    a, b = np.array([1, 2, 3]), np.array([4, 5, 6])
    got = run([x, y], [gx, gy], a, b)
    for g, v in zip(got, (a, b)):
        assert g.shape == v.shape and g.dtype.kind == "f" and not g.any()


def test_case2_integer_operand_of_a_float_dot_gets_the_float_gradient():
    x, y, yf = gt.dvector("x"), gt.lvector("y"), gt.dvector("yf")
    gx, gy = grad(gt.dot(x, y), [x, y])
    fx, fy = grad(gt.dot(x, yf), [x, yf])
    a, b = RNG.normal(size=3), np.array([4, -5, 6])
    got = run([x, y], [gx, gy], a, b)
    want = run([x, yf], [fx, fy], a, b.astype("float64"))
    np.testing.assert_allclose(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1])
    assert got[1].dtype.kind == "f"


class ArgmaxAlong(Op):
    """argmax of x along the axis given as an (integer) input: the seed's case 3."""

    __props__ = ()

    def make_node(self, x, axis):
        x, axis = gt.as_tensor_variable(x), gt.as_tensor_variable(axis)
        return Apply(self, [x, axis], [gt.TensorType("int64", (None,))()])

    def perform(self, node, inputs, out):
        out[0][0] = np.argmax(inputs[0], axis=int(inputs[1]))

    def L_op(self, inputs, outputs, grads):
        return [gt.zeros_like(inputs[0]), grad_undefined(self, 1, inputs[1], "an axis is an integer")]


def test_case3_argmax_zero_for_x_undefined_for_the_axis():
    x, axis = gt.dmatrix("x"), gt.lscalar("axis")
    cost = gt.cast(ArgmaxAlong()(x, axis), "float64").sum()
    gx = grad(cost, x)
    np.testing.assert_array_equal(run([x], gx, RNG.normal(size=(2, 3))), np.zeros((2, 3)))
    with pytest.raises(NullTypeGradError, match="undefined"):
        grad(cost, axis)
    assert isinstance(grad(cost, axis, null_gradients="return").type, NullType)


def test_case3_library_argmax_is_connected_with_zero_gradient():
    x = gt.dmatrix("x")
    cost = gt.cast(gt.argmax(x, axis=1), "float64").sum() + gt.cast(gt.argmin(x), "float64")
    np.testing.assert_array_equal(run([x], grad(cost, x), RNG.normal(size=(2, 3))), 0)


def test_case4_alloc_shape_inputs_are_disconnected():
    x, n = gt.dscalar("x"), gt.lscalar("n")
    cost = gt.alloc(x, n, 3).sum()
    assert float(run([x, n], grad(cost, x), 2.0, 4)) == 12.0
    with pytest.raises(DisconnectedInputError):
        grad(cost, n)
    assert isinstance(grad(cost, n, disconnected_inputs="ignore",
                           return_disconnected="Disconnected").type, DisconnectedType)


def test_case5_casts():
    y, x = gt.lscalar("y"), gt.dscalar("x")
    gy = grad(0.5 * gt.cast(y, "float64"), y)
    assert float(run([y], gy, 3)) == 0.5
    gx = grad(0.5 * gt.cast(gt.cast(x, "int64"), "float64"), x)
    assert float(run([x], gx, 3.7)) == 0.0


# --- disconnected inputs ---------------------------------------------------------------------------

def test_disconnected_inputs_raise_warn_ignore():
    x, z = gt.dvector("x"), gt.dvector("z")
    cost = (x ** 2).sum()
    with pytest.raises(DisconnectedInputError, match="'z'"):
        grad(cost, [x, z])
    with pytest.warns(UserWarning, match="does not depend"):
        gx, gz = grad(cost, [x, z], disconnected_inputs="warn")
    np.testing.assert_array_equal(run([x, z], gz, np.ones(2), np.ones(3)), np.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, g_none = grad(cost, [x, z], disconnected_inputs="ignore", return_disconnected="None")
    assert g_none is None
    _, g_disc = grad(cost, [x, z], disconnected_inputs="ignore", return_disconnected="Disconnected")
    assert isinstance(g_disc.type, DisconnectedType)


def test_disconnected_through_shape_only():
    x, y = gt.dvector("x"), gt.dvector("y")
    cost = (x * gt.cast(y.shape[0], "float64")).sum()
    with pytest.raises(DisconnectedInputError):
        grad(cost, y)
    np.testing.assert_array_equal(run([x, y], grad(cost, x), np.ones(2), np.ones(5)), [5.0, 5.0])


def test_bad_arguments():
    x = gt.dvector("x")
    with pytest.raises(TypeError, match="scalar"):
        grad(x, x)
    with pytest.raises(ValueError):
        grad(x.sum(), x, disconnected_inputs="maybe")
    with pytest.raises(ValueError):
        grad(None, x)


# --- undefined (NullType) gradients -----------------------------------------------------------------

class NoGrad(Op):
    """Identity without a gradient."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].copy()


def test_not_implemented_gradient_raises_or_returns():
    x = gt.dvector("x")
    cost = NoGrad()(x).sum()
    with pytest.raises(NullTypeGradError, match="not implemented"):
        grad(cost, x)
    g = grad(cost, x, null_gradients="return")
    assert isinstance(g.type, NullType)


def test_random_generator_is_disconnected_and_parameters_get_pathwise_gradients():
    from graphjit.tensor.random import NormalRV
    rng = gj.shared(np.random.default_rng(0))
    loc, scale = gt.dscalar("loc"), gt.dscalar("scale")
    sample = NormalRV("float64", has_size=True)(rng, (4,), loc, scale)
    g_loc, g_scale = grad(sample.sum(), [loc, scale])
    with pytest.raises(DisconnectedInputError):
        grad(sample.sum(), rng)
    values = run([loc, scale], [sample, g_loc, g_scale], 1.0, 2.0)
    assert float(values[1]) == 4.0
    np.testing.assert_allclose(values[2], ((values[0] - 1.0) / 2.0).sum())


# --- known_grads, consider_constant, gradient-only ops -------------------------------------------

def test_known_grads_start_backprop_at_an_intermediate():
    x = gt.dvector("x")
    h = gt.exp(x)
    u = gt.dvector("u")
    gx = grad(None, x, known_grads={h: u})
    a, b = RNG.normal(size=3), RNG.normal(size=3)
    np.testing.assert_allclose(run([x, u], gx, a, b), b * np.exp(a))
    # with a cost too, the two contributions add up
    gx2 = grad((h * 2).sum(), x, known_grads={h: u})
    np.testing.assert_allclose(run([x, u], gx2, a, b), (b + 2) * np.exp(a))


def test_consider_constant_blocks_the_gradient():
    x = gt.dvector("x")
    h = x ** 2
    cost = (h * x).sum()
    g = grad(cost, x, consider_constant=[h])
    a = RNG.normal(size=3)
    np.testing.assert_allclose(run([x], g, a), a ** 2)


@pytest.mark.parametrize("wrap, factor", [(zero_grad, 0.0), (lambda v: grad_scale(v, -3.0), -3.0)])
def test_zero_grad_and_grad_scale(wrap, factor):
    x = gt.dvector("x")
    a = RNG.normal(size=3)
    np.testing.assert_allclose(run([x], wrap(x) * 2, a), a * 2)  # identity forward
    np.testing.assert_allclose(run([x], grad((wrap(x) * 2).sum(), x), a), np.full(3, 2 * factor))


def test_disconnected_grad_and_grad_clip():
    x = gt.dvector("x")
    with pytest.raises(DisconnectedInputError):
        grad(disconnected_grad(x).sum(), x)
    g = grad((grad_clip(x, -1.0, 1.0) * 5).sum() + x.sum(), x)
    np.testing.assert_allclose(run([x], g, np.ones(2)), [2.0, 2.0])


# --- documented behaviours: ties and zeros -----------------------------------------------------------

def test_max_ties_send_the_gradient_to_every_maximum():
    x = gt.dvector("x")
    g = run([x], grad(gt.max(x), x), np.array([1.0, 3.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0, 1, 1, 0])


def test_prod_gradient_with_zeros_is_exact():
    x = gt.dmatrix("x")
    g = run([x], grad(gt.prod(x, axis=1).sum(), x),
            np.array([[2.0, 3.0, 4.0], [0.0, 3.0, 4.0], [0.0, 0.0, 4.0]]))
    np.testing.assert_array_equal(g, [[12, 8, 6], [12, 0, 0], [0, 0, 0]])


# --- Lop and Rop -------------------------------------------------------------------------------------

def _fd_jvp(fn, x, v, eps=1e-6):
    return (fn(x + eps * v) - fn(x - eps * v)) / (2 * eps)


ROP_CASES = {
    "elemwise": lambda x: gt.tanh(x) * x,
    "dot": lambda x: gt.dot(x.reshape((2, 3)), gt.constant(np.arange(6.0).reshape(3, 2))),
    "softmax": lambda x: gt.softmax(x.reshape((2, 3))),
    "log_softmax": lambda x: gt.log_softmax(x.reshape((2, 3)), axis=0),
    "logsumexp": lambda x: gt.logsumexp(x.reshape((2, 3)), axis=1),
    "sum": lambda x: gt.sum(x.reshape((2, 3)) ** 2, axis=0),
    "prod": lambda x: gt.prod(x.reshape((2, 3)), axis=1),
    "cumsum": lambda x: gt.cumsum(x * x),
    "cumprod": lambda x: gt.cumprod(x.reshape((2, 3)) - 1.0, axis=-1),
    "transpose": lambda x: x.reshape((2, 3)).T * 2,
    "join": lambda x: gt.concatenate([x, x ** 2]),
    "subtensor": lambda x: x[1:4] * x[::-1][:3],
    "take_labels": lambda x: gt.take_labels(x.reshape((2, 3)), np.array([2, 0])),
}


@pytest.mark.parametrize("name", sorted(ROP_CASES))
def test_rop_forward_fallback_and_finite_differences_agree(name):
    build = ROP_CASES[name]
    x, v = gt.dvector("x"), gt.dvector("v")
    out = build(x)
    a, b = RNG.uniform(0.5, 1.5, 6), RNG.normal(size=6)
    via_lop = run([x, v], Rop(out, x, v, use_op_rop=False), a, b)
    f = gj.function([x], out, mode="PY")
    np.testing.assert_allclose(via_lop, _fd_jvp(f, a, b), rtol=1e-6, atol=1e-7)
    default = run([x, v], Rop(out, x, v), a, b)
    np.testing.assert_allclose(default, via_lop, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["elemwise", "dot", "softmax", "log_softmax", "logsumexp", "sum",
                                  "cumsum", "cumprod", "transpose", "join", "subtensor", "take_labels"])
def test_forward_rop_exists(name):
    x, v = gt.dvector("x"), gt.dvector("v")
    out = ROP_CASES[name](x)
    a, b = RNG.uniform(0.5, 1.5, 6), RNG.normal(size=6)
    forward = run([x, v], Rop(out, x, v, use_op_rop=True), a, b)
    np.testing.assert_allclose(forward, run([x, v], Rop(out, x, v, use_op_rop=False), a, b),
                               rtol=1e-9, atol=1e-12)


def test_lop_is_the_transposed_jacobian_product():
    x, u = gt.dvector("x"), gt.dvector("u")
    w = gt.constant(RNG.normal(size=(3, 4)))
    out = gt.tanh(gt.dot(w, x))
    a, b = RNG.normal(size=4), RNG.normal(size=3)
    lop, jac = run([x, u], [Lop(out, x, u), jacobian(out, x)], a, b)
    np.testing.assert_allclose(lop, b @ jac)


# --- jacobian, hessian, second derivatives -----------------------------------------------------------

def test_jacobian_static_short_and_looped_agree():
    x = gt.dvector("x")
    w = RNG.normal(size=(3, 3))
    short = gt.specify_shape(gt.dot(gt.constant(w), gt.sin(x)), (3,))
    loop = gt.dot(gt.constant(w), gt.sin(x))
    a = RNG.normal(size=3)
    j_short, j_loop = run([x], [jacobian(short, x), jacobian(loop, x)], a)
    want = w * np.cos(a)[None, :]
    np.testing.assert_allclose(j_short, want)
    np.testing.assert_allclose(j_loop, want)


def test_hessian_and_hessian_vector_product():
    x, p = gt.dvector("x"), gt.dvector("p")
    a_mat = RNG.normal(size=(4, 4))
    a_mat = a_mat + a_mat.T
    cost = 0.5 * gt.dot(x, gt.dot(gt.constant(a_mat), x)) + gt.sum(gt.exp(x))
    a, b = RNG.normal(size=4), RNG.normal(size=4)
    h, hv = run([x, p], [hessian(cost, x), hessian_vector_product(cost, x, p)], a, b)
    want = a_mat + np.diag(np.exp(a))
    np.testing.assert_allclose(h, want, rtol=1e-10)
    np.testing.assert_allclose(hv, want @ b, rtol=1e-10)


@pytest.mark.parametrize("name, build", [
    ("softmax-xent", lambda x: gt.crossentropy_softmax(x.reshape((2, 3)), np.array([1, 2])).sum()),
    ("logsumexp", lambda x: gt.logsumexp(x)),
    ("tanh-dot", lambda x: gt.tanh(gt.dot(x.reshape((2, 3)), gt.constant(np.ones((3, 2))))).sum()),
    ("prod", lambda x: gt.prod(x)),
    ("max", lambda x: gt.max(x) * gt.sum(x ** 2)),
])
def test_second_derivatives_match_finite_differences_of_the_gradient(name, build):
    x = gt.dvector("x")
    cost = build(x)
    a = RNG.uniform(0.5, 1.5, 6)
    h = run([x], hessian(cost, x), a)
    g = gj.function([x], grad(cost, x), mode="PY")
    eps = 1e-6
    fd = np.stack([(g(a + eps * e) - g(a - eps * e)) / (2 * eps) for e in np.eye(6)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)


def test_rop_through_sum_to_shape_of_a_runtime_broadcast():
    x, y, v = gt.dmatrix("x"), gt.dmatrix("y"), gt.dmatrix("v")
    g = grad((x * y).sum(), x)                    # x of shape (3, 1) broadcasts at run time
    a, b, c = np.ones((3, 1)), RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    forward = run([x, y, v], Rop(g, y, v, use_op_rop=True), a, b, c)
    np.testing.assert_allclose(forward, c.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(run([x, y, v], Rop(g, y, v, use_op_rop=False), a, b, c), forward)


def test_choice_probabilities_get_zero_and_integers_bounds_undefined():
    from graphjit.tensor.random import ChoiceRV, IntegersRV
    rng = gj.shared(np.random.default_rng(0))
    a, p = gt.dvector("a"), gt.dvector("p")
    sample = ChoiceRV("float64", has_size=True, has_p=True)(rng, (3,), a, p)
    gp = grad(sample.sum(), p)
    np.testing.assert_array_equal(run([a, p], gp, np.arange(3.0), np.full(3, 1 / 3)), 0)
    with pytest.raises(NullTypeGradError, match="not implemented"):
        grad(sample.sum(), a)
    low = gt.lscalar("low")
    draws = IntegersRV("int64", has_size=True)(rng, (3,), low, 10)
    with pytest.raises(NullTypeGradError, match="undefined"):
        grad(gt.cast(draws, "float64").sum(), low)


# --- issue 18: total gradients w.r.t. intermediates, consider_constant, shape-carrying gradients -----

MODES = ["PY", "FAST_RUN"]


def _fd_grad(f, a, eps=1e-6):
    """Central finite differences of the scalar function f at the float64 array a."""
    out = np.zeros_like(a)
    for k in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[k] = eps
        out[k] = (f(a + e) - f(a - e)) / (2 * eps)
    return out


INTERMEDIATE_CASES = {
    # name: (h from x, cost from x and h); x reaches the cost through h and, in some, directly
    "through-h-only": (lambda x: gt.exp(x), lambda x, h: (h * 2).sum()),
    "through-h-and-direct": (lambda x: gt.exp(x), lambda x, h: (h * x).sum() + x.sum()),
    "matrix-dot": (lambda x: gt.tanh(gt.dot(x, gt.constant(np.arange(6.0).reshape(3, 2) / 5))),
                   lambda x, h: (h ** 2).sum() + (x * 0.5).sum()),
    "two-uses-of-h": (lambda x: gt.sin(x) * 3, lambda x, h: (h * h).sum() + gt.log1p(h * h).sum()),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(INTERMEDIATE_CASES))
@pytest.mark.parametrize("order", ["x-first", "h-first"])
def test_grad_wrt_an_intermediate_and_its_input_gives_total_gradients(name, order, mode):
    make_h, make_cost = INTERMEDIATE_CASES[name]
    x = gt.dmatrix("x") if name == "matrix-dot" else gt.dvector("x")
    h = make_h(x)
    cost = make_cost(x, h)
    wrt = [x, h] if order == "x-first" else [h, x]
    got = dict(zip(wrt, grad(cost, wrt)))
    a = RNG.uniform(0.2, 1.0, (4, 3) if name == "matrix-dot" else 5)
    gx, gh = gj.function([x], [got[x], got[h]], mode=mode)(a)
    # x: the total gradient, as if h were not asked for
    f_cost = gj.function([x], cost, mode="PY")
    np.testing.assert_allclose(gx, _fd_grad(lambda v: f_cost(v), a), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gx, run([x], grad(cost, x), a, mode=mode), rtol=1e-12)
    # h: the gradient at h, with x held fixed where it enters the cost directly
    hv = h.type("hv")
    cost_h = gj.graph.basic.clone_replace(cost, {h: hv})
    h_value = gj.function([x], h, mode="PY")(a)
    f_h = gj.function([x, hv], cost_h, mode="PY", on_unused_input="ignore")
    np.testing.assert_allclose(gh, _fd_grad(lambda v: f_h(a, v), h_value), rtol=1e-6, atol=1e-8)


def test_grad_wrt_a_chain_of_intermediates_never_reports_an_input_disconnected():
    x = gt.dvector("x")
    h = gt.exp(x)
    k = h * 3
    a = RNG.normal(size=4)
    gx, gh, gk = run([x], grad(k.sum(), [x, h, k]), a)          # used to raise DisconnectedInputError
    np.testing.assert_allclose(gx, 3 * np.exp(a))
    np.testing.assert_allclose(gh, np.full(4, 3.0))
    np.testing.assert_allclose(gk, np.ones(4))
    gx_ignore = grad(k.sum(), [x, h], disconnected_inputs="ignore")[0]   # used to be silently 0
    np.testing.assert_allclose(run([x], gx_ignore, a), 3 * np.exp(a))


@pytest.mark.parametrize("mode", MODES)
def test_known_grads_lop_rop_jacobian_give_total_gradients_through_an_intermediate(mode):
    x, u, vx, vh = gt.dvector("x"), gt.dvector("u"), gt.dvector("vx"), gt.dvector("vh")
    h = gt.exp(x)
    f = h * 2 + x * 3
    a, b, c = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
    d_x, d_h = 2 * np.exp(a) + 3, np.full(3, 2.0)             # the diagonal Jacobians of f
    gx, gh = run([x, u], grad(None, [x, h], known_grads={f: u}), a, b, mode=mode)
    np.testing.assert_allclose(gx, b * d_x)
    np.testing.assert_allclose(gh, b * d_h)
    lx, lh = run([x, u], Lop(f, [x, h], u), a, b, mode=mode)
    np.testing.assert_allclose(lx, b * d_x)
    np.testing.assert_allclose(lh, b * d_h)
    for use_op_rop in (True, False):
        r = run([x, vx, vh], Rop(f, [x, h], [vx, vh], use_op_rop=use_op_rop), a, b, c, mode=mode)
        np.testing.assert_allclose(r, d_x * b + d_h * c, err_msg=f"use_op_rop={use_op_rop}")
    xs = gt.TensorType("float64", (3,))("xs")    # statically short: unrolled, no JacobianLoop fallback
    hs = gt.exp(xs)
    jx, jh = run([xs], jacobian(hs * 2 + xs * 3, [xs, hs]), a, mode=mode)
    np.testing.assert_allclose(jx, np.diag(d_x))
    np.testing.assert_allclose(jh, np.diag(d_h))


@pytest.mark.parametrize("mode", MODES)
def test_consider_constant_on_the_wrt_itself_still_gives_its_gradient(mode):
    x, y = gt.dvector("x"), gt.dvector("y")
    a, b = RNG.normal(size=3), RNG.normal(size=3)
    np.testing.assert_allclose(run([x, y], grad((x + y).sum(), x, consider_constant=[x]), a, b, mode=mode),
                               np.ones(3))
    np.testing.assert_allclose(run([x, y], grad((x * y).sum(), x, consider_constant=[x]), a, b, mode=mode), b)
    # h in consider_constant and in wrt: h gets its gradient, x only the paths that avoid h
    h = x ** 2
    cost = (h * x).sum()
    gx, gh = run([x], grad(cost, [x, h], consider_constant=[h]), a, mode=mode)
    np.testing.assert_allclose(gx, a ** 2)
    np.testing.assert_allclose(gh, a)
    # a variable reached only through a constant is still disconnected
    e = gt.exp(x)
    with pytest.raises(DisconnectedInputError):
        grad((e * 2).sum(), x, consider_constant=[e])
    gx, ge = run([x], grad((e * 2).sum(), [x, e], consider_constant=[e], disconnected_inputs="ignore"), a,
                 mode=mode)
    np.testing.assert_array_equal(gx, np.zeros(3))
    np.testing.assert_allclose(ge, np.full(3, 2.0))


def _uses_second(f):
    return any(getattr(getattr(n.op, "scalar_op", None), "name", None) == "second"
               for n in f.maker.fgraph.toposort())


SHAPED = {
    "scalar": (lambda: gt.dscalar("x"), ()),
    "vector": (lambda: gt.dvector("x"), (4,)),
    "matrix": (lambda: gt.dmatrix("x"), (2, 3)),
    "static-matrix": (lambda: gt.TensorType("float64", (2, 3))("x"), (2, 3)),
    "float32-matrix": (lambda: gt.fmatrix("x"), (3, 2)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", sorted(SHAPED))
def test_a_gradient_constant_in_its_variable_keeps_its_shape_and_its_input(kind, mode):
    make, shape = SHAPED[kind]
    x = make()
    a = RNG.normal(size=shape).astype(x.dtype)
    cost = 2 * x if x.ndim == 0 else (x * 2).sum()
    g = gj.function([x], grad(cost, x), mode=mode)(a)           # used to raise UnusedInputError
    assert g.shape == shape and g.dtype == x.dtype
    np.testing.assert_array_equal(g, np.full(shape, 2.0, dtype=x.dtype))
    # a disconnected input gets zeros of its shape, and is used too
    y = gt.dscalar("y")
    gz = grad(y * 3, x, disconnected_inputs="ignore")
    z = gj.function([x], gz, mode=mode)(a)
    assert z.shape == shape
    np.testing.assert_array_equal(z, np.zeros(shape))
    # known_grads (Lop): no cost holds x in the graph, and the gradient 3 * u needs neither x's values nor
    # its shape (issue 32): a function of u alone computes it, and one that also takes x refuses the
    # unused input, as Theano's does
    u = x.type("u")
    gk = grad(None, x, known_grads={x * 3: u})
    np.testing.assert_allclose(gj.function([u], gk, mode=mode)(a + 1), 3 * (a + 1), rtol=1e-6)
    with pytest.raises(UnusedInputError):
        gj.function([x, u], gk, mode=mode)


def test_the_shape_carrying_broadcast_is_rewritten_away_when_the_shape_is_known():
    x = gt.dscalar("x")
    f = gj.function([x], grad(2 * x, x), mode="FAST_RUN")
    assert not _uses_second(f) and f(5.0) == 2.0
    m = gt.TensorType("float64", (2, 3))("m")
    f = gj.function([m], grad((3 * m).sum(), m), mode="FAST_RUN")
    assert not _uses_second(f) and not f.maker.fgraph.toposort()[:-1]   # a constant (and its copy)
    v = gt.dvector("v")
    f = gj.function([v], grad(gt.dscalar("y"), v, disconnected_inputs="ignore"), mode="FAST_RUN",
                    on_unused_input="ignore")
    assert not _uses_second(f)
    np.testing.assert_array_equal(f(np.ones(5)), np.zeros(5))


@pytest.mark.parametrize("make", [lambda: gt.TensorType("float64", (3,))("x"), lambda: gt.dvector("x")],
                         ids=["static", "dynamic"])
def test_the_shape_carrying_broadcast_does_not_connect_its_variable(make):
    """second(x, g) reads only x's shape (like Shape_i): a linear cost's Hessian is disconnected,
    whether the gradient needed second (static shape) or not."""
    x = make()
    with pytest.raises(DisconnectedInputError):
        hessian((3 * x).sum(), x)
    h = run([x], hessian((3 * x).sum(), x, disconnected_inputs="ignore"), np.ones(3))
    np.testing.assert_array_equal(h, np.zeros((3, 3)))
    m, v = gt.dscalar("m"), gt.dvector("v")
    with pytest.raises(DisconnectedInputError):
        grad(gt.second(m, v).sum(), m)
    np.testing.assert_array_equal(run([m, v], grad(gt.second(m, v).sum(), v), 2.0, np.ones(3)), np.ones(3))
