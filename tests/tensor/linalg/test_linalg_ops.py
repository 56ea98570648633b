"""graphjit.tensor.linalg against numpy/scipy through op_check, in every mode (values, dtypes, layouts, zero
size, batches, bad input)."""

import numpy as np
import pytest
import scipy.linalg as sl

from graphjit.tensor import linalg as la
from graphjit.tensor import matmul as gt_matmul
from graphjit.link.llvm.ops.linalg_small import SMALL_CHOLESKY_MAX, SMALL_TRSM_MAX
from linalg_inputs import fixed, general, lower, spd
from op_check import Case, arr, check_case

# perform-only ops (lu, qr, svd, eig, pinv, expm, lstsq) call back into Python in FAST_RUN: that is expected here
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def _np_chol_upper(a):
    return np.swapaxes(np.linalg.cholesky(a), -1, -2)


def _eigh(a):
    w, v = la.eigh(a)
    return w, v * v                 # signs of eigenvectors differ between LAPACK builds


def _ref_eigh(a):
    w, v = np.linalg.eigh(a)
    return w, v * v


def _svd_product(a):
    u, s, vh = la.svd(a, full_matrices=False)
    return gt_matmul(u * s.dimshuffle(*range(s.ndim - 1), "x", s.ndim - 1), vh)


def _svd_full_gram(a):
    u, s, vh = la.svd(a)
    return [gt_matmul(u, la.mT(u)), gt_matmul(la.mT(vh), vh)]


def _identities(a):
    return [np.eye(a.shape[-2], dtype=a.dtype), np.eye(a.shape[-1], dtype=a.dtype)]


def _batched_tri(lo):
    def f(a, b):
        return np.linalg.solve(np.tril(a) if lo else np.triu(a), b)
    return f


def _ref_lu(permute_l=False):
    """scipy.linalg.lu, except that an empty m x n matrix's P is the m x m identity (scipy gives 0 x 0)."""
    def f(a):
        if a.size:
            return list(sl.lu(a, permute_l=permute_l))
        m, n = a.shape[-2:]
        k = min(m, n)
        lu = [np.zeros(a.shape[:-2] + (m, k), a.dtype), np.zeros(a.shape[:-2] + (k, n), a.dtype)]
        return lu if permute_l else [np.broadcast_to(np.eye(m, dtype=a.dtype), a.shape[:-2] + (m, m))] + lu
    return f


def _ref_eigh_general(a, b):
    w, v = sl.eigh(a, b)
    return [w, v * v, sl.eigh(a, b, lower=False, eigvals_only=True)]


def _eigh_general(a, b):
    w, v = la.eigh(a, b)
    return [w, v * v, la.eigvalsh(a, b, lower=False)]


def _ref_eigh_general_batch(a, b):
    outs = [_ref_eigh_general(x, b) for x in a]
    return [np.stack([o[i] for o in outs]).reshape(a.shape[:-2] + outs[0][i].shape) if outs else
            np.zeros(a.shape[:-1] if i != 1 else a.shape, a.dtype) for i in range(3)]


def _garbage(x, upper):
    """x with the other triangle overwritten (only one triangle may be read)."""
    junk = np.random.default_rng(7).uniform(-5, 5, x.shape)
    return x + (np.triu(junk, 1) if upper else np.tril(junk, -1))


def _expm_inputs():
    """Matrices whose norms pick different Pade degrees and scalings (0.01: degree 3, 30: degree 13, s > 0)."""
    base = np.random.default_rng(5).uniform(-1, 1, (3, 4, 4))
    return base * np.array([0.01, 0.5, 8.0])[:, None, None]


def _well_lower(n):
    """An n x n lower triangular matrix whose solves stay well conditioned (small off-diagonal entries)."""
    return np.tril(np.random.default_rng(3).uniform(-1, 1, (n, n))) / n + np.eye(n)


SPD = fixed(spd((4, 4)))
SPD_B = fixed(spd((3, 4, 4)))
LOW = fixed(lower((4, 4)))
GEN = fixed(general((4, 4)))
GEN_B = fixed(general((2, 4, 4)))

