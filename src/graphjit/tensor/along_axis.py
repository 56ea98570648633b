"""numpy's take_along_axis and put_along_axis, as advanced indices (natively lowered, with their gradients).

The index is numpy's own construction: the given indices along `axis`, and along every other dimension d an
``arange(arr.shape[d])`` shaped to broadcast against them. put_along_axis is functional: it returns the new
array (numpy writes into its argument).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from graphjit.tensor.advanced_subtensor import AdvancedIncSubtensor, AdvancedSubtensor
from graphjit.tensor.alloc import arange
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.elemwise import normalize_axis
from graphjit.tensor.shape import reshape, shape
from graphjit.tensor.shape_base import shape_i
from graphjit.tensor.subtensor import ArrayIndex
from graphjit.tensor.variable import TensorVariable


def _prepare(name: str, arr: Any, indices: Any, axis: Optional[int]) -> Tuple[TensorVariable, TensorVariable, int]:
    """(arr, flattened when axis is None; indices; the normalised axis), checked as numpy checks them."""
    arr, indices = as_tensor_variable(arr), as_tensor_variable(indices)
    if np.dtype(indices.dtype).kind not in "iu":
        raise IndexError(f"{name}: `indices` must be an integer array, got {indices.describe()}")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError(f"{name}: when axis=None, `indices` must have a single dimension "
                             f"(got {indices.ndim})")
        arr, axis = arr.flatten(), 0
    (axis,) = normalize_axis(axis, arr.ndim)
    if indices.ndim != arr.ndim:
        raise ValueError(f"{name}: `indices` and `arr` must have the same number of dimensions "
                         f"({indices.ndim} and {arr.ndim})")
    return arr, indices, axis


def _along_axis_index(arr: TensorVariable, indices: TensorVariable, axis: int) -> List[TensorVariable]:
    """The index arrays: indices at axis, a broadcastable arange elsewhere."""
    out = []
    for d in range(arr.ndim):
        if d == axis:
            out.append(indices)
        else:
            pattern = ["x"] * d + [0] + ["x"] * (arr.ndim - d - 1)
            out.append(arange(shape_i(arr, d), dtype="int64").dimshuffle(*pattern))
    return out


def take_along_axis(arr: Any, indices: Any, axis: Optional[int]) -> TensorVariable:
    """numpy.take_along_axis: arr's values at indices along axis (indices broadcast against arr elsewhere)."""
    arr, indices, axis = _prepare("take_along_axis", arr, indices, axis)
    index = _along_axis_index(arr, indices, axis)
    return AdvancedSubtensor((ArrayIndex(arr.ndim),) * arr.ndim)(arr, *index)


def put_along_axis(arr: Any, indices: Any, values: Any, axis: Optional[int]) -> TensorVariable:
    """numpy.put_along_axis, functional: a copy of arr with values (broadcast) written at indices along axis."""
    original = as_tensor_variable(arr)
    flat, indices, axis_ = _prepare("put_along_axis", original, indices, axis)
    index = _along_axis_index(flat, indices, axis_)
    out = AdvancedIncSubtensor((ArrayIndex(flat.ndim),) * flat.ndim, set_instead_of_inc=True)(flat, values, *index)
    return out if axis is not None else reshape(out, shape(original), ndim=original.ndim)


__all__ = ["take_along_axis", "put_along_axis"]
