"""Blockwise and vectorize against numpy in every mode (FAST_RUN sees the rewritten forms, FAST_COMPILE the loop
nest around the inline core graph), loop broadcasting, core-dimension errors, gradients, rewrites and the
fallback of a core op with no lowering."""

import warnings

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.link.llvm.ir.fallback import FallbackWarning
from graphjit.tensor import linalg as la
from graphjit.tensor.blockwise import Blockwise, vectorize_graph
from graphjit.tensor.elemwise import CAReduce, Elemwise
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

MATVEC = gt.dot(gt.dmatrix(), gt.dvector()).owner.op
EYE3 = 6 * np.eye(3)
LOOP = gj.get_mode("FAST_RUN").excluding("local_blockwise_unwrap")      # keeps the Blockwise: its loop nest


def _np_solve(a, b):
    return np.linalg.solve(a + EYE3, b[..., None])[..., 0]


def _dot_sum_max(x, y):
    return (x * y).sum() + x.max()


def _two(x):
    return x.sum(), x * 2


CASES = [
    Case("matvec", lambda a, v: gt.vectorize(MATVEC, "(m,n),(n)->(m)")(a, v),
         lambda a, v: np.einsum("...ij,...j->...i", a, v), [arr((4, 3, 2)), arr((4, 2))], dtypes=("float64",)),
    Case("matvec_broadcast_loops", lambda a, v: Blockwise(MATVEC, "(m,n),(n)->(m)")(a, v),
         lambda a, v: np.einsum("...ij,...j->...i", a, v), [arr((2, 1, 3, 2)), arr((5, 2))], dtypes=("float64",)),
    Case("solve", lambda a, b: gt.vectorize(la.Solve("gen", 1), "(m,m),(m)->(m)")(a + EYE3, b), _np_solve,
         [arr((4, 3, 3)), arr((2, 1, 3))], rtol=1e-4),
    Case("reduction", lambda m: gt.vectorize(lambda v: v.max(axis=0), "(n,k)->(k)")(m),
         lambda m: m.max(axis=-2), [arr((3, 4, 2))], dtypes=("float64",), zero_len=3),
    Case("function", lambda x, y: gt.vectorize(_dot_sum_max, "(n),(n)->()")(x, y),
         lambda x, y: (x * y).sum(-1) + x.max(-1), [arr((2, 3, 4)), arr((4,))], zero_len=2),
    Case("output_length_from_the_core", lambda x: gt.vectorize(lambda v: v[1:] * 2, "(n)->(m)")(x),
         lambda x: x[..., 1:] * 2, [arr((3, 4))], dtypes=("float64",), zero_len=4),
    Case("function_two_outputs", lambda x: list(gt.vectorize(_two, "(n)->(),(n)")(x)),
         lambda x: [x.sum(-1), x * 2], [arr((3, 4))], dtypes=("float64",)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_blockwise_cases(case):
    check_case(case)


def _compile(inputs, outputs, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no FallbackWarning: the graph is native
        f = gj.function(inputs, outputs, mode=mode)
    assert f.native.fallback_nodes == []
    return f


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_native_and_loop_kept(mode):
    a, v = gt.dtensor3("a"), gt.dmatrix("v")
    f = _compile([a, v], Blockwise(MATVEC, "(m,n),(n)->(m)")(a, v), mode)
    assert [type(n.op) for n in f.maker.fgraph.toposort()] == [Blockwise]


def test_linalg_core_two_outputs_in_the_loop():
    a = gt.dtensor4("a")
    outs = Blockwise(la.SlogDet(), "(m,m)->(),()")(a)
    f = _compile([a], outs, LOOP)
    assert [type(n.op) for n in f.maker.fgraph.toposort()] == [Blockwise]
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4, 4)) + 3 * np.eye(4)
    for val in (x, x[:, :1], x[:0], np.swapaxes(x, -1, -2)[..., ::-1, :]):
        sign, logdet = f(val)
        want = np.linalg.slogdet(val)
        np.testing.assert_allclose(sign, want[0])
        np.testing.assert_allclose(logdet, want[1], rtol=1e-12)
    with pytest.raises(np.linalg.LinAlgError):
        _compile([a], Blockwise(la.Inv(), "(m,m)->(m,m)")(a), LOOP)(np.zeros((1, 2, 3, 3)))


def test_vectorized_solve_is_the_batched_solve():
    a, b = gt.dtensor3("a"), gt.dmatrix("b")
    f = _compile([a, b], gt.vectorize(la.Solve("gen", 1), "(m,m),(m)->(m)")(a, b), "FAST_RUN")
    assert [type(n.op) for n in f.maker.fgraph.toposort()] == [la.Solve]


def test_rewrites_unwrap_elemwise_and_no_loop():
    x, y, m = gt.dmatrix("x"), gt.dvector("y"), gt.dmatrix("m")
    add = Blockwise(gt.add, "(),(n)->(n)")(x, y)            # x: (a, b) one loop dim, y core only
    noloop = Blockwise(MATVEC, "(m,n),(n)->(m)")(m, y)
    f = _compile([x, y, m], [add, noloop], "FAST_RUN")
    ops = {type(n.op) for n in f.maker.fgraph.toposort()}
    assert Blockwise not in ops and Elemwise in ops
    xv, yv, mv = np.ones((2, 3)), np.arange(4.0), np.ones((5, 4))
    got_add, got_dot = f(xv, yv, mv)
    np.testing.assert_allclose(got_add, xv[:, :, None] + yv)
    np.testing.assert_allclose(got_dot, mv @ yv)
    np.testing.assert_allclose(gj.function([x, y], add, mode="PY")(xv, yv), xv[:, :, None] + yv)


@pytest.mark.parametrize("mode", ["PY", "FAST_COMPILE"])
def test_core_and_loop_mismatch_errors(mode):
    a, v = gt.dtensor3("a"), gt.dmatrix("v")
    f = gj.function([a, v], Blockwise(MATVEC, "(m,n),(n)->(m)")(a, v), mode=mode)
    with pytest.raises(ValueError, match="core dimension 'n'"):
        f(np.ones((4, 3, 2)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="loop dimension"):
        f(np.ones((4, 3, 2)), np.ones((3, 2)))


@pytest.mark.parametrize("mode", ["PY", "FAST_COMPILE"])
def test_output_length_from_the_core_needs_a_loop_iteration(mode):
    x = gt.dmatrix("x")
    f = gj.function([x], gt.vectorize(lambda v: v[1:], "(n)->(m)")(x), mode=mode)
    with pytest.raises(ValueError, match="loop"):
        f(np.ones((0, 4)))


def test_static_errors_and_contract():
    with pytest.raises(ValueError, match="core dimension 'n'"):
        Blockwise(MATVEC, "(m,n),(n)->(m)")(gt.tensor("float64", (2, 3, 4)), gt.tensor("float64", (2, 5)))
    with pytest.raises(ValueError, match="loop dimensions"):
        Blockwise(MATVEC, "(m,n),(n)->(m)")(gt.tensor("float64", (2, 3, 4)), gt.tensor("float64", (3, 4)))
    with pytest.raises(TypeError, match="fewer dimensions"):
        Blockwise(MATVEC, "(m,n),(n)->(m)")(gt.dvector(), gt.dvector())
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        Blockwise(MATVEC, "(m,n),(n)>(m)")
    with pytest.raises(ValueError, match="needs a signature"):
        gt.vectorize(lambda x: x)
    out = Blockwise(MATVEC, "(m,n),(n)->(m)")(gt.tensor("float64", (5, 3, 4)), gt.tensor("float64", (1, 4)))
    assert out.type.shape == (5, 3)
    check_op_contract(Blockwise(MATVEC, "(m,n),(n)->(m)"), lambda: [gt.dtensor3(), gt.dmatrix()])
    assert Blockwise(MATVEC, "(m, n), (n) -> (m)") == Blockwise(MATVEC, "(m,n),(n)->(m)")


def test_infer_shape():
    check_infer_shape(lambda a, v: Blockwise(MATVEC, "(m,n),(n)->(m)")(a, v), [arr((2, 1, 3, 2)), arr((5, 2))])


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_gradients(mode):
    rng = np.random.default_rng(0)
    mv = Blockwise(MATVEC, "(m,n),(n)->(m)")
    verify_grad(lambda a, v: mv(a, v), [rng.uniform(-1, 1, (2, 3, 4)), rng.uniform(-1, 1, (1, 4))],
                n_tests=1, mode=mode, rng=rng)
    if mode != "PY":
        return                                  # the others' native forms are the rewritten ops' own
    vsolve = gt.vectorize(la.Solve("gen", 1), "(m,m),(m)->(m)")
    verify_grad(lambda a, b: vsolve(a + EYE3, b), [rng.uniform(-1, 1, (2, 3, 3)), rng.uniform(-1, 1, (3,))],
                n_tests=1, mode=mode, rng=rng)
    vf = gt.vectorize(_dot_sum_max, "(n),(n)->()")
    verify_grad(vf, [rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4,))], n_tests=1, mode=mode, rng=rng)


