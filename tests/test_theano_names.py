"""The module paths and names a Theano program imports: theano.tensor.grad, tensor.nnet, tensor.slinalg /
tensor.nlinalg, clone_replace, FallbackWarning (issue #32), written as Theano code with `theano` renamed."""

import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.special

import graphjit as theano
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
import graphjit.tensor as T
import graphjit.tensor.nlinalg as nlinalg
import graphjit.tensor.nnet as nnet
import graphjit.tensor.slinalg as slinalg
from graphjit.tensor import linalg

from op_check import Case, arr, check_case


# --- theano.tensor.grad and friends ------------------------------------------------------------

def test_tensor_grad_is_theano_grad():
    assert T.grad is theano.grad and T.Lop is theano.Lop and T.Rop is theano.Rop
    assert T.jacobian is theano.jacobian and T.hessian is theano.hessian and T.verify_grad is theano.verify_grad
    x = T.dscalar("x")
    gy = T.grad(x ** 2, x)
    assert theano.function([x], gy)(4.0) == 8.0


# --- clone_replace -----------------------------------------------------------------------------

def test_clone_replace_top_level_and_in_graph():
    from graphjit.graph import clone_replace
    assert theano.clone_replace is clone_replace is theano.graph.clone_replace
    x, y = T.dscalar("x"), T.dscalar("y")
    z = x * 2 + 1
    z2 = theano.clone_replace(z, replace={x: y})
    assert theano.function([y], z2)(3.0) == 7.0
    assert theano.function([x], z)(3.0) == 7.0        # the original graph is untouched


# --- tensor.nnet -------------------------------------------------------------------------------

def _sigmoid(x):
    return scipy.special.expit(x)


NNET_CASES = [
    Case("sigmoid", nnet.sigmoid, _sigmoid, [arr((3, 4))]),
    Case("ultra_fast_sigmoid", nnet.ultra_fast_sigmoid, _sigmoid, [arr((3, 4))]),
    Case("hard_sigmoid", nnet.hard_sigmoid, lambda x: np.clip(0.2 * x + 0.5, 0, 1), [arr((3, 4), low=-4, high=4)]),
    Case("softplus", nnet.softplus, lambda x: np.logaddexp(0, x), [arr((3, 4))]),
    Case("softsign", nnet.softsign, lambda x: x / (1 + np.abs(x)), [arr((3, 4))]),
    Case("relu", nnet.relu, lambda x: np.maximum(x, 0), [arr((3, 4))]),
    Case("leaky_relu", lambda x: nnet.relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x), [arr((3, 4))]),
    Case("elu", nnet.elu, lambda x: np.where(x > 0, x, np.expm1(x)), [arr((3, 4))], rtol=1e-5, atol=1e-6),
    Case("selu", nnet.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
         [arr((3, 4))], rtol=1e-5, atol=1e-6),
    Case("softmax", nnet.softmax, lambda x: scipy.special.softmax(x, axis=-1), [arr((3, 4))]),
    Case("logsoftmax", nnet.logsoftmax, lambda x: scipy.special.log_softmax(x, axis=-1), [arr((3, 4))]),
    Case("softmax_with_bias", nnet.softmax_with_bias, lambda x, b: scipy.special.softmax(x + b, axis=-1),
         [arr((3, 4)), arr((4,))]),
    Case("binary_crossentropy", nnet.binary_crossentropy,
         lambda p, t: -(t * np.log(p) + (1 - t) * np.log(1 - p)), [arr((3, 4), low=0.05, high=0.95),
                                                                   arr((3, 4), low=0, high=1)]),
    Case("sigmoid_binary_crossentropy", nnet.sigmoid_binary_crossentropy,
         lambda z, t: np.logaddexp(0, z) - t * z, [arr((3, 4), low=-30, high=30), arr((3, 4), low=0, high=1)],
         rtol=1e-5, atol=1e-6),
    Case("categorical_crossentropy", nnet.categorical_crossentropy,
         lambda p, t: -(t * np.log(p)).sum(-1), [arr((3, 4), low=0.05, high=1), arr((3, 4), low=0, high=1)]),
]


