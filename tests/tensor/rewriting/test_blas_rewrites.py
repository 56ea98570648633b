"""The BLAS specializations (tensor/rewriting/blas.py): each fires where it should, computes numpy's
numbers (PY and FAST_RUN), and leaves the graph alone where it must not fire."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.mode import Mode
from graphjit.graph.basic import graph_inputs

PY = Mode(linker="py", rewriter="fast_run")
RNG = np.random.default_rng(5)
A, W = gt.dmatrix("A"), gt.dmatrix("W")
x, y, z = gt.dvector("x"), gt.dvector("y"), gt.dvector("z")
a, b = gt.dscalar("a"), gt.dscalar("b")
INPUTS = [A, W, x, y, z, a, b]


def values(m=5, n=4):
    return [RNG.normal(size=(m, n)), RNG.normal(size=(n, m)), RNG.normal(size=n), RNG.normal(size=m),
            RNG.normal(size=m), 0.7, -1.3]


def names(f):
    return [str(node.op) for node in f.maker.fgraph.toposort()]


def run(out, want, mode=PY, inputs=INPUTS, vals=None):
    """Compile out in mode and in FAST_RUN, compare both with numpy's want(*values); return the op names."""
    vals = values() if vals is None else vals
    f = gj.function(inputs, out, mode=mode, on_unused_input="ignore")
    g = gj.function(inputs, out, mode=mode.clone(linker="llvm") if isinstance(mode, Mode) else "FAST_RUN",
                    on_unused_input="ignore")
    for fn in (f, g):
        np.testing.assert_allclose(fn(*vals), want(*vals), rtol=1e-12, atol=1e-14)
    return names(f)


def without(*rewrites):
    return PY.excluding(*rewrites)


# --- dot -> Gemv / Ger -----------------------------------------------------------------------------
@pytest.mark.parametrize("build, want, op", [
    (lambda: gt.dot(A, x), lambda A, W, x, y, z, a, b: A @ x, "Gemv{N}"),
    (lambda: gt.dot(y, A), lambda A, W, x, y, z, a, b: y @ A, "Gemv{T}"),
    (lambda: gt.dot(W.T, x), lambda A, W, x, y, z, a, b: W.T @ x, "Gemv{T}"),   # the flag absorbs .T
    (lambda: A @ x, lambda A, W, x, y, z, a, b: A @ x, "Gemv{N}"),
    (lambda: gt.dot(y.dimshuffle(0, "x"), x.dimshuffle("x", 0)), lambda A, W, x, y, z, a, b: np.outer(y, x),
     "Ger"),
], ids=["mv", "vm", "transposed", "matmul_operator", "column_by_row"])
def test_dot_to_gemv_or_ger(build, want, op):
    assert run(build(), want) == [op]
    assert names(gj.function(INPUTS, build(), mode=without("local_dot_to_gemv"), on_unused_input="ignore")) \
        != [op]


def test_one_column_or_one_row_matrix_product_is_a_gemv():
    """dot(A, B) with B of static shape (k, 1), or A of (1, k): a Gemv between DimShuffles, not a Dot."""
    col, row = gt.TensorType("float64", (None, 1))("col"), gt.TensorType("float64", (1, None))("row")
    ins = [A, W, col, row]
    vals = [RNG.normal(size=(5, 4)), RNG.normal(size=(4, 5)), RNG.normal(size=(4, 1)), RNG.normal(size=(1, 5))]
    cases = [(gt.dot(A, col), lambda A, W, c, r: A @ c, "Gemv{N}"),
             (gt.dot(A.T, gt.dot(A, col)), lambda A, W, c, r: A.T @ (A @ c), "Gemv{T}"),
             (gt.dot(row, A), lambda A, W, c, r: r @ A, "Gemv{T}"),
             (gt.dot(row, W.T), lambda A, W, c, r: r @ W.T, "Gemv{N}")]
    for out, want, op in cases:
        ops = run(out, want, inputs=ins, vals=vals)
        assert op in ops and "Dot" not in ops, ops
        assert out.type.shape == gj.function(ins, out, on_unused_input="ignore").maker.fgraph.outputs[0].type.shape
    f = gj.function(ins, gt.dot(A, col), mode="FAST_RUN", on_unused_input="ignore")
    with pytest.raises(ValueError):
        f(vals[0], vals[1], RNG.normal(size=(5, 1)), vals[3])


def test_transpose_that_drops_an_axis_is_not_absorbed():
    t = gt.TensorType("float64", (4, 2, 1))("t")
    f = gj.function([t, x], gt.dot(t.dimshuffle(1, 0), x), mode="FAST_RUN")
    tv, xv = RNG.normal(size=(4, 2, 1)), RNG.normal(size=4)
    np.testing.assert_allclose(f(tv, xv), tv[:, :, 0].T @ xv)


