"""Linear algebra on complex64/complex128 matrices: against numpy/scipy through op_check in every mode (one
Case per behaviour, several outputs where they share an input), every op lowered natively (no fallback node),
the errors of real inputs, and the gradients: the holomorphic ops' by directional differences in graphjit's
convention (the conjugate of JAX's, docs/gradients.md), NotImplementedError for the others."""

import numpy as np
import pytest
import scipy.linalg as sl

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor import linalg as la
from linalg_inputs import fixed
from op_check import Case, arr, check_case

CPLX = ("complex128", "complex64")
TOL = {"rtol": 1e-4, "atol": 1e-5}


def cgeneral(shape, seed=2):
    """Well-conditioned general complex matrices."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape) + 3 * np.eye(*shape[-2:])


def chpd(shape, seed=0):
    """Hermitian positive definite matrices."""
    a = cgeneral(shape, seed) - 3 * np.eye(shape[-1])
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])


GEN, GEN_B, HPD = fixed(cgeneral((4, 4))), fixed(cgeneral((2, 4, 4))), fixed(chpd((4, 4)))
TALL = fixed(cgeneral((5, 3)))
PIVOTED = fixed(cgeneral((5, 3))[[1, 0, 2, 4, 3]])          # getrf swaps rows


def _abs_list(xs):
    return [abs(x) for x in xs]


def _solves(a, b):
    return [la.solve(a, b, assume_a="sym"), la.solve(a, b, assume_a="her", lower=True),
            la.solve(a + 8 * gt.eye(4, dtype=a.dtype), b, assume_a="pos")]


def _ref_solves(a, b):
    return [sl.solve(a, b, assume_a="sym"), sl.solve(a, b, assume_a="her", lower=True),
            sl.solve(a + 8 * np.eye(4, dtype=a.dtype), b, assume_a="pos")]


def _tri(a, b):
    return [la.solve_triangular(a, b, lower=True), la.solve_triangular(a, b, trans=1),
            la.solve_triangular(a, b, lower=True, trans="C", unit_diagonal=True)]


def _ref_tri(a, b):
    return [sl.solve_triangular(a, b, lower=True), sl.solve_triangular(a, b, trans=1),
            sl.solve_triangular(a, b, lower=True, trans="C", unit_diagonal=True)]


def _chol(a, b):
    lo, up = la.cholesky(a), la.cholesky(a, lower=False)
    return [lo, up, la.cho_solve((lo, True), b), la.cho_solve((up, False), b)]


def _ref_chol(a, b):
    lo, up = np.linalg.cholesky(a), sl.cholesky(a)
    return [lo, up, sl.cho_solve((lo, True), b), sl.cho_solve((up, False), b)]


def _inv_det(a):
    return [la.inv(a), la.det(a), *la.slogdet(a)]


def _ref_inv_det(a):
    return [np.linalg.inv(a), np.linalg.det(a), *np.linalg.slogdet(a)]


def _eigh(a, b):
    w, v = la.eigh(a)
    wg, vg = la.eigh(a + la.mT(gt.conj(a)), b)
    return [w, abs(v), la.eigvalsh(a, "U"), wg, abs(vg)]        # eigenvector phases differ between builds


def _ref_eigh(a, b):
    w, v = np.linalg.eigh(a)
    wg, vg = sl.eigh(a + a.conj().T, b)
    return [w, abs(v), np.linalg.eigvalsh(a, "U"), wg, abs(vg)]


def _eig(a):
    """Order- and phase-free: A V - V diag(w) (zero), sum(w) = trace, sum(w^2) = trace(A^2)."""
    w, v = la.eig(a)
    return [abs(gt.matmul(a, v) - v * w.dimshuffle("x", 0)), w.sum(), (w * w).sum(), la.eigvals(a).sum()]


def _ref_eig(a):
    zero = np.zeros(a.shape, np.finfo(a.dtype).dtype)
    return [zero, np.trace(a), np.trace(a @ a), np.trace(a)]


def _svd(a):
    u, s, vh = la.svd(a)
    ur, sr, vhr = la.svd(a.T, full_matrices=False)
    prod = gt.matmul(ur * sr.dimshuffle("x", 0), vhr)
    return [s, abs(u), abs(vh), la.svd(a.T, compute_uv=False), prod]


def _ref_svd(a):
    u, s, vh = np.linalg.svd(a)
    return [s, abs(u), abs(vh), np.linalg.svd(a.T, compute_uv=False), a.T]


def _lu(a, b):
    sq = a[:3]
    f = la.lu_factor(sq)
    return [*la.lu(a), *la.lu(a.T, permute_l=True), *f, la.lu_solve(f, b), la.lu_solve(f, b, trans=1),
            la.lu_solve(f, b, trans=2)]


def _ref_lu(a, b):
    sq = a[:3]
    f = sl.lu_factor(sq)
    return [*sl.lu(a), *sl.lu(a.T, permute_l=True), *f, sl.lu_solve(f, b), sl.lu_solve(f, b, trans=1),
            sl.lu_solve(f, b, trans=2)]


def _lstsq(a, b):
    return [*la.lstsq(a, b), *la.lstsq(a.T, b[:3, 0])]


def _ref_lstsq(a, b):
    return [*np.linalg.lstsq(a, b), *np.linalg.lstsq(a.T, b[:3, 0])]


def _functions(a):
    h = gt.matmul(a, la.mT(gt.conj(a)))
    return [la.pinv(a), la.pinv(h, hermitian=True), la.expm(a * 0.5), la.matrix_power(a[:3], -2),
            la.norm(a), la.norm(a, 2), la.norm(a[0], 3), la.norm(a, "nuc")]


def _ref_functions(a):
    h = a @ a.conj().T
    return [np.linalg.pinv(a), np.linalg.pinv(h, hermitian=True), sl.expm(a * 0.5),
            np.linalg.matrix_power(a[:3], -2), np.linalg.norm(a), np.linalg.norm(a, 2), np.linalg.norm(a[0], 3),
            np.linalg.norm(a, "nuc")]


CASES = [
    Case("solve", la.solve, np.linalg.solve, [GEN, arr((4, 2))], CPLX, zero_len=4),
    Case("solve_batch_bcast_vec", la.solve, np.linalg.solve, [GEN_B, arr((4,))], CPLX, zero_len=2, layouts=False),
    Case("solve_sym_her_pos", _solves, _ref_solves, [GEN, arr((4, 2))], CPLX, zero_size=False, **TOL),
    Case("solve_triangular", _tri, _ref_tri, [GEN, arr((4, 2))], CPLX, zero_len=4),
    Case("cholesky_cho_solve", _chol, _ref_chol, [HPD, arr((4,))], CPLX, zero_len=4, **TOL),
    Case("inv_det_slogdet", _inv_det, _ref_inv_det, [GEN_B], CPLX, zero_len=4, **TOL),
    Case("eigh_eigvalsh_general", _eigh, _ref_eigh, [GEN, HPD], CPLX, zero_len=4, **TOL),
    Case("eig_eigvals", _eig, _ref_eig, [GEN], CPLX, zero_size=False, layouts=False, **TOL),
    Case("svd", _svd, _ref_svd, [TALL], CPLX, zero_len=3, **TOL),
    Case("qr", lambda a: [*la.qr(a), *la.qr(a.T, "complete"), la.qr(a, "r")],
         lambda a: [*np.linalg.qr(a), *np.linalg.qr(a.T, "complete"), np.linalg.qr(a, "r")], [TALL], CPLX,
         zero_len=3, **TOL),
    Case("lu_lu_factor_lu_solve", _lu, _ref_lu, [PIVOTED, arr((3, 2))], CPLX, zero_size=False, **TOL),
    Case("lstsq", _lstsq, _ref_lstsq, [TALL, arr((5, 2))], CPLX, zero_size=False, **TOL),
    # pinv is rewritten onto svd/eigh by specialize, which FAST_COMPILE does not run: there it keeps perform
    pytest.param(Case("pinv_expm_power_norm", _functions, _ref_functions, [TALL], CPLX, zero_size=False,
                      layouts=False, **TOL),
                 marks=pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")),
    Case("singular", lambda a, b: [la.solve(a, b), la.inv(a)], lambda a, b: [np.linalg.solve(a, b), np.linalg.inv(a)],
         [fixed(np.ones((3, 3)) * (1 + 1j)), arr((3,))], CPLX, zero_size=False, layouts=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_complex_linalg(case):
    check_case(case)


def _every_op(a, h, r, b):
    """One graph with every linear-algebra op on complex inputs (the native check compiles it once)."""
    lo = la.cholesky(h)
    f = la.lu_factor(a)
    outs = [la.solve(a, b), la.solve(a, b, assume_a="sym"), la.solve(a, b, assume_a="her"),
            la.solve(h, b, assume_a="pos", lower=True), la.solve_triangular(a, b, trans="C"), lo,
            la.cholesky(h, lower=False), la.cho_solve((lo, True), b), la.inv(a), la.det(a), *la.slogdet(a),
            la.eigvals(a).sum(), abs(la.eig(a)[1]).sum(), *la.eigh(h), *la.eigh(a, h), *la.svd(r),
            la.svd(r, compute_uv=False), *la.qr(r),
            la.qr(r.T, "complete")[0], *la.lu(r), *la.lu(r, permute_l=True), *f, la.lu_solve(f, b, trans=2),
            *la.lstsq(r, r[:, :2]), la.pinv(r), la.pinv(h, hermitian=True), la.expm(a),
            la.matrix_power(a, -2), la.norm(r, 2)]
    return outs


@pytest.mark.parametrize("dtype", CPLX)
def test_every_op_is_native(dtype):
    a, h, r = (gt.TensorType(dtype, (None, None))(n) for n in "ahr")
    b = gt.TensorType(dtype, (None, None))("b")
    f = gj.function([a, h, r, b], _every_op(a, h, r, b), mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    ref = gj.function([a, h, r, b], _every_op(a, h, r, b), mode="PY")
    vals = [cgeneral((4, 4)).astype(dtype), chpd((4, 4)).astype(dtype), cgeneral((5, 4)).astype(dtype),
            cgeneral((4, 2), 3).astype(dtype)]
    for got, want in zip(f(*vals), ref(*vals)):
        assert got.dtype == want.dtype
        if got.ndim >= 2 or got.dtype.kind == "c":
            got, want = abs(got), abs(want)           # eigenvector / singular vector phases
        np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
@pytest.mark.parametrize("build, value, text", [
    (lambda a: la.cholesky(a, lower=False), -np.eye(3), "not positive definite"),
    (lambda a: la.solve(a, a[0], assume_a="pos"), -np.eye(3), "not positive definite"),
    (lambda a: la.solve_triangular(a, a[0], lower=True, trans="C"), np.tril(np.ones((3, 3))) - np.eye(3), "singular"),
    (lambda a: la.eigh(a, -a)[0], np.eye(3), "b is not positive definite"),
])
def test_complex_errors_as_real_ones(mode, build, value, text):
    a = gt.zmatrix("a")
    f = gj.function([a], build(a), mode=mode)
    with pytest.raises(np.linalg.LinAlgError, match=text):
        f(value * (1 + 0j))


def test_on_error_nan_complex():
    a, b = gt.ztensor3("a"), gt.zvector("b")
    f = gj.function([a, b], [la.cholesky(a, on_error="nan"), la.solve(a, b, on_error="nan")], mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    good = chpd((3, 3))
    c, x = f(np.stack([good, np.zeros((3, 3))]).astype(complex), np.ones(3) + 1j)
    np.testing.assert_allclose(c[0], np.linalg.cholesky(good))
    np.testing.assert_allclose(x[0], np.linalg.solve(good, np.ones(3) + 1j))
    assert np.isnan(c[1]).all() and np.isnan(x[1]).all()


def _holomorphic(a):
    """inv, det, solve, solve_triangular (trans 1), lu, lu_factor + lu_solve, expm of a."""
    b = a[:, :2] * 2 + 1
    f = la.lu_factor(a)
    return [la.inv(a), la.det(a), la.solve(a, b), la.solve_triangular(a, b, lower=True, trans=1),
            la.lu(a)[1] + la.lu(a)[2], la.lu_solve(f, b), la.expm(a * 0.3)]


def test_holomorphic_gradients_follow_the_complex_convention():
    """grad(C, a) = dC/dx + i dC/dy for a = x + iy (the conjugate of JAX's grad, docs/gradients.md; checked
    against JAX when this was written), natively, for each holomorphic op: directional central differences."""
    av = cgeneral((4, 4))
    a = gt.zmatrix("a")
    rng = np.random.default_rng(9)
    shapes = [(4, 4), (), (4, 2), (4, 2), (4, 4), (4, 2), (4, 4)]
    weights = [rng.uniform(-1, 1, s) + 1j * rng.uniform(-1, 1, s) for s in shapes]
    costs = [gt.real((out * w).sum()) for out, w in zip(_holomorphic(a), weights)]
    f = gj.function([a], [gj.grad(c, a) for c in costs], mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    value = gj.function([a], costs, mode="PY")
    grads, h = f(av), 1e-6
    for d in (cgeneral((4, 4), 5), 1j * cgeneral((4, 4), 6)):      # dC/dt along a + t d = Re(sum(conj(g) d))
        numeric = (np.array(value(av + h * d)) - np.array(value(av - h * d))) / (2 * h)
        analytic = [np.real(np.sum(np.conj(g) * d)) for g in grads]
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("build", [
    la.cholesky, lambda a: la.eigh(a)[0], lambda a: la.svd(a, compute_uv=False), lambda a: la.slogdet(a)[1],
    la.pinv, lambda a: la.qr(a)[1], lambda a: la.solve(a, a, assume_a="pos"),
    lambda a: la.solve_triangular(a, a, trans="C"), lambda a: la.lstsq(a, a)[0],
    lambda a: la.cho_solve((a, True), a)], ids=["cholesky", "eigh", "svd", "slogdet", "pinv", "qr", "solve_pos",
                                               "solve_triangular_C", "lstsq", "cho_solve"])
def test_non_holomorphic_gradient_is_not_implemented(build):
    a = gt.zmatrix("a")
    with pytest.raises(NotImplementedError, match="complex inputs"):
        gj.grad(gt.real(build(a)).sum(), a)
