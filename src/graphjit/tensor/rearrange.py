"""numpy's functions that rearrange an array's axes or elements without computing new values: flip, fliplr,
flipud, swapaxes, moveaxis, rot90, roll, atleast_1d/2d/3d.  Each is a graph of views (DimShuffle, Subtensor with
a negative step) and joins, so each lowers natively and has the gradient of its parts."""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple, Union

import numpy as np

from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.join import join
from graphjit.tensor.lengths import static_axis
from graphjit.tensor.math import maximum
from graphjit.tensor.shape import reshape, transpose
from graphjit.tensor.subtensor import getitem
from graphjit.tensor.variable import TensorVariable


def _axes(axis: Any, x: TensorVariable, fn: str) -> Tuple[int, ...]:
    """An int or a sequence of ints as distinct axes of x, in the given order (lengths.static_axis each)."""
    seq = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = tuple(static_axis(a, x.ndim, x, fn) for a in seq)
    if len(set(out)) != len(out):
        raise ValueError(f"{fn}: repeated axis in {axis!r}")
    return out


def flip(x: Any, axis: Any = None) -> TensorVariable:
    """numpy.flip: x with the order of its elements reversed along axis (every axis when None)."""
    x = as_tensor_variable(x)
    axes = range(x.ndim) if axis is None else _axes(axis, x, "flip")
    index = [slice(None)] * x.ndim
    for a in axes:
        index[a] = slice(None, None, -1)
    return getitem(x, tuple(index)) if index else x


def fliplr(x: Any) -> TensorVariable:
    """numpy.fliplr: columns reversed (axis 1); x needs at least 2 dimensions."""
    x = as_tensor_variable(x)
    if x.ndim < 2:
        raise ValueError(f"fliplr needs a tensor of at least 2 dimensions, got {x.ndim}")
    return flip(x, 1)


def flipud(x: Any) -> TensorVariable:
    """numpy.flipud: rows reversed (axis 0); x needs at least 1 dimension."""
    x = as_tensor_variable(x)
    if x.ndim < 1:
        raise ValueError("flipud needs a tensor of at least 1 dimension, got a 0-d one")
    return flip(x, 0)


def swapaxes(x: Any, axis1: int, axis2: int) -> TensorVariable:
    """numpy.swapaxes: axes axis1 and axis2 of x exchanged (a view)."""
    x = as_tensor_variable(x)
    order = list(range(x.ndim))
    a, b = static_axis(axis1, x.ndim, x, "swapaxes"), static_axis(axis2, x.ndim, x, "swapaxes")
    order[a], order[b] = order[b], order[a]
    return transpose(x, order)


def moveaxis(x: Any, source: Any, destination: Any) -> TensorVariable:
    """numpy.moveaxis: the axes source moved to positions destination, the others kept in order."""
    x = as_tensor_variable(x)
    src, dst = _axes(source, x, "moveaxis"), _axes(destination, x, "moveaxis")
    if len(src) != len(dst):
        raise ValueError(f"source and destination must have the same number of elements, got {source!r} and "
                         f"{destination!r}")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def rot90(x: Any, k: int = 1, axes: Sequence[int] = (0, 1)) -> TensorVariable:
    """numpy.rot90: x rotated by 90 degrees k times in the plane of axes, from the first axis towards the
    second."""
    x = as_tensor_variable(x)
    if len(axes) != 2:
        raise ValueError(f"rot90 takes two axes, got {axes!r}")
    a, b = _axes(axes, x, "rot90")
    k = int(k) % 4
    if k == 0:
        return x
    if k == 2:
        return flip(x, (a, b))
    order = list(range(x.ndim))
    order[a], order[b] = order[b], order[a]
    return transpose(flip(x, b), order) if k == 1 else flip(transpose(x, order), b)


def roll(x: Any, shift: Any, axis: Any = None) -> TensorVariable:
    """numpy.roll: elements shifted by shift along axis, those pushed past the end coming back at the start
    (over the flattened x, reshaped back, when axis is None); shift may be symbolic."""
    x = as_tensor_variable(x)
    if axis is None:
        return reshape(roll(x.flatten(), shift, 0), x.shape, ndim=x.ndim)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = shift if isinstance(shift, (tuple, list)) else [shift] * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"shift and axis must have the same length, got {shift!r} and {axis!r}")
    out = x
    for s, a in zip(shifts, axes):
        out = _roll_one(out, as_tensor_variable(s), static_axis(a, x.ndim, x, "roll"))
    return out


def _roll_one(x: TensorVariable, shift: TensorVariable, axis: int) -> TensorVariable:
    if shift.ndim != 0 or shift.dtype[:3] not in ("int", "uin"):
        raise TypeError(f"roll's shift must be an integer scalar, got {shift.type}")
    n = x.shape[axis]
    cut = n - shift % maximum(n, 1)        # a zero-length axis rolls into itself (no division by zero)
    head = [slice(None)] * axis
    return join(axis, getitem(x, tuple(head + [slice(cut, None)])), getitem(x, tuple(head + [slice(None, cut)])))


def _at_least(arys: Sequence[Any], shape_of: Any) -> Union[TensorVariable, List[TensorVariable]]:
    out = []
    for a in arys:
        a = as_tensor_variable(a)
        pattern = shape_of(a.ndim)
        out.append(a.dimshuffle(*pattern) if pattern is not None else a)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys: Any) -> Union[TensorVariable, List[TensorVariable]]:
    """numpy.atleast_1d: a 0-d input as shape (1,); others unchanged (one result per argument)."""
    return _at_least(arys, lambda nd: ("x",) if nd == 0 else None)


def atleast_2d(*arys: Any) -> Union[TensorVariable, List[TensorVariable]]:
    """numpy.atleast_2d: 0-d as (1, 1), (N,) as (1, N); others unchanged."""
    return _at_least(arys, lambda nd: ("x", "x") if nd == 0 else ("x", 0) if nd == 1 else None)


def atleast_3d(*arys: Any) -> Union[TensorVariable, List[TensorVariable]]:
    """numpy.atleast_3d: 0-d as (1, 1, 1), (N,) as (1, N, 1), (M, N) as (M, N, 1); others unchanged."""
    patterns = {0: ("x", "x", "x"), 1: ("x", 0, "x"), 2: (0, 1, "x")}
    return _at_least(arys, patterns.get)


__all__ = ["flip", "fliplr", "flipud", "swapaxes", "moveaxis", "rot90", "roll", "atleast_1d", "atleast_2d",
           "atleast_3d"]