@pytest.mark.parametrize("build", [
    lambda: gt.dot(gt.lmatrix("i"), gt.lvector("j")),                       # integers: no BLAS
    lambda: gt.dot(gt.fmatrix("f"), gt.dvector("d")),                       # mixed dtypes
    lambda: gt.dot(gt.dmatrix("p"), gt.dmatrix("q")),                       # matrix product
    lambda: gt.dot(gt.dvector("p"), gt.dvector("q")),                       # inner product
    lambda: gt.dot(gt.dmatrix("p"), gt.TensorType("float64", (1, None))("q")),  # inner length not static 1
], ids=["int", "mixed", "mm", "vv", "not_column"])
def test_dot_left_alone(build):
    out = build()
    f = gj.function(list(graph_inputs([out])), out, mode=PY)
    assert names(f) == ["Dot"]


def test_float32_gemv_keeps_its_dtype():
    fa, fx = gt.fmatrix("fa"), gt.fvector("fx")
    f = gj.function([fa, fx], gt.dot(fa, fx) * np.float32(2), mode="FAST_RUN")
    av, xv = RNG.normal(size=(40, 30)).astype("float32"), RNG.normal(size=30).astype("float32")
    got = f(av, xv)
    assert got.dtype == np.float32 and names(f) == ["Gemv{N}"]
    np.testing.assert_allclose(got, 2 * av @ xv, rtol=1e-5)


# --- Gemv scaling and y --------------------------------------------------------------------------
@pytest.mark.parametrize("build, want, op", [
    (lambda: 2.0 * gt.dot(A, x), lambda A, W, x, y, z, a, b: 2 * A @ x, "Gemv{N}"),
    (lambda: gt.dot(y, A) * a, lambda A, W, x, y, z, a, b: (y @ A) * a, "Gemv{T}"),
    (lambda: y + gt.dot(A, x), lambda A, W, x, y, z, a, b: y + A @ x, "Gemv{N,y}"),
    (lambda: gt.dot(A, x) + y, lambda A, W, x, y, z, a, b: A @ x + y, "Gemv{N,y}"),
    (lambda: b * y + a * gt.dot(A, x), lambda A, W, x, y, z, a, b: b * y + a * (A @ x), "Gemv{N,y}"),
    (lambda: y - gt.dot(A, x), lambda A, W, x, y, z, a, b: y - A @ x, "Gemv{N,y}"),
    (lambda: a * (y + gt.dot(A, x)), lambda A, W, x, y, z, a, b: a * (y + A @ x), "Gemv{N,y}"),
], ids=["const_scale", "scalar_scale", "y_plus", "plus_y", "beta_alpha", "minus", "scaled_y_form"])
def test_gemv_scale_and_add_y(build, want, op):
    assert run(build(), want) == [op]


def test_gemv_y_broadcasts_like_numpy():
    one = gt.dvector("one")
    out = one + gt.dot(A, x)
    f = gj.function([one, A, x], out, mode=PY)
    g = gj.function([one, A, x], out, mode="FAST_RUN")
    assert names(f) == ["Gemv{N,y}"]
    av, xv = RNG.normal(size=(30, 20)), RNG.normal(size=20)
    for fn in (f, g):
        np.testing.assert_allclose(fn(np.array([3.0]), av, xv), 3.0 + av @ xv, rtol=1e-12)
        np.testing.assert_allclose(fn(np.arange(4.0), av[:1], xv), np.arange(4.0) + av[:1] @ xv, rtol=1e-12)
        with pytest.raises(ValueError):
            fn(np.ones(3), av, xv)


def test_gemv_rewrites_left_alone():
    shared = gt.dot(A, x)
    f = gj.function([A, x, y], [shared + y, shared * 2.0], mode=PY)   # the product has two readers
    assert sum(n.startswith("Gemv") for n in names(f)) == 1 and "Elemwise{add}" in " ".join(names(f))
    g = gj.function([A, x, z], gt.dot(A, x) * z, mode=PY)             # a vector factor is not alpha
    assert any("mul" in n for n in names(g))
    m = gt.dmatrix("m")
    h = gj.function([A, x, m], m + gt.dot(A, x), mode=PY)             # a matrix y: broadcasting, not gemv
    assert names(h)[-1].startswith("Elemwise{add")
    k = gj.function([A, x, y], y + gt.dot(A, x), mode=without("local_gemv_add_y"))
    assert "Gemv{N,y}" not in names(k)


# --- Ger -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("build, want", [
    (lambda: W + a * gt.outer(x, y), lambda A, W, x, y, z, a, b: W + a * np.outer(x, y)),
    (lambda: gt.outer(y, x) + A, lambda A, W, x, y, z, a, b: np.outer(y, x) + A),
    (lambda: A - 0.1 * gt.outer(y, x), lambda A, W, x, y, z, a, b: A - 0.1 * np.outer(y, x)),
    (lambda: A + (y.dimshuffle(0, "x") * a) * (x.dimshuffle("x", 0) * b),
     lambda A, W, x, y, z, a, b: A + (y[:, None] * a) * (x[None, :] * b)),
    (lambda: A + gt.dot(y.dimshuffle(0, "x"), x.dimshuffle("x", 0)),          # via Ger without A
     lambda A, W, x, y, z, a, b: A + np.outer(y, x)),
    (lambda: A[:1] + gt.outer(y, x), lambda A, W, x, y, z, a, b: A[:1] + np.outer(y, x)),   # A broadcasts
], ids=["plus_scaled", "outer_first", "minus", "factors_anywhere", "from_dot", "broadcast_a"])
def test_ger(build, want):
    out = build()
    assert run(out, want)[-1] == "Ger{A}"
    f = gj.function(INPUTS, out, mode=PY, on_unused_input="ignore")
    assert not [n for n in f.maker.fgraph.apply_nodes if n.outputs[0].ndim == 2 and "Elemwise" in str(n.op)]


