"""LU factorisation (scipy.linalg.lu, lu_factor) and lu_solve, batched over leading dimensions."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import grad_not_implemented
from graphjit.tensor.alloc import eye
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.join import concatenate
from graphjit.tensor.math import minimum, neg
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable

from graphjit.tensor.linalg._common import (LinalgOp, as_matrix, batch_apply, check_square, holomorphic_grads,
                                            matrix_type, mT, no_complex, real_dtype, scipy_linalg, to_shape_of,
                                            tril, triu)
from graphjit.tensor.linalg.solve import (SolveTriangular, apply_to as mm, check_rhs, check_trans, rhs,
                                          solve_shape)


def _lu_grad(p: TensorVariable, l: TensorVariable, u: TensorVariable, gl: Any, gu: Any) -> TensorVariable:
    """a_bar of a = P L U for an m x n a, L m x k, U k x n (k = min(m, n)).

    With L = [L1; L2], U = [U1, U2] (L1, U1 k x k; one of L2, U2 is empty) and M1 = tril(L^T L_bar, -1) +
    triu(U_bar U^T), a_bar = P [[(Y - L1^-T U2_bar U2^T) U1^-T, L1^-T U2_bar], [L2_bar U1^-T, 0]] where
    Y = L1^-T (M1 - L2^T L2_bar): the square formula P L^-T M1 U^-T when both are empty."""
    k = l.shape[l.ndim - 1]
    top, rest = slice(None, k), slice(k, None)
    l1, l2, gl1, gl2 = l[..., top, :], l[..., rest, :], gl[..., top, :], gl[..., rest, :]
    u1, u2, gu2 = u[..., :, top], u[..., :, rest], gu[..., :, rest]
    m1 = tril(mm(mT(l), gl, 2), -1) + triu(mm(gu, mT(u), 2))
    lt_solve = SolveTriangular(True, 1, True, 2)                      # L1^-T (.)
    right_ut = lambda x: mT(SolveTriangular(False, 0, False, 2)(u1, mT(x)))   # noqa: E731  (.) U1^-T
    y = lt_solve(l1, m1 - mm(mT(l2), gl2, 2))
    yr = lt_solve(l1, gu2)
    upper = concatenate([right_ut(y - mm(yr, mT(u2), 2)), yr], axis=yr.ndim - 1)
    n = u.shape[u.ndim - 1]
    lower = mm(right_ut(gl2), eye(k, n, 0, real_dtype(u.type.dtype)), 2)   # a real eye (complex: upcast)
    return mm(p, concatenate([upper, lower], axis=upper.ndim - 2), 2)


def _zero_size_lu(a: np.ndarray, permute_l: bool, dtype: str) -> list:
    """P (the identity), L, U of an empty a with the documented shapes (m, m), (m, k), (k, n)."""
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    l, u = np.zeros(batch + (m, k), dtype), np.zeros(batch + (k, n), dtype)
    if permute_l:
        return [l, u]
    return [np.broadcast_to(np.eye(m, dtype=real_dtype(dtype)), batch + (m, m)).copy(), l, u]


class LU(LinalgOp):
    """scipy.linalg.lu(a, permute_l): (P, L, U) with a = P @ L @ U, or (P @ L, U) with permute_l; a is m x n:
    P is m x m, L m x k (unit lower trapezoidal), U k x n (upper trapezoidal), k = min(m, n); batched.  P is
    real for a complex a (scipy's dtype)."""

    __props__ = ("permute_l",)

    def __init__(self, permute_l: bool = False) -> None:
        self.permute_l = bool(permute_l)

    def make_node(self, a: Any) -> Apply:
        a = as_matrix(self, a, square=False)
        batch, (m, n) = a.type.shape[:-2], a.type.shape[-2:]
        k = None if m is None or n is None else min(m, n)
        lu = [matrix_type(a.type.dtype, batch, (m, k))(), matrix_type(a.type.dtype, batch, (k, n))()]
        p = matrix_type(real_dtype(a.type.dtype), batch, (m, m))
        return Apply(self, [a], lu if self.permute_l else [p()] + lu)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        dtype = node.outputs[-1].type.dtype
        if a.size == 0:
            res = _zero_size_lu(a, self.permute_l, dtype)
        else:
            res = scipy_linalg().lu(a, permute_l=self.permute_l, check_finite=False)
        for o, r, v in zip(out, res, node.outputs):
            o[0] = np.asarray(r).astype(v.type.dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        s = shapes[0]
        batch, m, n = tuple(s[:-2]), s[-2], s[-1]
        k = minimum(m, n)
        lu = [batch + (m, k), batch + (k, n)]
        return lu if self.permute_l else [batch + (m, m)] + lu

    @holomorphic_grads
    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """P is piecewise constant; L and U by the triangular formula (permute_l: L_bar = P^T (PL)_bar)."""
        if self.permute_l:
            p, l, u = LU(False)(inputs[0])
            gl, gu = mm(mT(p), grads[0], 2), grads[1]
        else:
            (p, l, u), (_, gl, gu) = outputs, grads
        return [_lu_grad(p, l, u, gl, gu)]


class LUFactor(LinalgOp):
    """scipy.linalg.lu_factor(a): (lu, piv) — L's unit lower part and U packed in lu, int32 pivots."""

    def make_node(self, a: Any) -> Apply:
        a = as_matrix(self, a)
        return Apply(self, [a], [a.type(), TensorType("int32", a.type.shape[:-1])()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        check_square(self, a)
        dtype = node.outputs[0].type.dtype
        if a.shape[-1] == 0:
            out[0][0], out[1][0] = np.zeros(a.shape, dtype), np.zeros(a.shape[:-1], "int32")
            return
        lu, piv = scipy_linalg().lu_factor(a, check_finite=False)
        out[0][0], out[1][0] = lu.astype(dtype, copy=False), piv.astype("int32", copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0], tuple(shapes[0][:-1])]

    @holomorphic_grads
    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Through the unpacked factors: L_bar = tril(lu_bar, -1), U_bar = triu(lu_bar)."""
        (a,), (g, _) = inputs, grads
        p, l, u = LU()(a)
        return [_lu_grad(p, l, u, tril(g, -1), triu(g))]


class LUSolve(LinalgOp):
    """scipy.linalg.lu_solve((lu, piv), b, trans): x with a x = b (trans 0), a^T x = b (1) or a^H x = b (2)."""

    __props__ = ("trans", "b_ndim")

    def __init__(self, trans: int = 0, b_ndim: int = 2) -> None:
        self.trans, self.b_ndim = check_trans(trans), int(b_ndim)

    def make_node(self, lu: Any, piv: Any, b: Any) -> Apply:
        lu = as_matrix(self, lu, "lu")
        piv = as_tensor_variable(piv)
        if piv.ndim != lu.ndim - 1 or np.dtype(piv.type.dtype).kind not in "iu":
            raise TypeError(f"{self}: piv must be integer with one dimension less than lu, got {piv.describe()}")
        b, _, shape, dtype = rhs(self, lu, b, b_ndim=self.b_ndim)
        lu = lu if lu.type.dtype == dtype else cast(lu, dtype)
        return Apply(self, [lu, piv, b], [matrix_type(dtype, shape, ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        lu, piv, b = inputs
        check_rhs(self, lu, b, self.b_ndim)
        dtype = node.outputs[0].type.dtype
        core = b.shape[b.ndim - self.b_ndim:]
        if lu.shape[-1] == 0:
            batch = np.broadcast_shapes(lu.shape[:-2], b.shape[:b.ndim - self.b_ndim])
            out[0][0] = np.zeros(batch + core, dtype)
            return
        fn = scipy_linalg().lu_solve
        out[0][0] = batch_apply(self, lambda f, p, r: fn((f, p), r, trans=self.trans, check_finite=False),
                                [lu, piv, b], [2, 1, self.b_ndim], [core], [dtype])[0]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [solve_shape(node.inputs[0], node.inputs[2], [shapes[0], shapes[2]], self.b_ndim)]

    def connection_pattern(self, node: Apply) -> list:
        return [[True], [False], [True]]

    @holomorphic_grads
    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """b_bar = lu_solve(trans = 1 - trans); lu_bar (trans 0) = -triu(c x^T) - tril(d (U x)^T, -1)."""
        lu, piv, b = inputs
        (x,), (gx,) = outputs, grads
        if self.trans == 2:
            no_complex(self, [lu, b])
        gb = LUSolve(1 - min(self.trans, 1), self.b_ndim)(lu, piv, gx)
        if self.trans:
            return [grad_not_implemented(self, 0, lu, "trans=1"), None, to_shape_of(gb, b)]
        n = lu.shape[lu.ndim - 1]
        l = tril(lu, -1) + eye(n, n, 0, real_dtype(lu.type.dtype))
        u = triu(lu)
        xm = x if self.b_ndim == 2 else x.dimshuffle(*range(x.ndim), "x")
        gxm = gx if self.b_ndim == 2 else gx.dimshuffle(*range(gx.ndim), "x")
        c = SolveTriangular(False, 1, False, 2)(u, gxm)
        d = SolveTriangular(True, 1, True, 2)(l, c)
        glu = neg(triu(mm(c, mT(xm), 2))) + neg(tril(mm(d, mT(mm(u, xm, 2)), 2), -1))
        return [to_shape_of(glu, lu), None, to_shape_of(gb, b)]


def lu(a: Any, permute_l: bool = False) -> tuple:
    """scipy.linalg.lu: (P, L, U) with a = P @ L @ U, or (P @ L, U) with permute_l; a may be m x n."""
    return tuple(LU(permute_l)(a))


def lu_factor(a: Any) -> tuple:
    """scipy.linalg.lu_factor: (lu, piv)."""
    return tuple(LUFactor()(a))


def lu_solve(lu_and_piv: Any, b: Any, trans: int = 0) -> TensorVariable:
    """scipy.linalg.lu_solve((lu, piv), b, trans)."""
    f, piv = lu_and_piv
    b = as_tensor_variable(b)
    return LUSolve(trans, 1 if b.ndim == 1 else 2)(f, piv, b)