CASES = [
    Case("cholesky", la.cholesky, np.linalg.cholesky, [SPD], zero_len=4),
    Case("cholesky_batch", la.cholesky, np.linalg.cholesky, [SPD_B], zero_len=4),
    Case("cholesky_batch_zero", la.cholesky, np.linalg.cholesky, [SPD_B], zero_len=3),
    Case("cholesky_upper", lambda a: la.cholesky(a, lower=False), _np_chol_upper, [SPD]),
    # the small kernel's two column groups (n = 40), and ?potrf above SMALL_CHOLESKY_MAX
    Case("cholesky_upper_wide", lambda a: la.cholesky(a, lower=False), _np_chol_upper, [fixed(spd((40, 40)))],
         zero_size=False),
    Case("cholesky_lapack", la.cholesky, np.linalg.cholesky, [fixed(spd((SMALL_CHOLESKY_MAX + 1,) * 2))],
         zero_size=False),
    Case("cholesky_not_square", la.cholesky, np.linalg.cholesky, [arr((3, 4))], zero_size=False),
    Case("cholesky_int", la.cholesky, np.linalg.cholesky, [SPD], ("int64",), zero_size=False),
    Case("solve_triangular_vec", lambda a, b: la.solve_triangular(a, b, lower=True),
         lambda a, b: sl.solve_triangular(a, b, lower=True), [LOW, arr((4,))], zero_len=4),
    Case("solve_triangular_mat_T", lambda a, b: la.solve_triangular(a, b, lower=True, trans=1),
         lambda a, b: sl.solve_triangular(a, b, lower=True, trans=1), [LOW, arr((4, 3))], zero_len=4),
    Case("solve_triangular_upper", lambda a, b: la.solve_triangular(a, b),
         lambda a, b: sl.solve_triangular(a, b), [fixed(lower((4, 4)).T), arr((4, 2))], zero_len=4),
    # the small kernel's column groups (37 = a group of 32 and a partial one) and ?trsm above SMALL_TRSM_MAX
    Case("solve_triangular_small_wide", lambda a, b: la.solve_triangular(a, b, lower=True, trans=1),
         lambda a, b: sl.solve_triangular(a, b, lower=True, trans=1), [fixed(_well_lower(9)), arr((9, 37))],
         zero_size=False),
    Case("solve_triangular_lapack", lambda a, b: la.solve_triangular(a, b),
         lambda a, b: sl.solve_triangular(a, b), [fixed(_well_lower(SMALL_TRSM_MAX + 1).T), arr((65, 3))],
         zero_size=False),
    Case("solve_triangular_unit", lambda a, b: la.solve_triangular(a, b, lower=True, unit_diagonal=True),
         lambda a, b: sl.solve_triangular(a, b, lower=True, unit_diagonal=True), [LOW, arr((4, 2))]),
    Case("solve_triangular_batch_bcast", lambda a, b: la.solve_triangular(a, b, lower=True), _batched_tri(True),
         [fixed(lower((3, 4, 4))), arr((3, 4, 2))], zero_len=3),
    Case("solve_triangular_bad_b", lambda a, b: la.solve_triangular(a, b, lower=True),
         lambda a, b: sl.solve_triangular(a, b, lower=True), [LOW, arr((5,))], zero_size=False),
    Case("cho_solve", lambda c, b: la.cho_solve((c, True), b),
         lambda c, b: sl.cho_solve((c, True), b), [fixed(np.linalg.cholesky(spd((4, 4)))), arr((4,))], zero_len=4),
    Case("cho_solve_upper_mat", lambda c, b: la.cho_solve((c, False), b),
         lambda c, b: sl.cho_solve((c, False), b), [fixed(np.linalg.cholesky(spd((4, 4))).T), arr((4, 3))],
         zero_len=4),
    Case("solve", la.solve, np.linalg.solve, [GEN, arr((4,))], zero_len=4),
    Case("solve_mat", la.solve, np.linalg.solve, [GEN, arr((4, 3))], zero_len=4),
    Case("solve_batch", la.solve, np.linalg.solve, [GEN_B, arr((2, 4, 3))], zero_len=2),
    Case("solve_bcast_a", la.solve, np.linalg.solve, [GEN, arr((2, 4, 3))], zero_len=2),
    Case("solve_bcast_vec", la.solve, np.linalg.solve, [GEN_B, arr((4,))], zero_len=2),
    Case("solve_pos", lambda a, b: la.solve(a, b, assume_a="pos"),
         lambda a, b: sl.solve(a, b, assume_a="pos"), [SPD, arr((4, 2))], zero_len=4),
    Case("solve_sym", lambda a, b: la.solve(a, b, assume_a="sym"),
         lambda a, b: sl.solve(a, b, assume_a="sym"), [fixed(general((4, 4)) + general((4, 4)).T), arr((4,))],
         zero_len=4),
    Case("solve_sym_lower", lambda a, b: la.solve(a, b, assume_a="sym", lower=True),
         lambda a, b: sl.solve(a, b, assume_a="sym", lower=True),
         [fixed(_garbage(general((4, 4)) + general((4, 4)).T, True)), arr((4, 2))], zero_len=4),
    Case("solve_pos_lower", lambda a, b: la.solve(a, b, assume_a="pos", lower=True),
         lambda a, b: sl.solve(a, b, assume_a="pos", lower=True), [fixed(_garbage(spd((4, 4)), True)), arr((4,))],
         zero_len=4),
    Case("solve_lower_triangular_name", lambda a, b: la.solve(a, b, assume_a="lower triangular"),
         lambda a, b: sl.solve_triangular(a, b, lower=True), [fixed(_garbage(lower((4, 4)), True)), arr((4,))],
         zero_len=4),
    Case("solve_not_square", la.solve, np.linalg.solve, [arr((4, 3)), arr((4,))], zero_size=False),
    Case("solve_bad_b", la.solve, np.linalg.solve, [GEN, arr((3,))], zero_size=False),
    Case("solve_bad_batch", la.solve, np.linalg.solve, [GEN_B, arr((3, 4, 2))], zero_size=False),
    Case("solve_singular", la.solve, np.linalg.solve, [fixed(np.ones((3, 3))), arr((3,))], zero_size=False),
    Case("inv", la.inv, np.linalg.inv, [GEN], zero_len=4),
    Case("inv_batch", la.inv, np.linalg.inv, [GEN_B], zero_len=2),
    Case("inv_singular", la.inv, np.linalg.inv, [fixed(np.ones((3, 3)))], zero_size=False),
    Case("det", la.det, np.linalg.det, [GEN], zero_len=4),
    Case("det_batch", la.det, np.linalg.det, [GEN_B], zero_len=4),
    Case("det_singular", la.det, np.linalg.det, [fixed(np.ones((3, 3)))], zero_size=False),
    Case("slogdet", lambda a: list(la.slogdet(a)), lambda a: list(np.linalg.slogdet(a)), [GEN_B], zero_len=4),
    Case("slogdet_neg", lambda a: list(la.slogdet(a)), lambda a: list(np.linalg.slogdet(a)),
         [fixed(-general((3, 3)))], zero_len=3),
    Case("slogdet_singular", lambda a: list(la.slogdet(a)), lambda a: list(np.linalg.slogdet(a)),
         [fixed(np.ones((3, 3)))], zero_size=False),
    Case("eigh", lambda a: list(_eigh(a)), lambda a: list(_ref_eigh(a)), [SPD_B], zero_len=4, rtol=1e-4),
    Case("eigvalsh_upper", lambda a: la.eigvalsh(a, "U"), lambda a: np.linalg.eigvalsh(a, "U"),
         [fixed(general((4, 4)))], zero_len=4, rtol=1e-4),
    Case("diagonal", la.diagonal, lambda a: np.linalg.diagonal(a).copy(), [arr((2, 3, 4))], zero_len=3),
    Case("trace", la.trace, np.linalg.trace, [arr((2, 3, 4))], zero_len=3),
    Case("lu", lambda a: list(la.lu(a)), lambda a: list(sl.lu(a)), [fixed(general((2, 5, 5)) - 3 * np.eye(5))],
         zero_len=5),
    Case("lu_tall", lambda a: list(la.lu(a)), _ref_lu(), [arr((2, 5, 3))], zero_len=3),
    Case("lu_wide_permute_l", lambda a: list(la.lu(a, permute_l=True)), _ref_lu(True), [arr((3, 5))],
         zero_len=3),
    Case("lu_factor_solve", lambda a, b: la.lu_solve(la.lu_factor(a), b),
         lambda a, b: sl.lu_solve(sl.lu_factor(a), b), [GEN, arr((4, 2))], zero_len=4),
    Case("lu_factor", lambda a: list(la.lu_factor(a)), lambda a: list(sl.lu_factor(a)), [GEN_B], zero_size=False),
    Case("lu_solve_trans_vec", lambda a, b: la.lu_solve(la.lu_factor(a), b, trans=1),
         lambda a, b: sl.lu_solve(sl.lu_factor(a), b, trans=1), [GEN, arr((4,))], zero_len=4),
    Case("pinv", la.pinv, np.linalg.pinv, [arr((2, 5, 3))], zero_len=3, rtol=1e-4, atol=1e-5),
    Case("pinv_rank_deficient", lambda a: la.pinv(a, 1e-5), lambda a: np.linalg.pinv(a, 1e-5),
         [fixed(np.outer([1.0, 2, 3], [1.0, -1, 2, 0.5]))],
         zero_size=False, rtol=1e-4, atol=1e-5),
    Case("pinv_hermitian", lambda a: la.pinv(a, hermitian=True), lambda a: np.linalg.pinv(a, hermitian=True),
         [fixed(_garbage(np.diag([3.0, -2.0, 1e-17, 0.5]) + 0.1, False))], zero_len=4, rtol=1e-4, atol=1e-5),
    Case("eigh_general", _eigh_general, _ref_eigh_general_batch,
         [fixed(_garbage(general((2, 4, 4)) + np.swapaxes(general((2, 4, 4)), -1, -2), True)), SPD], zero_len=4,
         rtol=1e-4, atol=1e-5),
    Case("eigh_general_b_not_pd", lambda a, b: la.eigh(a, b)[0], lambda a, b: sl.eigh(a, b)[0],
         [SPD, fixed(-np.eye(4))], zero_size=False),
    Case("svd_values", lambda a: la.svd(a, compute_uv=False), lambda a: np.linalg.svd(a, compute_uv=False),
         [arr((2, 5, 3))], zero_len=3, rtol=1e-4, atol=1e-5),
    Case("svd_reduced_reconstructs", _svd_product, lambda a: a, [arr((5, 3))], zero_len=3, rtol=1e-4, atol=1e-5),
    Case("svd_wide_reconstructs", _svd_product, lambda a: a, [arr((2, 3, 5))], zero_len=3, rtol=1e-4, atol=1e-5),
    Case("svd_full_orthogonal", _svd_full_gram, _identities, [arr((5, 3))], zero_len=3, rtol=1e-4, atol=1e-5),
    Case("qr_r_abs", lambda a: abs(la.qr(a, "r")), lambda a: np.abs(np.linalg.qr(a, "r")), [arr((5, 3))],
         zero_len=3, rtol=1e-4, atol=1e-5),
    Case("qr_reduced_batch", lambda a: list(la.qr(a)), lambda a: list(np.linalg.qr(a)), [arr((2, 5, 3))],
         zero_len=3, rtol=1e-4, atol=1e-5),
    Case("qr_complete_wide", lambda a: list(la.qr(a, "complete")), lambda a: list(np.linalg.qr(a, "complete")),
         [arr((3, 5))], zero_len=3, rtol=1e-4, atol=1e-5),
    Case("qr_economic", lambda a: list(la.qr(a, mode="economic")), lambda a: list(sl.qr(a, mode="economic")),
         [arr((5, 3))], zero_len=3, rtol=1e-4, atol=1e-5),
    Case("qr_complete_tall", lambda a: list(la.qr(a, "complete")), lambda a: list(np.linalg.qr(a, "complete")),
         [arr((5, 3))], zero_len=3, rtol=1e-4, atol=1e-5),
    Case("matrix_power", lambda a: la.matrix_power(a, 3), lambda a: np.linalg.matrix_power(a, 3), [GEN_B]),
    Case("matrix_power_neg", lambda a: la.matrix_power(a, -2), lambda a: np.linalg.matrix_power(a, -2),
         [GEN], rtol=1e-4),
    Case("kron", la.kron, np.kron, [arr((2, 3)), arr((3, 2))]),
    Case("norm_fro", la.norm, np.linalg.norm, [arr((3, 4))]),
    Case("norm_vec_inf", lambda x: la.norm(x, np.inf, axis=1), lambda x: np.linalg.norm(x, np.inf, axis=1),
         [arr((3, 4))]),
    Case("norm_mat_1", lambda x: la.norm(x, 1), lambda x: np.linalg.norm(x, 1), [arr((3, 4))], zero_size=False),
    Case("expm", la.expm, sl.expm, [arr((3, 3), low=-0.5, high=0.5)], rtol=1e-5, atol=1e-7),
    Case("expm_degrees_batch", la.expm, sl.expm, [fixed(_expm_inputs())], zero_len=4, rtol=1e-5, atol=1e-6),
    Case("expm_not_square", la.expm, sl.expm, [arr((3, 4))], zero_size=False),
    Case("lstsq", lambda a, b: list(la.lstsq(a, b)), lambda a, b: list(np.linalg.lstsq(a, b)),
         [arr((5, 3)), arr((5, 2))], zero_len=5, rtol=1e-4, atol=1e-5),
    Case("lstsq_rank_deficient_wide", lambda a, b: list(la.lstsq(a, b, 1e-5)),
         lambda a, b: list(np.linalg.lstsq(a, b, 1e-5)), [fixed(np.outer([1.0, 2, 3], [1.0, -1, 2, 0.5])), arr((3,))],
         zero_size=False, rtol=1e-4, atol=1e-5),
    Case("lstsq_empty_a", lambda a, b: list(la.lstsq(a, b)), lambda a, b: list(np.linalg.lstsq(a, b)),
         [arr((3, 0)), arr((3,))], zero_size=False),
    Case("lstsq_bad_rows", lambda a, b: list(la.lstsq(a, b)), lambda a, b: list(np.linalg.lstsq(a, b)),
         [arr((5, 3)), arr((4,))], zero_size=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_linalg(case):
    check_case(case)