def test_outer_materialized_becomes_ger_fused_one_does_not():
    assert run(gt.outer(y, x) * 2.0, lambda A, W, x, y, z, a, b: 2 * np.outer(y, x)) == ["Ger"]
    f = gj.function([x, y], gt.exp(gt.outer(y, x)), mode=PY)         # an elementwise reader: fused instead
    assert not any("Ger" in n for n in names(f))
    g = gj.function([x, y, W], gt.dot(gt.outer(y, x), W), mode=PY)   # read by Dot: materialized anyway
    assert "Ger" in names(g)


def test_ger_left_alone():
    fx = gt.fvector("fx")
    f = gj.function([A, fx, y], A + gt.outer(y, fx), mode=PY)        # mixed dtypes
    assert not any("Ger" in n for n in names(f))
    m = gt.dmatrix("m")
    g = gj.function([A, m, x], A + m * x.dimshuffle("x", 0), mode=PY)   # not an outer product
    assert not any("Ger" in n for n in names(g))
    o = gt.outer(y, x)
    h = gj.function([A, x, y], [A + o, o], mode=PY)                  # the outer product is needed anyway
    assert not any("Ger{A" in n for n in names(h))
    k = gj.function([A, x, y], A + gt.outer(y, x), mode=without("local_ger"))
    assert not any("Ger{A" in n for n in names(k))


# --- inplace -------------------------------------------------------------------------------------
def test_inplace_when_the_destroyed_input_is_provably_big_enough():
    As = gt.TensorType("float64", (5, 4))("As")
    xs, ys = gt.TensorType("float64", (4,))("xs"), gt.TensorType("float64", (5,))("ys")
    vals = [RNG.normal(size=(5, 4)), RNG.normal(size=4), RNG.normal(size=5)]
    kept = [v.copy() for v in vals]
    for out, op, want in [
        (gt.exp(ys) + gt.dot(As, xs), "Gemv{N,y,inplace}", np.exp(vals[2]) + vals[0] @ vals[1]),
        (gt.exp(As) + gt.outer(ys, xs), "Ger{A,inplace}", np.exp(vals[0]) + np.outer(vals[2], vals[1])),
    ]:
        for mode in (PY, "FAST_RUN"):
            f = gj.function([As, xs, ys], out, mode=mode)
            assert op in names(f)
            np.testing.assert_allclose(f(*vals), want, rtol=1e-12)
    for v, k in zip(vals, kept):
        assert np.array_equal(v, k)
    f = gj.function([A, x, y], gt.exp(y) + gt.dot(A, x), mode=PY)   # y may be the length-1 operand
    assert "Gemv{N,y}" in names(f)
    g = gj.function([A, x, y], gt.exp(y) + gt.dot(A, x), mode=PY.excluding("inplace"))
    assert "Gemv{N,y}" in names(g)
    h = gj.function([A, x, y], gt.exp(A) + gt.outer(y, x), mode=PY)
    assert "Ger{A}" in names(h)


def test_inplace_never_touches_protected_inputs():
    As = gt.TensorType("float64", (5, 4))("As")
    xs, ys = gt.TensorType("float64", (4,))("xs"), gt.TensorType("float64", (5,))("ys")
    f = gj.function([As, xs, ys], ys + gt.dot(As, xs), mode=PY)
    assert names(f) == ["Gemv{N,y}"]
    vals = [RNG.normal(size=(5, 4)), RNG.normal(size=4), RNG.normal(size=5)]
    kept = vals[2].copy()
    f(*vals)
    assert np.array_equal(vals[2], kept)
    g = gj.function([As, xs, gj.In(ys, mutable=True)], ys + gt.dot(As, xs), mode=PY)
    assert "Gemv{N,y,inplace}" in names(g)


def test_training_step_uses_ger_and_gemv():
    """A logistic-regression step: the gradients come out as Gemv/Ger and the numbers are numpy's."""
    X, w, t = gt.dmatrix("X"), gt.dvector("w"), gt.dvector("t")
    p = gt.sigmoid(gt.dot(X, w))
    cost = gt.sum((p - t) ** 2)
    gw = gj.grad(cost, w)
    f = gj.function([X, w, t], w - 0.1 * gw, mode="FAST_RUN")
    assert any(n.startswith("Gemv") for n in names(f))
    Xv, wv, tv = RNG.normal(size=(50, 8)), RNG.normal(size=8), RNG.uniform(size=50)
    pv = 1 / (1 + np.exp(-Xv @ wv))
    want = wv - 0.1 * (Xv.T @ (2 * (pv - tv) * pv * (1 - pv)))
    np.testing.assert_allclose(f(Xv, wv, tv), want, rtol=1e-10)
