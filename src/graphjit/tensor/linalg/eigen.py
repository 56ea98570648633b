"""Spectral decompositions: Eigh (symmetric), Eig (general, complex results), SVD and QR (numpy.linalg)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import grad_not_implemented
from graphjit.tensor.alloc import eye
from graphjit.tensor.basic import cast
from graphjit.tensor.math import eq, minimum, mul, neg, sub, true_div, where
from graphjit.tensor.variable import TensorVariable

from graphjit.tensor.linalg._common import (LinAlgError, LinalgOp, as_matrix, batch_apply, batch_of, check_square,
                                            common_dtype, expand_last, matrix_type, mT, no_complex, real_dtype,
                                            scipy_linalg, sym, to_shape_of, tril)
from graphjit.tensor.linalg.diag import alloc_diag, extract_diag
from graphjit.tensor.linalg.solve import SolveTriangular, apply_to as mm, solve_shape


def _gap_inverse(w: TensorVariable, squared: bool = False) -> TensorVariable:
    """F[..., i, j] = 1 / (w_j - w_i) (of the squares if squared), 0 on the diagonal."""
    w = mul(w, w) if squared else w
    nd = w.ndim
    d = sub(w.dimshuffle(*range(nd - 1), "x", nd - 1), expand_last(w))
    n = w.shape[nd - 1]
    on_diag = eq(eye(n, n, 0, "int8"), 1)
    one = np.asarray(1, w.type.dtype)
    return where(on_diag, np.asarray(0, w.type.dtype), true_div(one, where(on_diag, one, d)))


def _diag(v: TensorVariable) -> TensorVariable:
    n = v.shape[v.ndim - 1]
    return alloc_diag(v, n, n)


class Eigh(LinalgOp):
    """numpy.linalg.eigh(a, UPLO): ascending eigenvalues w (real, also for a complex Hermitian a) and
    orthonormal eigenvectors V (columns)."""

    __props__ = ("UPLO",)

    def __init__(self, UPLO: str = "L") -> None:
        if UPLO not in ("L", "U"):
            raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
        self.UPLO = UPLO

    def make_node(self, a: Any) -> Apply:
        a = as_matrix(self, a)
        w = matrix_type(real_dtype(a.type.dtype), a.type.shape[:-1], ())
        return Apply(self, [a], [w(), a.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        check_square(self, a)
        try:
            w, v = np.linalg.eigh(a, UPLO=self.UPLO)
        except LinAlgError:
            raise LinAlgError(f"{self}: eigenvalues did not converge") from None
        out[0][0] = w.astype(node.outputs[0].type.dtype, copy=False)
        out[1][0] = v.astype(node.outputs[1].type.dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(shapes[0][:-1]), shapes[0]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """sym(V (diag(w_bar) + F o (V^T V_bar)) V^T), F_ij = 1 / (w_j - w_i)."""
        no_complex(self, inputs)
        (w, v), (gw, gv) = outputs, grads
        inner = _diag(gw) + mul(_gap_inverse(w), mm(mT(v), gv, 2))
        return [sym(mm(mm(v, inner, 2), mT(v), 2))]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """dw = diag(V^T da V), dV = V (F o (V^T da V))."""
        (a,), (da,) = inputs, eval_points
        if da is None:
            return [None, None]
        no_complex(self, inputs, "R_op")
        w, v = self(a)
        p = mm(mm(mT(v), sym(da), 2), v, 2)
        return [extract_diag(p), mm(v, mul(_gap_inverse(w), p), 2)]


class EighGeneral(LinalgOp):
    """scipy.linalg.eigh(a, b, lower): the generalized symmetric-definite problem a v = w b v (LAPACK ?sygvd,
    itype 1): ascending w, eigenvectors normalised as V^T b V = I; only the lower (upper) triangles read."""

    __props__ = ("UPLO",)

    def __init__(self, UPLO: str = "L") -> None:
        if UPLO not in ("L", "U"):
            raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
        self.UPLO = UPLO

    def make_node(self, a: Any, b: Any) -> Apply:
        a, b = as_matrix(self, a), as_matrix(self, b, "b")
        dtype = common_dtype(a.type.dtype, b.type.dtype)
        a, b = (v if v.type.dtype == dtype else cast(v, dtype) for v in (a, b))
        n = a.type.shape[-1] if a.type.shape[-1] is not None else b.type.shape[-1]
        if None not in (a.type.shape[-1], b.type.shape[-1]) and a.type.shape[-1] != b.type.shape[-1]:
            raise ValueError(f"{self}: a {a.describe()} and b {b.describe()} have different sizes")
        batch = batch_of(a.type.shape, b.type.shape, core=(2, 2), what=f"batch dimensions of {self}")
        return Apply(self, [a, b], [matrix_type(real_dtype(dtype), batch, (n,))(),
                                    matrix_type(dtype, batch, (n, n))()])

    def _one(self, a: np.ndarray, b: np.ndarray) -> tuple:
        try:
            return scipy_linalg().eigh(a, b, lower=self.UPLO == "L", check_finite=False)
        except LinAlgError as e:
            what = "b is not positive definite" if "positive definite" in str(e) else "eigenvalues did not converge"
            raise LinAlgError(f"{self}: {what}") from None

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        a, b = inputs
        check_square(self, a)
        check_square(self, b, "b")
        n = a.shape[-1]
        if b.shape[-1] != n:
            raise ValueError(f"{self}: a of shape {a.shape} and b of shape {b.shape} have different sizes")
        wt, vt = node.outputs[0].type.dtype, node.outputs[1].type.dtype
        if n == 0:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            out[0][0], out[1][0] = np.zeros(batch + (0,), wt), np.zeros(batch + (0, 0), vt)
            return
        w, v = batch_apply(self, self._one, [a, b], [2, 2], [(n,), (n, n)], [wt, vt])
        out[0][0], out[1][0] = w, v

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        vs = solve_shape(node.inputs[0], node.inputs[1], shapes, 2)
        return [tuple(vs[:-1]), vs]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """K = diag(w_bar) + F o (V^T V_bar): a_bar = sym(V K V^T), b_bar = -sym(V (K diag(w) +
        diag(V^T V_bar) / 2) V^T), F_ij = 1 / (w_j - w_i)."""
        no_complex(self, inputs)
        a, b = inputs
        (w, v), (gw, gv) = outputs, grads
        m = mm(mT(v), gv, 2)
        k = _diag(gw) + mul(_gap_inverse(w), m)
        kw = mul(k, w.dimshuffle(*range(w.ndim - 1), "x", w.ndim - 1))
        half = mul(extract_diag(m), np.asarray(0.5, w.type.dtype))
        ga = sym(mm(mm(v, k, 2), mT(v), 2))
        gb = neg(sym(mm(mm(v, kw + _diag(half), 2), mT(v), 2)))
        return [to_shape_of(ga, a), to_shape_of(gb, b)]


class Eig(LinalgOp):
    """numpy.linalg.eig; results are always complex (numpy's are real when a real matrix's eigenvalues all
    are), and have no gradient."""

    native_alternative = "eigh(a) for a symmetric a (compiled natively)"

    def make_node(self, a: Any) -> Apply:
        a = as_matrix(self, a)
        c = "complex64" if a.type.dtype in ("float32", "complex64") else "complex128"
        return Apply(self, [a], [matrix_type(c, a.type.shape[:-1], ())(), matrix_type(c, a.type.shape, ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        check_square(self, a)
        try:
            w, v = np.linalg.eig(a)
        except LinAlgError:
            raise LinAlgError(f"{self}: eigenvalues did not converge") from None
        dtype = node.outputs[0].type.dtype
        out[0][0], out[1][0] = w.astype(dtype), v.astype(dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(shapes[0][:-1]), shapes[0]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Not implemented (complex results)."""
        return [grad_not_implemented(self, 0, inputs[0], "eig's results are complex")]


