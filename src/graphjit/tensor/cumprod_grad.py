"""The derivatives of cumprod along an axis without dividing by x (exact where x has zeros), in numpy: what
CumprodDiff (tensor/extra_ops.py) computes and lowers natively.

For y = cumprod(x), dy_i/dx_k = prod_{j<=i, j!=k} x_j for k <= i. The forward form (JVP of tangent v) is the
recurrence d_i = x_i d_{i-1} + v_i y_{i-1}; the transposed form (VJP of cotangent g) is
g'_k = y_{k-1} R_k with R_k = g_k + x_{k+1} R_{k+1}: the reverse-mode sweep of the sequential product.
"""

from __future__ import annotations

import numpy as np


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


__all__ = ["diff_dtype", "cumprod_jvp", "cumprod_vjp"]