def test_gradient_through_the_loop_and_rop():
    rng = np.random.default_rng(1)
    a, v = gt.dtensor3("a"), gt.dmatrix("v")
    det = Blockwise(la.Det(), "(m,m)->()")(a)
    ga = gj.grad(det.sum(), a)
    av = rng.uniform(-1, 1, (3, 4, 4)) + 3 * np.eye(4)
    np.testing.assert_allclose(_compile([a], ga, LOOP)(av),
                               np.linalg.det(av)[:, None, None] * np.linalg.inv(av).swapaxes(-1, -2))
    out = Blockwise(MATVEC, "(m,n),(n)->(m)")(a, v)
    da, dv = a.type(), v.type()
    jv = gj.function([a, v, da, dv], gj.Rop(out, [a, v], [da, dv]))
    vals = [av[:, :2], rng.uniform(-1, 1, (3, 4))]
    dirs = [rng.uniform(-1, 1, x.shape) for x in vals]
    want = np.einsum("bij,bj->bi", dirs[0], vals[1]) + np.einsum("bij,bj->bi", vals[0], dirs[1])
    np.testing.assert_allclose(jv(*vals, *dirs), want)


def test_vectorize_graph_batches_a_whole_graph():
    x, w = gt.dvector("x"), gt.dmatrix("w")
    y = gt.tanh(gt.dot(w, x)).sum()
    xs = gt.dmatrix("xs")
    ys = vectorize_graph(y, {x: xs})
    assert ys.type.ndim == 1
    f = _compile([xs, w], ys, "FAST_RUN")
    assert Blockwise in {type(n.op) for n in f.maker.fgraph.toposort()}
    assert CAReduce in {type(n.op) for n in f.maker.fgraph.toposort()}
    xv, wv = np.ones((5, 3)), np.arange(6.0).reshape(2, 3) / 10
    np.testing.assert_allclose(f(xv, wv), np.tanh(xv @ wv.T).sum(-1))


