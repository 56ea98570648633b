"""Gradients (verify_grad, float64 and float32) and R-ops (against finite differences) of every linalg op."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor import linalg as la
from linalg_inputs import general, lower, spd

pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def _pd(a):
    """A symmetric positive definite matrix from any square a (symmetric perturbations only)."""
    n = a.type.shape[-1] or 4
    return gt.matmul(a, la.mT(a)) + gt.eye(4, dtype=a.dtype) * np.asarray(n, a.dtype)


def _sym(a):
    return a + la.mT(a)


R = np.random.default_rng(3)
# QR's and the SVD's factors are smooth only away from sign choices: a dominant diagonal keeps the
# Householder pivots (and the singular values' gaps) clear of them whatever R drew before
TALL = 2 * np.eye(5, 3) + np.random.default_rng(11).uniform(-0.3, 0.3, (5, 3))
WIDE = TALL.T * np.array([[1.0], [0.7], [0.4]])
A4 = R.uniform(-1, 1, (4, 4))
B4 = R.uniform(-1, 1, (4,))
BM = R.uniform(-1, 1, (4, 2))

GRADS = {
    "cholesky": (lambda a: la.cholesky(_pd(a)), [A4]),
    "cholesky_upper": (lambda a: la.cholesky(_pd(a), lower=False), [A4]),
    "cholesky_batch": (lambda a: la.cholesky(_pd(a)), [R.uniform(-1, 1, (2, 4, 4))]),
    "cho_solve_gp": (lambda a, b: la.cho_solve((la.cholesky(_pd(a)), True), b).sum()
                     + gt.log(la.diagonal(la.cholesky(_pd(a)))).sum(), [A4, B4]),
    "cho_solve_factor": (lambda c, b: la.cho_solve((c, True), b), [lower((4, 4)), BM]),
    "cho_solve_upper": (lambda c, b: la.cho_solve((c, False), b), [lower((4, 4)).T, B4]),
    "chol_inv_diag": (lambda c, w: la.chol_inv_diag(c, w), [lower((4, 4)), B4]),
    "solve_triangular": (lambda a, b: la.solve_triangular(a, b, lower=True), [lower((4, 4)), BM]),
    "solve_triangular_T_unit": (lambda a, b: la.solve_triangular(a, b, trans=1, unit_diagonal=True),
                                [lower((4, 4)).T, B4]),
    "solve": (la.solve, [general((4, 4)), B4]),
    "solve_batch_bcast": (la.solve, [general((2, 4, 4)), BM]),
    "solve_pos": (lambda a, b: la.solve(_pd(a), b, assume_a="pos"), [A4, BM]),
    # a batch of matrices against one vector: the gradient's right-hand sides are a batch of vectors
    "solve_batch_vec": (la.solve, [general((2, 4, 4)), B4]),
    "cho_solve_batch_vec": (lambda a, b: la.cho_solve((la.cholesky(_pd(a)), True), b).sum()
                            + gt.log(la.diagonal(la.cholesky(_pd(a)))).sum(), [R.uniform(-1, 1, (2, 4, 4)), B4]),
    "solve_triangular_batch_vec": (lambda a, b: la.solve_triangular(a, b, lower=True), [lower((2, 4, 4)), B4]),
    "solve_sym": (lambda a, b: la.solve(_sym(a) + 4 * gt.eye(4, dtype=a.dtype), b, assume_a="sym"), [A4, B4]),
    "inv": (la.inv, [general((4, 4))]),
    "det": (la.det, [general((2, 4, 4))]),
    "slogdet": (lambda a: la.slogdet(a)[1], [-general((4, 4))]),
    "eigh_values": (lambda a: la.eigh(_sym(a))[0], [A4]),
    "eigh_vectors": (lambda a: la.eigh(_sym(a))[1] ** 2, [A4]),
    "eigvalsh": (lambda a: la.eigvalsh(_pd(a)), [A4]),
    "svd_values": (lambda a: la.svd(a, compute_uv=False), [WIDE]),
    "svd_reduced": (lambda a: la.svd(a, full_matrices=False)[0] ** 2, [TALL * np.array([1.0, 0.7, 0.4])]),
    "qr": (lambda a: la.qr(a)[1], [TALL]),
    "qr_q": (lambda a: la.qr(a)[0], [TALL]),
    "lu": (lambda a: la.lu(a)[2], [general((4, 4))]),
    "lu_solve": (lambda a, b: la.lu_solve(la.lu_factor(a), b), [general((4, 4)), BM]),
    "lu_tall": (lambda a: la.lu(a)[1] + la.lu(a)[2].sum(), [TALL]),
    "lu_wide_permute_l": (lambda a: la.lu(a, permute_l=True)[0].sum() + la.lu(a, permute_l=True)[1], [WIDE]),
    "pinv_hermitian": (lambda a: la.pinv(_sym(a) + 4 * gt.eye(4, dtype=a.dtype), hermitian=True), [A4]),
    "solve_pos_lower": (lambda a, b: la.solve(_pd(a), b, assume_a="pos", lower=True), [A4, B4]),
    "eigh_general": (lambda a, b: la.eigh(_sym(a), _pd(b))[0].sum() + (la.eigh(_sym(a), _pd(b))[1] ** 2).sum(0),
                     [A4, R.uniform(-1, 1, (4, 4))]),
    "pinv": (la.pinv, [TALL]),
    "lstsq": (lambda a, b: la.lstsq(a, b)[0], [TALL, np.linspace(-1, 1, 5)]),
    "expm": (la.expm, [0.3 * A4]),
    "matrix_power": (lambda a: la.matrix_power(a, 3), [A4]),
    "kron": (la.kron, [A4[:2, :3], BM]),
    "norm_nuc": (lambda a: la.norm(a, "nuc"), [A4]),
    "norm_2": (lambda a: la.norm(a, 2), [A4]),
    "trace": (la.trace, [A4]),
}
FAST = {"expm", "eigh_general", "lstsq",
        "cholesky", "cho_solve_gp", "solve", "inv", "det", "slogdet", "eigh_values", "solve_triangular",
        "chol_inv_diag", "svd_values", "svd_reduced", "lu_solve", "norm_nuc", "qr", "lu", "solve_batch_vec",
        "cho_solve_batch_vec", "solve_triangular_batch_vec"}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_verify_grad_float64(name):
    fun, pt = GRADS[name]
    gj.verify_grad(fun, [np.asarray(p, "float64") for p in pt], n_tests=1, mode="PY",
                   rng=np.random.default_rng(0))


@pytest.mark.parametrize("name", sorted(FAST))
def test_verify_grad_native(name):
    fun, pt = GRADS[name]
    gj.verify_grad(fun, [np.asarray(p, "float64") for p in pt], n_tests=1, mode="FAST_RUN",
                   rng=np.random.default_rng(0))


@pytest.mark.parametrize("name", sorted(GRADS))
def test_verify_grad_float32(name):
    fun, pt = GRADS[name]
    gj.verify_grad(fun, [np.asarray(p, "float32") for p in pt], n_tests=1, mode="PY",
                   rng=np.random.default_rng(0), abs_tol=2e-2, rel_tol=2e-2)


ROPS = {
    "cholesky": (lambda a: la.cholesky(a), [spd((4, 4))], True),
    "cho_solve": (lambda c, b: la.cho_solve((c, True), b), [lower((4, 4)), BM], False),
    "solve_triangular": (lambda a, b: la.solve_triangular(a, b, lower=True), [lower((4, 4)), B4], False),
    "solve": (la.solve, [general((4, 4)), BM], False),
    "solve_pos": (lambda a, b: la.solve(a, b, assume_a="pos"), [spd((4, 4)), B4], True),
    "inv": (la.inv, [general((4, 4))], False),
    "det": (la.det, [general((4, 4))], False),
    "slogdet": (lambda a: la.slogdet(a)[1], [general((4, 4))], False),
    "eigh_values": (lambda a: la.eigh(a)[0], [spd((4, 4))], True),
    "pinv": (la.pinv, [TALL], False),
    "pinv_hermitian": (lambda a: la.pinv(a, hermitian=True), [spd((4, 4))], True),
    "expm": (la.expm, [0.3 * A4], False),
    "diagonal": (la.diagonal, [A4], False),
    # no R_op of their own: Rop takes the Lop-of-Lop identity through their L_op
    "svd_values": (lambda a: la.svd(a, compute_uv=False), [WIDE], False),
    "qr": (lambda a: la.qr(a)[1], [TALL], False),
    "lu_solve": (lambda a, b: la.lu_solve(la.lu_factor(a), b), [general((4, 4)), BM], False),
    "chol_inv_diag": (la.chol_inv_diag, [lower((4, 4)), B4], False),
    "lstsq": (lambda a, b: la.lstsq(a, b)[0], [TALL, np.linspace(-1, 1, 5)], False),
}


@pytest.mark.parametrize("name", sorted(ROPS))
def test_rop_matches_finite_differences(name):
    fun, pt, symmetric = ROPS[name]
    rng = np.random.default_rng(1)
    xs = [gt.TensorType("float64", (None,) * np.ndim(p))() for p in pt]
    vs = [x.type() for x in xs]
    out = fun(*xs)
    f = gj.function(xs, out, mode="PY")
    jv = gj.function(xs + vs, gj.Rop(out, xs, vs), mode="FAST_RUN", on_unused_input="ignore")
    dirs = [rng.uniform(-1, 1, np.shape(p)) for p in pt]
    if symmetric:
        dirs[0] = dirs[0] + dirs[0].T
    eps = 1e-6
    num = (f(*[p + eps * d for p, d in zip(pt, dirs)]) - f(*[p - eps * d for p, d in zip(pt, dirs)])) / (2 * eps)
    np.testing.assert_allclose(jv(*pt, *dirs), num, rtol=1e-5, atol=1e-6)