@pytest.mark.parametrize("case", NNET_CASES, ids=str)
def test_nnet_functions(case):
    check_case(case)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_nnet_one_hot_crossentropies(mode):
    x, b = T.dmatrix("x"), T.dvector("b")
    y_idx = T.lvector("y_idx")
    nll, sm = nnet.crossentropy_softmax_1hot(x, y_idx)
    nll_b, sm_b = nnet.crossentropy_softmax_1hot_with_bias(x, b, y_idx)
    by_probs = nnet.crossentropy_categorical_1hot(nnet.softmax(x), y_idx)
    f = theano.function([x, b, y_idx], [nll, sm, nll_b, sm_b, by_probs], mode=mode)
    xv = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 800.0]])
    bv = np.array([0.1, 0.2, -0.3])
    labels = np.array([2, 0])
    logp = scipy.special.log_softmax(xv, axis=-1)
    logp_b = scipy.special.log_softmax(xv + bv, axis=-1)
    got = f(xv, bv, labels)
    np.testing.assert_allclose(got[0], -logp[[0, 1], labels])
    np.testing.assert_allclose(got[1], np.exp(logp))
    np.testing.assert_allclose(got[2], -logp_b[[0, 1], labels])
    np.testing.assert_allclose(got[3], np.exp(logp_b))
    np.testing.assert_allclose(got[4], -logp[[0, 1], labels])     # 800 - 0.5: finite through log_softmax


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_sigmoid_binary_crossentropy_gradient_is_finite_at_extremes(mode):
    z, t = T.dvector("z"), T.dvector("t")
    cost = nnet.sigmoid_binary_crossentropy(z, t).sum()
    f = theano.function([z, t], [cost, T.grad(cost, z)], mode=mode)
    zv, tv = np.array([-800.0, -30.0, 0.0, 30.0, 800.0]), np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    value, g = f(zv, tv)
    np.testing.assert_allclose(value, (np.logaddexp(0, zv) - tv * zv).sum())
    np.testing.assert_allclose(g, scipy.special.expit(zv) - tv, rtol=1e-7, atol=1e-12)


def test_conv2d_is_named_as_not_provided():
    x = T.tensor4("x")
    with pytest.raises(NotImplementedError, match="conv2d is not provided"):
        nnet.conv2d(x, T.tensor4("w"))
    with pytest.raises(NotImplementedError, match="conv3d is not provided"):
        nnet.conv3d(T.tensor5("x"), T.tensor5("w"))


def test_nnet_is_reachable_as_theano_code_writes_it():
    assert T.nnet is nnet and T.nnet.sigmoid is T.sigmoid
    for name in nnet.__all__:
        assert callable(getattr(nnet, name)), name


# --- tensor.slinalg / tensor.nlinalg -----------------------------------------------------------

def test_slinalg_and_nlinalg_alias_linalg():
    assert slinalg.cholesky is linalg.cholesky and slinalg.solve is linalg.solve
    assert slinalg.expm is linalg.expm and slinalg.kron is linalg.kron
    assert nlinalg.matrix_inverse is linalg.inv and nlinalg.det is linalg.det and nlinalg.eig is linalg.eig
    assert nlinalg.eigh is linalg.eigh and nlinalg.svd is linalg.svd and nlinalg.qr is linalg.qr
    assert nlinalg.pinv is linalg.pinv and nlinalg.trace is linalg.trace
    for module in (slinalg, nlinalg):
        for name in module.__all__:
            assert getattr(module, name) is not None, name


