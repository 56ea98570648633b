"""CumprodDiff: the derivatives of cumprod along an axis without dividing by x (exact where x has zeros).

For y = cumprod(x), dy_i/dx_k = prod_{j<=i, j!=k} x_j for k <= i. The forward form (JVP of tangent v) is the
recurrence d_i = x_i d_{i-1} + v_i y_{i-1}; the transposed form (VJP of cotangent g) is
g'_k = y_{k-1} R_k with R_k = g_k + x_{k+1} R_{k+1}: the reverse-mode sweep of the sequential product.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import grad_not_implemented
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.type import TensorType


def diff_dtype(x_dtype: str, v_dtype: str) -> str:
    """The float dtype the derivative is computed in (float64 for integer inputs)."""
    dtype = np.result_type(x_dtype, v_dtype)
    return str(dtype) if dtype.kind == "f" else "float64"


def _exclusive_cumprod(x: np.ndarray) -> np.ndarray:
    """y_{k-1} along axis 0 (1 at k = 0), by multiplications only."""
    p = np.ones_like(x)
    if len(x) > 1:
        p[1:] = np.cumprod(x[:-1], axis=0)
    return p


def cumprod_jvp(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """d_i = x_i d_{i-1} + v_i y_{i-1} along axis 0."""
    y_prev, d = _exclusive_cumprod(x), np.empty_like(x)
    acc = np.zeros_like(x[:1])
    for i in range(len(x)):
        acc = acc * x[i] + v[i] * y_prev[i]
        d[i] = acc[0]
    return d


def cumprod_vjp(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """y_{k-1} R_k with R_k = g_k + x_{k+1} R_{k+1} along axis 0."""
    out = _exclusive_cumprod(x)
    r, prev = np.zeros_like(x[:1]), np.ones_like(x[:1])
    for k in range(len(x) - 1, -1, -1):
        r = r * prev + g[k]
        prev = x[k:k + 1]
        out[k] *= r[0]
    return out


class CumprodDiff(Op):
    """The JVP (transpose=False) or VJP (transpose=True) of cumprod(x, axis) applied to v, exact at zeros."""

    __props__ = ("axis", "transpose")

    def __init__(self, axis: int, transpose: bool):
        self.axis = int(axis)
        self.transpose = bool(transpose)

    def make_node(self, x: Any, v: Any) -> Apply:
        x, v = as_tensor_variable(x), as_tensor_variable(v)
        if x.ndim != v.ndim or not 0 <= self.axis < x.ndim:
            raise ValueError(f"{self}: needs x and v of one rank with axis in range, got "
                             f"{x.describe()} and {v.describe()}")
        shape = tuple(a if a is not None else b for a, b in zip(x.type.shape, v.type.shape))
        return Apply(self, [x, v], [TensorType(diff_dtype(x.dtype, v.dtype), shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, v = inputs
        if x.shape != v.shape:
            raise ValueError(f"{self}: x and v shapes differ: {x.shape} and {v.shape}")
        dtype = node.outputs[0].type.dtype
        xa, va = (np.moveaxis(np.asarray(a, dtype=dtype), self.axis, 0) for a in (x, v))
        fn = cumprod_vjp if self.transpose else cumprod_jvp
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            res = fn(xa, va)
        out[0][0] = np.ascontiguousarray(np.moveaxis(res, 0, self.axis))

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Linear in v: the other form is the transpose; the second derivative in x is not implemented."""
        x, _ = inputs
        gv = CumprodDiff(self.axis, not self.transpose)(x, grads[0])
        return [grad_not_implemented(self, 0, x, "second derivatives of cumprod"), gv]


__all__ = ["CumprodDiff", "cumprod_jvp", "cumprod_vjp"]
