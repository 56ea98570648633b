"""Tensor shared variables: the shared() constructor for ndarrays and numbers, and TensorSharedVariable."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from graphjit.graph.shared import SharedVariable, shared_constructor
from graphjit.scalar.basic import ALL_DTYPES
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorOps

_PY_NUMBERS = (bool, int, float, complex)


class TensorSharedVariable(TensorOps, SharedVariable):
    """A shared variable holding an ndarray: usable in expressions like any symbolic tensor."""


def _as_array(value: Any, borrow: bool) -> np.ndarray:
    """value as an ndarray (a copy unless borrow); TypeError for values that are not arrays or numbers."""
    if isinstance(value, np.ndarray):
        arr = value if borrow else value.copy()
    elif isinstance(value, (np.generic,) + _PY_NUMBERS):
        arr = np.asarray(value)  # Python int -> int64, float -> float64 (numpy's defaults)
    else:
        raise TypeError(f"tensor shared variables hold ndarrays or numbers, not {type(value).__name__}")
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"tensor shared variables hold numeric arrays, not dtype {arr.dtype}")
    if str(arr.dtype) not in ALL_DTYPES:
        raise ValueError(f"shared(): dtype {arr.dtype} is not supported by tensors; "
                         f"supported: {', '.join(ALL_DTYPES)}")
    return arr


def _static_shape(arr: np.ndarray, shape: Optional[Sequence[Optional[int]]],
                  broadcastable: Optional[Sequence[bool]]) -> tuple:
    """The TensorType shape: unknown lengths by default (set_value may change them)."""
    if shape is not None and broadcastable is not None:
        raise ValueError("shared(): give shape or broadcastable, not both")
    if broadcastable is not None:
        shape = tuple(1 if b else None for b in broadcastable)
    if shape is None:
        return (None,) * arr.ndim
    shape = tuple(shape)
    if len(shape) != arr.ndim or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
        raise ValueError(f"shared(): static shape {shape} does not fit a value of shape {arr.shape}")
    return shape


@shared_constructor
def tensor_constructor(value: Any, name: Optional[str] = None, strict: bool = False,
                       allow_downcast: Optional[bool] = None, borrow: bool = False,
                       shape: Optional[Sequence[Optional[int]]] = None,
                       broadcastable: Optional[Sequence[bool]] = None) -> TensorSharedVariable:
    """A TensorSharedVariable for an ndarray or a number (a 0-d tensor); shape= fixes static lengths."""
    arr = _as_array(value, borrow)
    ttype = TensorType(str(arr.dtype), _static_shape(arr, shape, broadcastable))
    return TensorSharedVariable(type=ttype, value=arr, strict=strict, allow_downcast=allow_downcast,
                                name=name)


__all__ = ["TensorSharedVariable", "tensor_constructor"]
