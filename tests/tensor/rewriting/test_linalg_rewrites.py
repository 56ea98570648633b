"""tensor/rewriting/linalg.py: inv products become solves, log(det) slogdet, factored and triangular matrices
use the cheaper routines, cholesky(a @ a.T) stays; every rewritten graph still agrees with numpy."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor import linalg as la
from graphjit.tensor.rewriting.linalg import assume_positive_definite, assume_triangular


def _ops(f):
    return [type(n.op).__name__ for n in f.maker.fgraph.toposort()]


R = np.random.default_rng(5)
A = R.uniform(-1, 1, (4, 4)) + 4 * np.eye(4)
S = A @ A.T
B = R.uniform(-1, 1, 4)


@pytest.mark.parametrize("build", [lambda a, b: gt.dot(la.inv(a), b), lambda a, b: gt.matmul(la.inv(a), b)])
def test_inv_product_becomes_solve(build):
    a, b = gt.dmatrix("a"), gt.dvector("b")
    f = gj.function([a, b], build(a, b))
    assert "Inv" not in _ops(f) and "Solve" in _ops(f)
    np.testing.assert_allclose(f(A, B), np.linalg.solve(A, B))


def test_batched_inv_matmul_becomes_solve():
    a, b = gt.dtensor3("a"), gt.dtensor3("b")
    f = gj.function([a, b], gt.matmul(la.inv(a), b))
    assert "Inv" not in _ops(f)
    av, bv = np.stack([A, A.T]), R.uniform(-1, 1, (2, 4, 3))
    np.testing.assert_allclose(f(av, bv), np.linalg.solve(av, bv))


def test_log_det_becomes_slogdet():
    a = gt.dmatrix("a")
    f = gj.function([a], [gt.log(la.det(a)), gt.log(abs(la.det(a)))])
    assert "Det" not in _ops(f) and "SlogDet" in _ops(f)
    big = 40 * np.eye(300)                       # det overflows float64; its log does not
    got = f(big)
    np.testing.assert_allclose(got, [300 * np.log(40)] * 2)
    neg = np.diag([-1.0, 2.0, 3.0])
    got = f(neg)
    assert np.isnan(got[0]) and np.isclose(got[1], np.log(6))


def test_factored_matrix_reuses_its_cholesky():
    a, b = gt.dmatrix("a"), gt.dvector("b")
    outs = [la.cholesky(a), la.solve(a, b), la.det(a), la.slogdet(a)[1], la.inv(a)]
    f = gj.function([a, b], outs)
    ops = _ops(f)
    assert ops.count("Cholesky") == 1 and not {"Solve", "Det", "SlogDet", "Inv"} & set(ops)
    got = f(S, B)
    np.testing.assert_allclose(got[1], np.linalg.solve(S, B))
    np.testing.assert_allclose(got[2], np.linalg.det(S))
    np.testing.assert_allclose(got[3], np.linalg.slogdet(S)[1])
    np.testing.assert_allclose(got[4], np.linalg.inv(S), rtol=1e-10, atol=1e-12)


def test_triangular_matrices_use_triangular_routines():
    a, b = gt.dmatrix("a"), gt.dvector("b")
    l = la.cholesky(a)
    f = gj.function([a, b], [la.solve(l, b), la.det(l), la.slogdet(l)[1]])
    assert not {"Solve", "Det", "SlogDet"} & set(_ops(f))
    lv = np.linalg.cholesky(S)
    got = f(S, B)
    np.testing.assert_allclose(got[0], np.linalg.solve(lv, B))
    np.testing.assert_allclose(got[1], np.linalg.det(lv))
    np.testing.assert_allclose(got[2], np.linalg.slogdet(lv)[1])
    t = assume_triangular(gt.dmatrix("t"), lower=False)
    g = gj.function([t, b], la.solve(t, b))
    assert "SolveTriangular" in _ops(g)
    np.testing.assert_allclose(g(np.triu(A), B), np.linalg.solve(np.triu(A), B))


def test_assumed_positive_definite_solve_uses_cholesky():
    p, b = assume_positive_definite(gt.dmatrix("p")), gt.dvector("b")
    f = gj.function([p, b], [la.solve(p, b), la.slogdet(p)[1]])
    assert "Cholesky" in _ops(f) and "Solve" not in _ops(f)
    np.testing.assert_allclose(f(S, B)[0], np.linalg.solve(S, B))


def test_cholesky_of_a_product_is_left_alone():
    a = gt.dmatrix("a")
    f = gj.function([a], la.cholesky(gt.dot(a, a.T)))
    assert "Cholesky" in _ops(f)
    np.testing.assert_allclose(f(A), np.linalg.cholesky(A @ A.T))


def test_nan_mode_ops_are_not_replaced_by_raising_ones():
    a, b = gt.dmatrix("a"), gt.dvector("b")
    f = gj.function([a, b], [la.cholesky(a, on_error="nan"), la.solve(a, b, on_error="nan")])
    assert "ChoSolve" not in _ops(f)