class _ReversedRows(Op):
    """A core op with a Python perform only (no lowering): x[::-1] of a matrix, copied."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0][::-1].copy()


def test_core_op_without_lowering_falls_back():
    a = gt.dtensor3("a")
    out = Blockwise(_ReversedRows(), "(m,n)->(m,n)")(a)
    with pytest.warns(FallbackWarning):
        f = gj.function([a], out)
    assert len(f.native.fallback_nodes) == 1
    x = np.random.default_rng(2).uniform(-0.5, 0.5, (2, 3, 4))
    np.testing.assert_array_equal(f(x), x[:, ::-1])


def test_small_solve_path_pivots_and_reports_singular():
    # n <= 8 solves inline (link/llvm/ops/linalg_small.py), n = 9 through LAPACK: both as numpy's
    a, b = gt.dtensor3("a"), gt.dmatrix("b")
    f = _compile([a, b], gt.vectorize(la.Solve("gen", 1), "(m,m),(m)->(m)")(a, b), "FAST_RUN")
    rng = np.random.default_rng(3)
    for n in (1, 3, 8, 9):
        av, bv = rng.uniform(-1, 1, (4, n, n)), rng.uniform(-1, 1, (4, n))
        av[:, 0, 0] = 0.0 if n > 1 else 0.5                 # needs a row interchange
        np.testing.assert_allclose(f(av, bv), np.linalg.solve(av, bv[..., None])[..., 0], rtol=1e-9)
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]]])
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        f(singular, np.ones((1, 2)))
    nan = gj.function([a, b], la.solve(a, b[..., None], on_error="nan")[..., 0])
    got = nan(np.concatenate([singular, np.eye(2)[None]]), np.ones((2, 2)))
    assert np.isnan(got[0]).all() and np.allclose(got[1], 1.0)
    s32 = gt.ftensor3("s")
    g = _compile([s32], la.solve(s32, np.ones(3, "float32")), "FAST_RUN")
    m32 = (rng.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3)).astype("float32")
    np.testing.assert_allclose(g(m32), np.linalg.solve(m32, np.ones((2, 3, 1), "float32"))[..., 0], rtol=1e-5)


def _self_batching_outputs(a, lower, b, m):
    """Blockwise of each op of rewriting/blockwise.py's SELF_BATCHING (one output each where the others are
    determined up to signs): a (2, 1, 3, 3) well conditioned, lower its Cholesky factor, b (4, 3), m (2, 3, 2)."""
    bw = lambda op, sig, *xs: Blockwise(op, sig)(*xs)  # noqa: E731
    lu, piv = bw(la.LUFactor(), "(m,m)->(m,m),(m)", a)
    return [bw(la.Cholesky(), "(m,m)->(m,m)", a), bw(la.Inv(), "(m,m)->(m,m)", a), bw(la.Det(), "(m,m)->()", a),
            bw(la.SlogDet(), "(m,m)->(),()", a)[1], bw(la.Eigh(), "(m,m)->(m),(m,m)", a)[0],
            bw(la.SVD(), "(m,n)->(m,m),(k),(n,n)", m)[1], abs(bw(la.QR(), "(m,n)->(m,k),(k,n)", m)[1]),
            bw(la.LU(), "(m,m)->(m,m),(m,m),(m,m)", a)[2], lu, piv,
            bw(la.LUSolve(0, 1), "(m,m),(m),(m)->(m)", lu, piv, b), bw(la.Solve("gen", 1), "(m,m),(m)->(m)", a, b),
            bw(la.Solve("gen", 2), "(m,m),(m,k)->(m,k)", a, m[..., :1]),
            bw(la.SolveTriangular(True, 0, False, 1), "(m,m),(m)->(m)", lower, b),
            bw(la.ChoSolve(True, 1), "(m,m),(m)->(m)", lower, b),
            bw(la.CholInvDiag(), "(m,m),(m)->(m,m)", lower[:, 0], b[:2])]   # its batches must have equal ranks


def test_self_batching_linalg_ops_unwrap_to_the_same_values():
    rng = np.random.default_rng(4)
    sym = [gt.dtensor4("a"), gt.dtensor4("lower"), gt.dmatrix("b"), gt.dtensor3("m")]
    outs = _self_batching_outputs(*sym)
    fast = _compile(sym, outs, "FAST_RUN")
    assert Blockwise not in {type(n.op) for n in fast.maker.fgraph.toposort()}
    loop = gj.function(sym, outs, mode=gj.get_mode("PY").excluding("local_blockwise_unwrap"))
    assert Blockwise in {type(n.op) for n in loop.maker.fgraph.toposort()}
    a = rng.uniform(-1, 1, (2, 1, 3, 3))
    a = a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)
    vals = [a, np.linalg.cholesky(a), rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (2, 3, 2))]
    for k, (got, want) in enumerate(zip(fast(*vals), loop(*vals))):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=f"output {k}")