def _spd(n):
    a = np.random.default_rng(3).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_slinalg_theano_names(mode):
    a, b = T.dmatrix("a"), T.dmatrix("b")
    outs = [slinalg.solve_lower_triangular(a, b), slinalg.solve_upper_triangular(a, b),
            slinalg.solve_symmetric(a, b), slinalg.cholesky(a)]
    f = theano.function([a, b], outs, mode=mode)
    av, bv = _spd(4), np.arange(8.0).reshape(4, 2)
    low, up, sym, chol = f(av, bv)
    np.testing.assert_allclose(low, scipy.linalg.solve_triangular(av, bv, lower=True))
    np.testing.assert_allclose(up, scipy.linalg.solve_triangular(av, bv, lower=False))
    np.testing.assert_allclose(sym, np.linalg.solve(av, bv))
    np.testing.assert_allclose(chol, np.linalg.cholesky(av))


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_nlinalg_theano_names(mode):
    m, v = T.dmatrix("m"), T.dvector("v")
    outs = [nlinalg.matrix_inverse(m), nlinalg.extract_diag(m), nlinalg.alloc_diag(v), nlinalg.diag(v),
            nlinalg.diag(m), nlinalg.matrix_dot(m, m, m), nlinalg.det(m), nlinalg.trace(m)]
    f = theano.function([m, v], outs, mode=mode)
    mv, vv = _spd(3), np.array([1.0, 2.0, 3.0])
    inv, ext, alloc, dv, dm, dot3, det, tr = f(mv, vv)
    np.testing.assert_allclose(inv, np.linalg.inv(mv))
    np.testing.assert_array_equal(ext, np.diag(mv))
    np.testing.assert_array_equal(alloc, np.diag(vv))
    np.testing.assert_array_equal(dv, np.diag(vv))
    np.testing.assert_array_equal(dm, np.diag(mv))
    np.testing.assert_allclose(dot3, mv @ mv @ mv)
    np.testing.assert_allclose(det, np.linalg.det(mv))
    np.testing.assert_allclose(tr, np.trace(mv))
    with pytest.raises(TypeError, match="vector or a matrix"):
        nlinalg.diag(T.tensor3("t"))


# --- FallbackWarning ---------------------------------------------------------------------------

def test_fallback_warning_is_importable_from_graphjit():
    from graphjit.link.llvm.ir.fallback import FallbackWarning as old_path
    assert theano.FallbackWarning is old_path
    assert issubclass(theano.FallbackWarning, UserWarning)


class _Perform(Op):
    """An op with only a perform (and a native alternative to name): it always falls back."""

    __props__ = ()
    native_alternative = "x * 2 (compiled natively)"

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] * 2


def test_fallback_warning_names_the_users_line_and_the_native_alternative():
    a = T.dmatrix("a")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = theano.function([a], _Perform()(a), mode="FAST_RUN")
    (w,) = [w for w in caught if issubclass(w.category, theano.FallbackWarning)]
    assert w.filename == __file__
    assert "_Perform" in str(w.message) and "native alternative" in str(w.message) and "x * 2" in str(w.message)
    np.testing.assert_allclose(f(np.diag([2.0, 1.0])), np.diag([4.0, 2.0]))


def test_theano_dot_as_the_scan_page_uses_it():
    """theano.dot (Theano's scan page: ``theano.dot(x_tm1, W)``) is graphjit.dot, tensor.dot."""
    assert theano.dot is T.dot
    W, x0 = T.dmatrix("W"), T.dvector("x0")
    out, _ = theano.scan(lambda x_tm1, W: T.tanh(theano.dot(x_tm1, W)), outputs_info=x0, non_sequences=W,
                         n_steps=3)
    w, v = np.eye(2) * 0.5, np.array([1.0, -2.0])
    want = [np.tanh(v @ w)]
    for _ in range(2):
        want.append(np.tanh(want[-1] @ w))
    for mode in ("PY", "FAST_RUN"):
        np.testing.assert_allclose(theano.function([W, x0], out, mode=mode)(w, v), want)


# --- theano.sandbox.rng_mrg --------------------------------------------------------------------

def test_sandbox_rng_mrg_streams():
    from graphjit.sandbox.rng_mrg import MRG_RandomStreams
    srng = MRG_RandomStreams(seed=234)
    assert isinstance(srng, T.RandomStream)
    rv = srng.uniform(size=(2, 2))
    assert rv.rng in [u[0] for u in srng.updates()]
    draw = theano.function([], rv, mode="PY")
    assert not np.array_equal(draw(), draw())
