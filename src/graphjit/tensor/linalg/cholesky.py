"""Cholesky factorisation, cho_solve, and the inverse-from-factor op their gradients reduce to.

The gradient of ``cholesky`` is taken with the symmetric convention (as JAX and PyTensor: a_bar is symmetric;
numpy reads only the lower triangle, so verify it on symmetric perturbations).  When the cotangent of L is made
of terms whose structure is known (``cho_solve``'s gradient, ``S @ L`` with S symmetric, tagged
``sym_factor``; a diagonal from ``diagonal(L)``, tagged ``diag_of``), a_bar is written without the two
triangular solves of the general formula: ``S / 2``, and ``L^-T diag(w) L^-1 / 2`` (CholInvDiag: a triangular
inverse and one symmetric product), which is what makes a Gaussian process's gradient cost one inverse.
"""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.tensor.alloc import eye
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.math import add, mul, neg
from graphjit.tensor.variable import TensorVariable

from graphjit.tensor.linalg._common import (LinalgOp, SquareMatrixOp, as_matrix, batch_apply, check_on_error,
                                            check_square, expand_last, matrix_type, mT, nan_where_failed, no_complex,
                                            outer_last, scipy_linalg, sym, to_shape_of, tril, triu)
from graphjit.tensor.linalg.diag import extract_diag
from graphjit.tensor.linalg.solve import SolveTriangular, apply_to, check_rhs, rhs, solve_shape


def _half(x: Any) -> TensorVariable:
    x = as_tensor_variable(x)
    return mul(x, np.asarray(0.5, x.type.dtype))


def _phi(x: TensorVariable) -> TensorVariable:
    """The lower triangle of x with its diagonal halved."""
    return tril(x, -1) + _half(tril(triu(x)))


def _tri_solve_both(l: TensorVariable, p: TensorVariable) -> TensorVariable:
    """L^-T p L^-1 for lower L."""
    y = SolveTriangular(True, 1, False, 2)(l, p)
    return mT(SolveTriangular(True, 1, False, 2)(l, mT(y)))


def identity_like(l: TensorVariable) -> TensorVariable:
    """The n x n identity of l's dtype, n = l's last length."""
    n = l.shape[l.ndim - 1]
    return eye(n, n, 0, l.type.dtype)


def _add_terms(v: Variable) -> List[Variable]:
    """The terms of a sum of additions (the gradient machinery sums a variable's cotangents with add)."""
    if v.owner is not None and v.owner.op == add:
        return [t for i in v.owner.inputs for t in _add_terms(i)]
    return [v]


