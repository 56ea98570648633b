"""Linear solves: Solve (scipy.linalg.solve's assume_a 'gen' / 'sym' / 'pos') and SolveTriangular.

The right-hand side is a vector when it is 1-d, otherwise a batch of matrices (..., n, k) (numpy 2 and
scipy's batching rule); batch dimensions broadcast.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.blas import matmul
from graphjit.tensor.shape import broadcast_shape_symbolic
from graphjit.tensor.math import neg, sub
from graphjit.tensor.variable import TensorVariable

from graphjit.tensor.linalg._common import (LinAlgError, LinalgOp, as_matrix, batch_apply, batch_of, check_on_error,
                                            check_square, common_dtype, expand_last, holomorphic_grads, matrix_type,
                                            mT, no_complex, outer_last, result_dtype, scipy_linalg, sym,
                                            to_shape_of, tril, triu)


def rhs(op: Any, a: TensorVariable, b: Any, what: str = "b", b_ndim: int | None = None) -> tuple:
    """(b cast to the common dtype, b_ndim, output static shape, dtype) for a solve of a (..., n, n) against b:
    b is a (batch of) vector(s) when b_ndim is 1 (by default when b is 1-d), else of matrices."""
    b = as_tensor_variable(b)
    b_ndim = (1 if b.ndim == 1 else 2) if b_ndim is None else b_ndim
    if b.ndim < b_ndim:
        raise TypeError(f"{op}: input {what} must have at least {b_ndim} dimension(s), got {b.describe()}")
    dtype = common_dtype(a.type.dtype, result_dtype(op, b))
    n, k = a.type.shape[-1], b.type.shape[b.ndim - b_ndim]
    if n is not None and k is not None and n != k:
        raise ValueError(f"{op}: {a.describe()} and {what} {b.describe()} have incompatible lengths {n} and {k}")
    batch = batch_of(a.type.shape, b.type.shape, core=(2, b_ndim), what=f"batch dimensions of {op}")
    out_core = (a.type.shape[-1],) + tuple(b.type.shape[b.ndim - b_ndim + 1:])
    return (b if b.type.dtype == dtype else cast(b, dtype)), b_ndim, batch + out_core, dtype


def check_rhs(op: Any, a: np.ndarray, b: np.ndarray, b_ndim: int) -> None:
    """Raise ValueError unless a is square and b's rows (b_ndim 1 or 2) match it."""
    check_square(op, a)
    if b.shape[b.ndim - b_ndim] != a.shape[-1]:
        raise ValueError(f"{op}: a of shape {a.shape} and b of shape {b.shape} are incompatible")


class _RhsSolve(LinalgOp):
    """A solve of a for the right-hand side b (b_ndim 1: vectors, 2: matrices), batched: make_node, shapes and
    the batched perform (an empty system gives zeros) shared by the solves; subclasses define _one(a, b)."""

    b_ndim: int

    def make_node(self, a: Any, b: Any) -> Apply:
        a = as_matrix(self, a)
        b, _, shape, dtype = rhs(self, a, b, b_ndim=self.b_ndim)
        a = a if a.type.dtype == dtype else cast(a, dtype)
        return Apply(self, [a, b], [matrix_type(dtype, shape, ())()])

    def _solve_batch(self, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
        core = b.shape[b.ndim - self.b_ndim:]
        if a.shape[-1] == 0:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:b.ndim - self.b_ndim])
            return np.zeros(batch + core, dtype)
        return batch_apply(self, self._one, [a, b], [2, self.b_ndim], [core], [dtype])[0]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [solve_shape(*node.inputs, shapes, self.b_ndim)]