class SVD(LinalgOp):
    """numpy.linalg.svd(a, full_matrices, compute_uv): (U, s, Vh) or s."""

    __props__ = ("full_matrices", "compute_uv")

    def __init__(self, full_matrices: bool = True, compute_uv: bool = True) -> None:
        self.full_matrices, self.compute_uv = bool(full_matrices), bool(compute_uv)

    def make_node(self, a: Any) -> Apply:
        a = as_matrix(self, a, square=False)
        batch, (m, n) = a.type.shape[:-2], a.type.shape[-2:]
        k = None if m is None or n is None else min(m, n)
        s = matrix_type(real_dtype(a.type.dtype), batch, (k,))
        if not self.compute_uv:
            return Apply(self, [a], [s()])
        cu, cv = (m, n) if self.full_matrices else (k, k)
        return Apply(self, [a], [matrix_type(a.type.dtype, batch, (m, cu))(), s(),
                                 matrix_type(a.type.dtype, batch, (cv, n))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        try:
            res = np.linalg.svd(a, full_matrices=self.full_matrices, compute_uv=self.compute_uv)
        except LinAlgError:
            raise LinAlgError(f"{self}: SVD did not converge") from None
        res = res if self.compute_uv else (res,)
        for o, r, v in zip(out, res, node.outputs):
            o[0] = np.asarray(r).astype(v.type.dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        from_ = shapes[0]
        batch, m, n = tuple(from_[:-2]), from_[-2], from_[-1]
        k = _min(m, n)
        if not self.compute_uv:
            return [batch + (k,)]
        cu, cv = (m, n) if self.full_matrices else (k, k)
        return [batch + (m, cu), batch + (k,), batch + (cv, n)]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Townsend's formula on the reduced factors (full factors of a square matrix are the same)."""
        no_complex(self, inputs)
        (a,) = inputs
        if not self.compute_uv:
            u, s, vh = SVD(False, True)(a)
            return [mm(mm(u, _diag(grads[0]), 2), vh, 2)]
        m, n = a.type.shape[-2:]
        if self.full_matrices and (m is None or n is None or m != n):
            return [grad_not_implemented(self, 0, a, "the gradient of full_matrices=True needs a square "
                                                     "matrix of static shape (use full_matrices=False)")]
        u, s, vh = outputs
        gu, gs, gvh = grads
        v, gv = mT(vh), mT(gvh)
        f = _gap_inverse(s, squared=True)
        j, k = mul(f, mm(mT(u), gu, 2)), mul(f, mm(mT(v), gv, 2))
        sd = _diag(s)
        inner = mm(j + mT(j), sd, 2) + mm(sd, k + mT(k), 2) + _diag(gs)
        core = mm(mm(u, inner, 2), vh, 2)
        sinv = _diag(true_div(np.asarray(1, s.type.dtype), s))
        mdim, ndim_ = a.shape[a.ndim - 2], a.shape[a.ndim - 1]
        im = sub(eye(mdim, mdim, 0, a.type.dtype), mm(u, mT(u), 2))
        inn = sub(eye(ndim_, ndim_, 0, a.type.dtype), mm(v, mT(v), 2))
        return [core + mm(mm(mm(im, gu, 2), sinv, 2), vh, 2) + mm(mm(mm(u, sinv, 2), mT(gv), 2), inn, 2)]


def _min(m: Any, n: Any) -> Any:
    return minimum(m, n)


class QR(LinalgOp):
    """numpy.linalg.qr(a, mode): 'reduced' (Q, R), 'complete' (Q, R), 'r' (R); scipy's names 'economic'
    (= 'reduced') and 'full' (= 'complete') too."""

    __props__ = ("mode",)

    def __init__(self, mode: str = "reduced") -> None:
        mode = {"economic": "reduced", "full": "complete"}.get(mode, mode)
        if mode not in ("reduced", "complete", "r"):
            raise ValueError(f"qr: mode must be 'reduced', 'complete', 'r', 'economic' or 'full', got {mode!r}")
        self.mode = mode

    def make_node(self, a: Any) -> Apply:
        a = as_matrix(self, a, square=False)
        batch, (m, n) = a.type.shape[:-2], a.type.shape[-2:]
        k = None if m is None or n is None else min(m, n)
        kq = m if self.mode == "complete" else k
        r = matrix_type(a.type.dtype, batch, (kq, n))
        if self.mode == "r":
            return Apply(self, [a], [r()])
        return Apply(self, [a], [matrix_type(a.type.dtype, batch, (m, kq))(), r()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        dtype = node.outputs[0].type.dtype
        res = np.linalg.qr(a, mode=self.mode)
        res = (res,) if self.mode == "r" else tuple(res)
        for o, r in zip(out, res):
            o[0] = np.asarray(r).astype(dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        s = shapes[0]
        batch, m, n = tuple(s[:-2]), s[-2], s[-1]
        k = m if self.mode == "complete" else _min(m, n)
        r = batch + (k, n)
        return [r] if self.mode == "r" else [batch + (m, k), r]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """a_bar = (Q_bar + Q copyltu(M)) R^-T, M = R R_bar^T - Q_bar^T Q, for m >= n (reduced; a wide matrix
        of unknown static shape gives a wrong gradient)."""
        no_complex(self, inputs)
        (a,) = inputs
        m, n = a.type.shape[-2:]
        if self.mode == "r" or self.mode == "complete":
            if self.mode == "complete" and not (m is not None and n is not None and m <= n):
                return [grad_not_implemented(self, 0, a, "complete mode with m > n")]
            q, r = QR("reduced")(a)
            gq = None if self.mode == "r" else grads[0]
            gr = grads[-1]
        else:
            (q, r), (gq, gr) = outputs, grads
        if m is not None and n is not None and m < n:
            return [grad_not_implemented(self, 0, a, "QR's gradient needs m >= n")]
        mmat = mm(r, mT(gr), 2) - (mm(mT(gq), q, 2) if gq is not None else 0)
        low = tril(mmat, -1)
        copyltu = low + mT(low) + _diag(extract_diag(mmat))
        x = mm(q, copyltu, 2) + (gq if gq is not None else 0)
        return [mT(SolveTriangular(False, 0, False, 2)(r, mT(x)))]


def _eigh_node(a: Any, b: Any, UPLO: str, lower: Any) -> list:
    if isinstance(b, str):                     # numpy's eigh(a, "U")
        b, UPLO = None, b
    if lower is not None:                      # scipy's keyword
        UPLO = "L" if lower else "U"
    return Eigh(UPLO)(a) if b is None else EighGeneral(UPLO)(a, b)


def eigh(a: Any, b: Any = None, UPLO: str = "L", lower: Any = None) -> tuple:
    """numpy.linalg.eigh: (w, V) of symmetric matrices (UPLO, or scipy's lower: which triangle is read); with
    b, scipy.linalg.eigh's generalized problem a v = w b v (b symmetric positive definite, V^T b V = I)."""
    return tuple(_eigh_node(a, b, UPLO, lower))


def eigvalsh(a: Any, b: Any = None, UPLO: str = "L", lower: Any = None) -> TensorVariable:
    """numpy.linalg.eigvalsh: the ascending eigenvalues of symmetric matrices; with b, of a v = w b v (scipy)."""
    return _eigh_node(a, b, UPLO, lower)[0]


def eig(a: Any) -> tuple:
    """numpy.linalg.eig: (w, V), complex (no gradient)."""
    return tuple(Eig()(a))


def eigvals(a: Any) -> TensorVariable:
    """numpy.linalg.eigvals: the eigenvalues, complex (no gradient)."""
    return Eig()(a)[0]


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """numpy.linalg.svd: (U, s, Vh), or s when compute_uv=False."""
    res = SVD(full_matrices, compute_uv)(a)
    return tuple(res) if compute_uv else res


def qr(a: Any, mode: str = "reduced") -> Any:
    """numpy.linalg.qr: (Q, R) for 'reduced'/'complete' (scipy's 'economic'/'full'), R for 'r'."""
    op = QR(mode)
    res = op(a)
    return res if op.mode == "r" else tuple(res)