class Cholesky(SquareMatrixOp):
    """numpy.linalg.cholesky: L (lower=True) with a = L L^H, or U = L^H (lower=False); batched."""

    __props__ = ("lower_tri", "on_error")

    def __init__(self, lower: bool = True, on_error: str = "raise") -> None:
        self.lower_tri, self.on_error = bool(lower), check_on_error(on_error)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        check_square(self, a)
        dtype = node.outputs[0].type.dtype
        res = nan_where_failed(self, np.linalg.cholesky, a, self.on_error, [a.shape[-2:]], [dtype],
                               "matrix is not positive definite")[0]
        res = res.astype(dtype, copy=False)
        out[0][0] = res if self.lower_tri else np.ascontiguousarray(np.swapaxes(res, -1, -2).conj())

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """a_bar (symmetric) from L_bar; structured cotangents skip the general two-solve formula."""
        no_complex(self, inputs)
        (a,), (out,), (g,) = inputs, outputs, grads
        l = out if self.lower_tri else mT(out)
        if not self.lower_tri:
            return [to_shape_of(_general_grad(l, mT(g)), a)]
        known, rest = [], []
        for t in _add_terms(g):
            factor = t.tag.get("sym_factor")
            diag = t.tag.get("diag_of")
            if factor is not None and factor[1] is out:
                known.append(_half(factor[0]))
            elif diag is not None and diag.ndim == out.ndim - 1:
                known.append(_half(chol_inv_diag(out, mul(extract_diag(out), diag))))
            else:
                rest.append(t)
        if rest:
            known.append(_general_grad(l, rest[0] if len(rest) == 1 else add(*rest)))
        total = known[0] if len(known) == 1 else add(*known)
        return [to_shape_of(total, a)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """dL = L phi(L^-1 sym(da) L^-T)."""
        (a,), (da,) = inputs, eval_points
        if da is None:
            return [None]
        no_complex(self, inputs, "R_op")
        out = self(a)
        l = out if self.lower_tri else mT(out)
        y = SolveTriangular(True, 0, False, 2)(l, sym(da))
        z = mT(SolveTriangular(True, 0, False, 2)(l, mT(y)))
        dl = apply_to(l, _phi(z), 2)
        return [dl if self.lower_tri else mT(dl)]


def _general_grad(l: TensorVariable, g: TensorVariable) -> TensorVariable:
    """sym(L^-T phi(L^T tril(g)) L^-1): the cotangent of a Cholesky factor in general."""
    return sym(_tri_solve_both(l, _phi(apply_to(mT(l), tril(g), 2))))


class CholInvDiag(LinalgOp):
    """L^-T diag(w) L^-1 for lower triangular L (w = 1: the inverse of L L^T), a symmetric matrix."""

    def make_node(self, l: Any, w: Any) -> Apply:
        l = as_matrix(self, l, "L")
        if l.type.dtype.startswith("complex"):
            raise TypeError(f"{self}: real factors only (it serves the real Cholesky gradients), got {l.describe()}")
        w = as_tensor_variable(w)
        if w.ndim != l.ndim - 1:
            raise TypeError(f"{self}: w must have one dimension less than L, got {w.describe()}")
        w = w if w.type.dtype == l.type.dtype else cast(w, l.type.dtype)
        return Apply(self, [l, w], [l.type()])

    def _one(self, l: np.ndarray, w: np.ndarray) -> np.ndarray:
        linv = scipy_linalg().solve_triangular(l, np.eye(l.shape[-1], dtype=l.dtype), lower=True,
                                               check_finite=False)
        return linv.T @ (w[:, None] * linv)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        l, w = inputs
        check_square(self, l, "L")
        dtype = node.outputs[0].type.dtype
        if l.shape[-1] == 0:
            out[0][0] = np.zeros(l.shape, dtype)
            return
        with np.errstate(all="ignore"):
            out[0][0] = batch_apply(self, self._one, [l, w], [2, 1], [l.shape[-2:]], [dtype])[0]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """w_bar = diag(M g M^T), L_bar = -tril(M^T (W M (g + g^T)) M^T) with M = L^-1."""
        l, w = inputs
        (g,) = grads
        eye_ = identity_like(l)
        m = SolveTriangular(True, 0, False, 2)(l, eye_)
        gs = g + mT(g)
        gw = extract_diag(apply_to(apply_to(m, g, 2), mT(m), 2))
        mbar = mul(expand_last(w), apply_to(m, gs, 2))
        gl = neg(tril(apply_to(apply_to(mT(m), mbar, 2), mT(m), 2)))
        return [to_shape_of(gl, l), to_shape_of(gw, w)]


_chol_inv_diag = CholInvDiag()


def chol_inv_diag(l: Any, w: Any) -> TensorVariable:
    """L^-T diag(w) L^-1 for lower L (with w = ones: inv(L L^T))."""
    return _chol_inv_diag(l, w)


class ChoSolve(LinalgOp):
    """scipy.linalg.cho_solve((c, lower), b): x with (c c^H) x = b (lower) or (c^H c) x = b."""

    __props__ = ("lower_tri", "b_ndim")

    def __init__(self, lower: bool = True, b_ndim: int = 2) -> None:
        self.lower_tri, self.b_ndim = bool(lower), int(b_ndim)

    def make_node(self, c: Any, b: Any) -> Apply:
        c = as_matrix(self, c, "c")
        b, _, shape, dtype = rhs(self, c, b, b_ndim=self.b_ndim)
        c = c if c.type.dtype == dtype else cast(c, dtype)
        return Apply(self, [c, b], [matrix_type(dtype, shape, ())()])

    def _one(self, c: np.ndarray, b: np.ndarray) -> np.ndarray:
        st = scipy_linalg().solve_triangular
        if self.lower_tri:
            return st(c, st(c, b, lower=True, check_finite=False), lower=True, trans=2, check_finite=False)
        return st(c, st(c, b, lower=False, trans=2, check_finite=False), lower=False, check_finite=False)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        c, b = inputs
        check_rhs(self, c, b, self.b_ndim)
        dtype = node.outputs[0].type.dtype
        core = b.shape[b.ndim - self.b_ndim:]
        if c.shape[-1] == 0:
            batch = np.broadcast_shapes(c.shape[:-2], b.shape[:b.ndim - self.b_ndim])
            out[0][0] = np.zeros(batch + core, dtype)
            return
        with np.errstate(all="ignore"):
            out[0][0] = batch_apply(self, self._one, [c, b], [2, self.b_ndim], [core], [dtype])[0]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [solve_shape(*node.inputs, shapes, self.b_ndim)]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """b_bar = cho_solve(c, x_bar); c_bar = -(b_bar x^T + x b_bar^T) c on c's triangle (tagged sym_factor)."""
        no_complex(self, inputs)
        c, b = inputs
        (x,), (gx,) = outputs, grads
        gb = self(c, gx)
        vec = self.b_ndim == 1
        s = neg(outer_last(gb, x, vec) + outer_last(x, gb, vec))
        if self.lower_tri:
            gc = tril(apply_to(s, c, 2))
            gc.tag["sym_factor"] = (s, c)
        else:
            gc = triu(apply_to(c, s, 2))
        return [to_shape_of(gc, c), to_shape_of(gb, b)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """dx = a^-1 (db - da x) with da = dc c^T + c dc^T (lower) or dc^T c + c^T dc."""
        c, b = inputs
        dc, db = eval_points
        if dc is None and db is None:
            return [None]
        no_complex(self, inputs, "R_op")
        x = self(c, b)
        r = db
        if dc is not None:
            m = tril(dc) if self.lower_tri else triu(dc)
            da = apply_to(m, mT(c), 2) if self.lower_tri else apply_to(mT(c), m, 2)
            prod = apply_to(da + mT(da), x, self.b_ndim)
            r = neg(prod) if r is None else r - prod
        return [self(c, r)]


def cholesky(a: Any, lower: bool = True, on_error: str = "raise") -> TensorVariable:
    """numpy.linalg.cholesky (lower=True: L with a = L L^H; lower=False: U = L^H); on_error 'raise' or 'nan'."""
    return Cholesky(lower, on_error)(a)


def cho_solve(c_and_lower: Any, b: Any) -> TensorVariable:
    """scipy.linalg.cho_solve((c, lower), b): solve (c c^H) x = b from a Cholesky factor."""
    c, lower = c_and_lower
    b = as_tensor_variable(b)
    return ChoSolve(lower, 1 if b.ndim == 1 else 2)(c, b)


def cho_factor(a: Any, lower: bool = True, on_error: str = "raise") -> tuple:
    """scipy.linalg.cho_factor (its other triangle is zero here): (c, lower) for cho_solve."""
    return cholesky(a, lower, on_error), lower