class SolveTriangular(_RhsSolve):
    """scipy.linalg.solve_triangular: x with op(a) x = b, a triangular (only its lower/upper part is read)."""

    __props__ = ("lower_tri", "trans", "unit_diagonal", "b_ndim", "on_error")

    def __init__(self, lower: bool = False, trans: int = 0, unit_diagonal: bool = False, b_ndim: int = 2,
                 on_error: str = "raise") -> None:
        self.lower_tri, self.unit_diagonal, self.b_ndim = bool(lower), bool(unit_diagonal), int(b_ndim)
        self.trans = check_trans(trans)             # 2 ('C'): the conjugate transpose (for real matrices, 'T')
        self.on_error = check_on_error(on_error)

    def _one(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        try:
            return scipy_linalg().solve_triangular(a, b, trans=self.trans, lower=self.lower_tri,
                                                   unit_diagonal=self.unit_diagonal, check_finite=False)
        except LinAlgError:
            if self.on_error == "raise":
                raise LinAlgError(f"{self}: singular matrix (a zero on the diagonal)") from None
            return np.full(b.shape, np.nan)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        a, b = inputs
        check_rhs(self, a, b, self.b_ndim)
        out[0][0] = self._solve_batch(a, b, node.outputs[0].type.dtype)


    def _mask(self, g: TensorVariable) -> TensorVariable:
        k = (-1 if self.lower_tri else 1) if self.unit_diagonal else 0
        return tril(g, k) if self.lower_tri else triu(g, k)

    @holomorphic_grads
    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """b_bar = op(a)^-T x_bar; a_bar = -(b_bar x^T) or -(x b_bar^T) on a's triangle."""
        a, b = inputs
        (x,), (gx,) = outputs, grads
        if self.trans == 2:
            no_complex(self, inputs)
        trans = min(self.trans, 1)
        other = SolveTriangular(self.lower_tri, 1 - trans, self.unit_diagonal, self.b_ndim, self.on_error)
        gb = other(a, gx)
        vec = self.b_ndim == 1
        ga = outer_last(gb, x, vec) if trans == 0 else outer_last(x, gb, vec)
        return [to_shape_of(neg(self._mask(ga)), a), to_shape_of(gb, b)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """dx = op(a)^-1 (db - op(da) x)."""
        a, b = inputs
        da, db = eval_points
        if da is None and db is None:
            return [None]
        if self.trans == 2:
            no_complex(self, inputs, "R_op")
        x = self(a, b)
        rhs_ = db if db is not None else None
        if da is not None:
            m = self._mask(da)
            m = mT(m) if self.trans else m
            prod = apply_to(m, x, self.b_ndim)
            rhs_ = neg(prod) if rhs_ is None else sub(rhs_, prod)
        return [self(a, rhs_)]


def check_trans(trans: Any) -> int:
    """scipy's trans argument as 0 (a), 1 (a^T) or 2 (a^H)."""
    value = {"N": 0, "T": 1, "C": 2}.get(trans, trans) if isinstance(trans, str) else trans
    if value not in (0, 1, 2) or isinstance(value, bool):
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    return int(value)


def apply_to(m: TensorVariable, x: TensorVariable, b_ndim: int) -> TensorVariable:
    """m @ x for a batch of matrices x, or (b_ndim 1) of vectors x."""
    if b_ndim == 2:
        return matmul(m, x)
    prod = matmul(m, expand_last(x))
    return prod.dimshuffle(*range(prod.ndim - 1))


def solve_shape(a: Variable, b: Variable, shapes: list, b_ndim: int) -> tuple:
    """Symbolic output shape of a solve of a against b (shapes: theirs): the broadcast batch, b's core shape."""
    sa, sb = shapes
    ka, kb = a.ndim - 2, b.ndim - b_ndim
    n = max(ka, kb)
    one = (1,) * n
    sym_a, sym_b = tuple(one[:n - ka]) + tuple(sa[:ka]), tuple(one[:n - kb]) + tuple(sb[:kb])
    st_a, st_b = one[:n - ka] + a.type.shape[:ka], one[:n - kb] + b.type.shape[:kb]
    batch = broadcast_shape_symbolic([sym_a, sym_b], [st_a, st_b]) if n else ()
    return tuple(batch) + (sa[-1],) + tuple(sb[b.ndim - b_ndim + 1:])


def _fold(a: np.ndarray, lower: bool = False, hermitian: bool = False) -> np.ndarray:
    """The symmetric matrices scipy's solve sees for assume_a 'sym': the upper (lower) triangle mirrored; with
    hermitian ('her', 'pos' of a complex a) mirrored conjugated, the diagonal's imaginary part dropped."""
    tri = np.tril if lower else np.triu
    other = np.swapaxes(tri(a, -1 if lower else 1), -1, -2)
    if not hermitian or a.dtype.kind != "c":
        return tri(a) + other
    diag = np.zeros_like(a)
    idx = np.arange(a.shape[-1])
    diag[..., idx, idx] = a[..., idx, idx].real
    return tri(a, -1 if lower else 1) + diag + other.conj()


class Solve(_RhsSolve):
    """scipy.linalg.solve(a, b, assume_a=..., lower=...): 'gen' (LU, numpy.linalg.solve), 'sym' (a symmetric,
    its upper triangle read, or its lower one with lower=True), 'her' (Hermitian; 'sym' for real a) or 'pos'
    (symmetric / Hermitian positive definite, Cholesky; LinAlgError if it is not)."""

    __props__ = ("assume_a", "b_ndim", "on_error", "lower_tri")

    def __init__(self, assume_a: str = "gen", b_ndim: int = 2, on_error: str = "raise", lower: bool = False
                 ) -> None:
        aliases = {"general": "gen", "symmetric": "sym", "positive definite": "pos", "hermitian": "her"}
        self.assume_a = aliases.get(assume_a, assume_a)
        if self.assume_a not in ("gen", "sym", "her", "pos"):
            raise ValueError(f"solve: assume_a must be 'gen', 'sym', 'her', 'pos', 'lower triangular' or 'upper "
                             f"triangular' (scipy's 'diagonal', 'tridiagonal' and 'banded' are not provided), "
                             f"got {assume_a!r}")
        self.b_ndim, self.on_error = int(b_ndim), check_on_error(on_error)
        self.lower_tri = bool(lower) and self.assume_a != "gen"      # 'gen' reads the whole matrix

    def _one(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        try:
            if self.assume_a == "pos":
                np.linalg.cholesky(a)
            return np.linalg.solve(a, b)
        except LinAlgError as e:
            if self.on_error == "raise":
                what = "matrix is not positive definite" if self.assume_a == "pos" else str(e).lower()
                raise LinAlgError(f"{self}: {what}") from None
            return np.full(b.shape, np.nan)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        a, b = inputs
        check_rhs(self, a, b, self.b_ndim)
        dtype = node.outputs[0].type.dtype
        a = a if self.assume_a == "gen" else _fold(a, self.lower_tri, self.assume_a != "sym")
        if self.on_error == "raise" and self.assume_a != "pos" and a.ndim == 2 and b.ndim == self.b_ndim \
                and a.shape[-1]:
            out[0][0] = self._one(a, b).astype(dtype, copy=False)
            return
        out[0][0] = self._solve_batch(a, b, dtype)


    @holomorphic_grads
    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """b_bar = a^-T x_bar; a_bar = -b_bar x^T (symmetrized for 'sym'/'pos')."""
        a, b = inputs
        if self.assume_a in ("her", "pos"):
            no_complex(self, inputs)
        (x,), (gx,) = outputs, grads
        at = a if self.assume_a != "gen" else mT(a)
        gb = Solve(self.assume_a, self.b_ndim, self.on_error, self.lower_tri)(at, gx)
        ga = neg(outer_last(gb, x, self.b_ndim == 1))
        if self.assume_a != "gen":
            ga = sym(ga)
        return [to_shape_of(ga, a), to_shape_of(gb, b)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """dx = a^-1 (db - da x)."""
        a, b = inputs
        da, db = eval_points
        if da is None and db is None:
            return [None]
        if self.assume_a in ("her", "pos"):
            no_complex(self, inputs, "R_op")
        x = self(a, b)
        r = db
        if da is not None:
            prod = apply_to(sym(da) if self.assume_a != "gen" else da, x, self.b_ndim)
            r = neg(prod) if r is None else sub(r, prod)
        return [self(a, r)]


def solve(a: Any, b: Any, assume_a: str = "gen", on_error: str = "raise", lower: bool = False) -> TensorVariable:
    """scipy.linalg.solve: x with a @ x = b; assume_a 'gen', 'sym', 'her', 'pos' (lower: which triangle they read) or
    'lower triangular' / 'upper triangular'; on_error 'raise' or 'nan'."""
    b = as_tensor_variable(b)
    b_ndim = 1 if b.ndim == 1 else 2
    if assume_a in ("lower triangular", "upper triangular"):
        return SolveTriangular(assume_a == "lower triangular", 0, False, b_ndim, on_error)(a, b)
    return Solve(assume_a, b_ndim, on_error, lower)(a, b)


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False, unit_diagonal: bool = False,
                     on_error: str = "raise") -> TensorVariable:
    """scipy.linalg.solve_triangular: x with op(a) @ x = b for triangular a (lower=False: upper, as scipy)."""
    b = as_tensor_variable(b)
    return SolveTriangular(lower, trans, unit_diagonal, 1 if b.ndim == 1 else 2, on_error)(a, b)
