"""Linear-algebra functions built from other ops (matrix_power, kron, norm) and the ops expm and lstsq."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.tensor.alloc import eye, zeros
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.join import concatenate
from graphjit.tensor.math import (abs as tabs, conj, max as tmax, min as tmin, neq, pow as tpow, real, sqrt,
                                  sum as tsum)
from graphjit.tensor.shape import reshape
from graphjit.tensor.variable import TensorVariable

from graphjit.tensor.type import TensorType
from graphjit.tensor.linalg._common import (LinAlgError, LinalgOp, SquareMatrixOp, as_matrix, check_square,
                                            common_dtype, holomorphic_grads, is_complex, mT, no_complex, real_dtype,
                                            result_dtype, scipy_linalg)
from graphjit.tensor.linalg.eigen import SVD
from graphjit.tensor.linalg.inverse import Inv, Pinv
from graphjit.tensor.linalg.solve import apply_to as mm


def matrix_power(a: Any, n: int) -> TensorVariable:
    """numpy.linalg.matrix_power: a^n by repeated squaring (n < 0: of the inverse; n = 0: identity)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}")
    a = as_tensor_variable(a)
    if a.ndim < 2:
        raise TypeError(f"matrix_power: input a must have at least 2 dimensions, got {a.describe()}")
    if n == 0:
        k = a.shape[a.ndim - 1]
        return eye(k, k, 0, real_dtype(a.type.dtype)) + zeros((), a.type.dtype) * a
    if n < 0:
        a, n = Inv()(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else mm(result, base, 2)
        n >>= 1
        if n:
            base = mm(base, base, 2)
    return result


def kron(a: Any, b: Any) -> TensorVariable:
    """numpy.kron: the Kronecker product (blocks a[i, j] * b), any ranks (the smaller padded with 1s)."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    nd = max(a.ndim, b.ndim)
    a = a.dimshuffle(*(["x"] * (nd - a.ndim)), *range(a.ndim))
    b = b.dimshuffle(*(["x"] * (nd - b.ndim)), *range(b.ndim))
    pa = [d for k in range(nd) for d in (k, "x")]
    pb = [d for k in range(nd) for d in ("x", k)]
    prod = a.dimshuffle(*pa) * b.dimshuffle(*pb)
    shape = [a.shape[k] * b.shape[k] for k in range(nd)]
    return reshape(prod, shape, ndim=nd)


def _squares(x: TensorVariable) -> TensorVariable:
    """|x|^2 elementwise (real for a complex x)."""
    return real(x * conj(x)) if is_complex(x) else x * x


def _vector_norm(x: TensorVariable, ord: Any, axis: int, keepdims: bool) -> TensorVariable:
    ax = abs_ = tabs(x)
    if ord is None or ord == 2:
        return sqrt(tsum(_squares(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return tmax(ax, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return tmin(ax, axis=axis, keepdims=keepdims)
    if ord == 0:
        return tsum(cast(neq(x, 0), real_dtype(x.type.dtype)), axis=axis, keepdims=keepdims)
    if ord == 1:
        return tsum(abs_, axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    dtype = real_dtype(x.type.dtype)
    p = np.asarray(ord, dtype)
    return tpow(tsum(tpow(ax, p), axis=axis, keepdims=keepdims), np.asarray(1.0 / ord, dtype))


def _matrix_norm(x: TensorVariable, ord: Any, axes: tuple, keepdims: bool) -> TensorVariable:
    r, c = axes
    if ord in (None, "fro", "f"):
        res = sqrt(tsum(_squares(x), axis=axes))
    elif ord == "nuc" or ord in (2, -2):
        moved = x.dimshuffle(*[d for d in range(x.ndim) if d not in axes], r, c)
        s = SVD(False, False)(moved)
        res = tsum(s, axis=-1) if ord == "nuc" else (tmax(s, axis=-1) if ord == 2 else tmin(s, axis=-1))
    elif ord in (1, -1):
        col = tsum(tabs(x), axis=r)
        res = (tmax if ord == 1 else tmin)(col, axis=c - 1 if c > r else c)
    elif ord in (np.inf, -np.inf):
        row = tsum(tabs(x), axis=c)
        res = (tmax if ord == np.inf else tmin)(row, axis=r - 1 if r > c else r)
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if keepdims:
        res = res.dimshuffle(*[("x" if d in axes else k) for k, d in _keep_pattern(x.ndim, axes)])
    return res


def _keep_pattern(ndim: int, axes: tuple) -> list:
    out, k = [], 0
    for d in range(ndim):
        out.append((k, d))
        if d not in axes:
            k += 1
    return out


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> TensorVariable:
    """numpy.linalg.norm: vector norms (ord None/2, 1, inf, -inf, 0, p) and matrix norms ('fro', 'nuc', 1,
    -1, 2, -2, inf, -inf) over axis (an int, a pair, or None: the whole array as numpy does)."""
    x = as_tensor_variable(x)
    dtype = result_dtype("norm", x)
    x = x if x.type.dtype == dtype else cast(x, dtype)
    if axis is None:
        if ord is None:
            res = sqrt(tsum(_squares(x)))
            return res.dimshuffle(*(["x"] * x.ndim)) if keepdims else res
        if x.ndim == 1:
            return _vector_norm(x, ord, 0, keepdims)
        if x.ndim == 2:
            return _matrix_norm(x, ord, (0, 1), keepdims)
        raise ValueError("norm: improper number of dimensions to norm")
    if isinstance(axis, (int, np.integer)):
        return _vector_norm(x, ord, int(axis) % x.ndim, keepdims)
    axes = tuple(int(a) % x.ndim for a in axis)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError(f"norm: invalid axis {axis!r}")
    return _matrix_norm(x, ord, axes, keepdims)


class Expm(SquareMatrixOp):
    """scipy.linalg.expm: the matrix exponential of each matrix (Pade with scaling and squaring)."""

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        check_square(self, a)
        dtype = node.outputs[0].type.dtype
        if a.shape[-1] == 0:
            out[0][0] = np.zeros(a.shape, dtype)
            return
        out[0][0] = np.asarray(scipy_linalg().expm(a)).astype(dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    @holomorphic_grads
    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The upper-right block of expm([[a^T, g], [0, a^T]])."""
        (a,), (g,) = inputs, grads
        return [_block_expm(self, mT(a), g)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The upper-right block of expm([[a, da], [0, a]])."""
        (a,), (da,) = inputs, eval_points
        return [None if da is None else _block_expm(self, a, da)]


def _block_expm(op: Expm, a: TensorVariable, e: TensorVariable) -> TensorVariable:
    nd = a.ndim
    z = zeros((), a.type.dtype) * a
    top = concatenate([a, e], axis=nd - 1)
    bottom = concatenate([z, a], axis=nd - 1)
    big = op(concatenate([top, bottom], axis=nd - 2))
    n = a.shape[nd - 1]
    return big[(Ellipsis, slice(None, n), slice(n, None))]


def expm(a: Any) -> TensorVariable:
    """scipy.linalg.expm."""
    return Expm()(a)


class Lstsq(LinalgOp):
    """numpy.linalg.lstsq(a, b, rcond): (x, residuals, rank, s) for 2-d a; residuals are empty unless the rank
    is n < m (numpy's rule), rank is int32 (numpy's dtype); residuals and s are real for a complex a."""

    __props__ = ("rcond",)

    def __init__(self, rcond: Optional[float] = None) -> None:
        self.rcond = None if rcond is None else float(rcond)

    def make_node(self, a: Any, b: Any) -> Apply:
        a = as_matrix(self, a, square=False)
        b = as_tensor_variable(b)
        if a.ndim != 2 or b.ndim not in (1, 2):
            raise TypeError(f"{self}: takes a 2-d a and a 1-d or 2-d b, got {a.describe()} and {b.describe()}")
        dtype = common_dtype(a.type.dtype, result_dtype(self, b))
        real_t = real_dtype(dtype)
        a, b = (v if v.type.dtype == dtype else cast(v, dtype) for v in (a, b))
        (m, n), mb = a.type.shape, b.type.shape[0]
        if m is not None and mb is not None and m != mb:
            raise LinAlgError(f"{self}: incompatible dimensions: a {a.describe()}, b {b.describe()}")
        k = None if m is None or n is None else min(m, n)
        x = TensorType(dtype, (n,) + b.type.shape[1:])
        return Apply(self, [a, b], [x(), TensorType(real_t, (None,))(), TensorType("int32", ())(),
                                    TensorType(real_t, (k,))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        a, b = inputs
        if a.shape[0] != b.shape[0]:
            raise LinAlgError(f"{self}: incompatible dimensions: a of shape {a.shape}, b of shape {b.shape}")
        try:
            x, res, rank, s = np.linalg.lstsq(a, b, rcond=self.rcond)
        except LinAlgError:
            raise LinAlgError(f"{self}: SVD did not converge in Linear Least Squares") from None
        for o, r, v in zip(out, (x, res, rank, s), node.outputs):
            o[0] = np.asarray(r).astype(v.type.dtype, copy=False)

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Through x = pinv(a) b (residuals, rank and s: not differentiated, an error if used)."""
        no_complex(self, inputs)
        a, b = inputs
        gx = grads[0]
        x_pinv = Pinv(self.rcond)(a)
        vec = b.ndim == 1
        gm = gx.dimshuffle(0, "x") if vec else gx
        bm = b.dimshuffle(0, "x") if vec else b
        gp = mm(gm, mT(bm), 2)
        ga = Pinv(self.rcond).L_op([a], [x_pinv], [gp])[0]
        gb = mm(mT(x_pinv), gm, 2)
        return [ga, gb.dimshuffle(0) if vec else gb]


def lstsq(a: Any, b: Any, rcond: Optional[float] = None) -> tuple:
    """numpy.linalg.lstsq: (x, residuals, rank, s); only x has a gradient."""
    return tuple(Lstsq(rcond)(a, b))

