"""W <- W - s * dot(A, B) as one in-place Gemm into W's buffer (tensor/rewriting/update_inplace.py, link/llvm/ops/blas_gemm.py),
or a fresh result when W cannot be overwritten at run time."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.blas_gemm import Gemm


def _pair(make, *args, steps=2, tol=1e-12):
    """make() -> (inputs, outputs, updates, shared); FAST_RUN and PY on separate copies; compares everything."""
    built = [make() for _ in range(2)]
    fast = gj.function(built[0][0], built[0][1], updates=built[0][2], mode="FAST_RUN")
    ref = gj.function(built[1][0], built[1][1], updates=built[1][2], mode="PY")
    for _ in range(steps):
        np.testing.assert_allclose(fast(*args), ref(*args), rtol=tol, atol=tol)
        for a, b in zip(built[0][3], built[1][3]):
            np.testing.assert_allclose(a.get_value(borrow=True), b.get_value(borrow=True), rtol=tol, atol=tol)
    return fast, built[0][3]


def _gemm_inplace(f):
    return any(isinstance(n.op, Gemm) and n.op.inplace for n in f.maker.fgraph.apply_nodes)


def _update(form, dtype="float64", lr_shared=False):
    def make():
        rng = np.random.default_rng(0)
        w = gj.shared(rng.standard_normal((6, 4)).astype(dtype), name="w")
        a, g = gt.matrix("a", dtype=dtype), gt.matrix("g", dtype=dtype)
        lr = gj.shared(np.asarray(0.1, dtype), name="lr") if lr_shared else np.asarray(0.1, dtype)
        dot = {"plain": lambda: gt.dot(a, g), "at": lambda: gt.dot(a.T, g.T)}[form[0]]()
        new = {"sub_scaled": lambda: w - lr * dot, "sub_scaled_right": lambda: w - dot * lr,
               "add": lambda: w + dot, "add_left": lambda: dot + w, "sub": lambda: w - dot}[form[1]]()
        return [a, g], (w * 1).sum(), [(w, new)], [w]
    return make


def _args(form, dtype="float64"):
    rng = np.random.default_rng(1)
    a, g = rng.standard_normal((6, 5)).astype(dtype), rng.standard_normal((5, 4)).astype(dtype)
    return (a, g) if form[0] == "plain" else (np.ascontiguousarray(a.T), np.ascontiguousarray(g.T))


FORMS = [(d, e) for d in ("plain", "at") for e in ("sub_scaled", "sub_scaled_right", "add", "add_left", "sub")]


@pytest.mark.parametrize("form", FORMS)
def test_forms_match_py_and_write_in_place(form):
    f, (w,) = _pair(_update(form), *_args(form))
    assert _gemm_inplace(f), "the update was not rewritten into an in-place Gemm"
    held = w.get_value(borrow=True)
    f(*_args(form))
    assert w.get_value(borrow=True) is held


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_shared_learning_rate_is_read_at_run_time(dtype):
    form = ("plain", "sub_scaled")
    f, _ = _pair(_update(form, dtype, lr_shared=True), *_args(form, dtype), tol=1e-5 if dtype == "float32" else 1e-12)
    assert _gemm_inplace(f)


N = 520          # above OpenBLAS' K block: a gemm reading its own output would see partial sums


def test_an_operand_aliasing_w_takes_the_separate_path():
    def make():
        w = gj.shared(np.random.default_rng(0).standard_normal((N, N)) / N, name="w")
        x = gt.dmatrix("x")
        return [x], x.sum(), [(w, w - 0.5 * gt.dot(w.T, x))], [w]
    _pair(make, np.eye(N) + 1, steps=2, tol=1e-10)


def test_an_argument_that_is_w_takes_the_separate_path():
    w = gj.shared(np.random.default_rng(0).standard_normal((N, N)) / N, name="w")
    x, g = gt.dmatrix("x"), gt.dmatrix("g")
    f = gj.function([x, g], x.sum(), updates=[(w, w - 0.5 * gt.dot(x, g))], mode="FAST_RUN")
    buf = w.get_value(borrow=True)
    want = buf - 0.5 * (buf @ (np.eye(N) + 1))
    f(buf, np.eye(N) + 1)
    np.testing.assert_allclose(w.get_value(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("v_first", [True, False])
def test_a_product_reading_another_updated_variable(v_first):
    """W's deferred gemm reads V.T while V is updated too: V must not be overwritten before the gemm ran."""
    def make():
        rng = np.random.default_rng(0)
        w = gj.shared(rng.standard_normal((5, 3)), name="w")
        v = gj.shared(rng.standard_normal((4, 5)), name="v")
        x = gt.dmatrix("x")
        ups = [(w, w - 0.1 * gt.dot(v.T, x)), (v, v * 2 + 1)]
        return [x], x.sum(), ups[::-1] if v_first else ups, [w, v]
    _pair(make, np.ones((4, 3)), steps=3)


def test_mismatched_lengths_raise_the_products_error():
    form = ("plain", "sub_scaled")
    built = _update(form)()
    f = gj.function(built[0], built[1], updates=built[2], mode="FAST_RUN")
    a, g = _args(form)
    with pytest.raises(ValueError, match="shapes not aligned"):
        f(a, g[:3])


def test_unusable_w_still_gets_the_update():
    form = ("plain", "sub_scaled")
    a, g = _args(form)
    built = _update(form)()
    f = gj.function(built[0], built[1], updates=built[2], mode="FAST_RUN")
    (w,) = built[3]
    start = w.get_value()
    frozen = start.copy()
    frozen.setflags(write=False)
    w.set_value(frozen, borrow=True)
    f(a, g)
    np.testing.assert_allclose(w.get_value(), start - 0.1 * (a @ g), rtol=1e-12)
    np.testing.assert_array_equal(frozen, start)
    w.set_value(np.asfortranarray(start), borrow=True)
    f(a, g)
    np.testing.assert_allclose(w.get_value(), start - 0.1 * (a @ g), rtol=1e-12)
    wide = np.repeat(a, 2, axis=1)                       # a strided operand BLAS does not take
    w.set_value(start.copy(), borrow=True)
    f(wide[:, ::2], g)
    np.testing.assert_allclose(w.get_value(), start - 0.1 * (a @ g), rtol=1e-12)
    w.set_value(start.copy(), borrow=True)
    f(a[:, :0], g[:0])                                   # k = 0: the product is zero
    np.testing.assert_array_equal(w.get_value(), start)
