"""numpy's top-level diag, diagonal and trace (offset, any two axes) as views and ExtractDiag/AllocDiag, so each
lowers natively for every real dtype with the gradient of its parts.  graphjit.tensor.linalg's diagonal and trace
follow numpy.linalg instead (the last two axes)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.lengths import static_axis
from graphjit.tensor.linalg.diag import alloc_diag, extract_diag
from graphjit.tensor.math import sum as tsum
from graphjit.tensor.pad import pad
from graphjit.tensor.subtensor import getitem
from graphjit.tensor.variable import TensorVariable


def _offset(offset: Any, fn: str) -> int:
    if isinstance(offset, (bool, np.bool_)) or not isinstance(offset, (int, np.integer)):
        raise TypeError(f"{fn}: the offset must be a static int, got {offset!r}")
    return int(offset)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> TensorVariable:
    """numpy.diagonal: the offset-th diagonal of the matrices in axes (axis1, axis2), as a last axis after the
    others (a view)."""
    a = as_tensor_variable(a)
    if a.ndim < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got {a.describe()}")
    k = _offset(offset, "diagonal")
    a1, a2 = static_axis(axis1, a.ndim, a, "diagonal"), static_axis(axis2, a.ndim, a, "diagonal")
    if a1 == a2:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same (both {a1})")
    moved = a.dimshuffle(*[d for d in range(a.ndim) if d not in (a1, a2)], a1, a2)
    head = (slice(None),) * (a.ndim - 2)
    if k > 0:
        moved = getitem(moved, head + (slice(None), slice(k, None)))
    elif k < 0:
        moved = getitem(moved, head + (slice(-k, None),))
    return extract_diag(moved)


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Optional[str] = None
          ) -> TensorVariable:
    """numpy.trace: the sums along the offset-th diagonals of the matrices in axes (axis1, axis2) (numpy's
    accumulator dtype, or dtype)."""
    return tsum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diag(v: Any, k: int = 0) -> TensorVariable:
    """numpy.diag: a 1-d v as the square matrix with v on diagonal k; a 2-d v's k-th diagonal."""
    v = as_tensor_variable(v)
    k = _offset(k, "diag")
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1- or 2-d, got {v.describe()}")
    n = v.shape[0]
    square = alloc_diag(v, n, n)
    return pad(square, ((0, k), (k, 0)) if k >= 0 else ((-k, 0), (0, -k))) if k else square


__all__ = ["diag", "diagonal", "trace"]
