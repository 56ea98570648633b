"""numpy.pad's constant, edge, reflect, symmetric and wrap modes: constant padding joins filled blocks; the
other modes gather along each axis with a folded index (the periodic form numpy's iteration gives for pads
longer than the axis), so every mode lowers natively and its gradient is the adjoint (a scatter-add)."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphjit.graph.basic import Variable
from graphjit.tensor.advanced_subtensor import advanced_subtensor1
from graphjit.tensor.alloc import alloc, arange
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.check_op import check_and_raise
from graphjit.tensor.join import join
from graphjit.tensor.math import ge, gt, maximum, minimum, mod, switch
from graphjit.tensor.variable import TensorVariable

MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pairs(value: Any, ndim: int, what: str, integral: bool) -> np.ndarray:
    """numpy's (ndim, 2) broadcast of a pad width or a constant value given as an int, a pair or pairs."""
    arr = np.asarray(value)
    if integral and arr.dtype.kind not in "iu":
        raise TypeError(f"pad: `{what}` must be of integral type, got {value!r}")
    try:
        return np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: `{what}` {value!r} cannot be broadcast to ({ndim}, 2) for a {ndim}-d array"
                         ) from None


def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> TensorVariable:
    """numpy.pad(x, pad_width, mode, constant_values) for the modes constant, edge, reflect, symmetric, wrap;
    pad_width static ints (an int, a (before, after) pair, or one pair per axis)."""
    x = as_tensor_variable(x)
    if mode not in MODES:
        raise ValueError(f"pad: mode {mode!r} is not supported here (one of {', '.join(MODES)})")
    widths = _pairs(pad_width, x.ndim, "pad_width", True)
    if (widths < 0).any():
        raise ValueError(f"pad: index can't contain negative values, got pad_width {pad_width!r}")
    fills = None
    if mode == "constant":
        fills = (None if isinstance(constant_values, Variable)
                 else _pairs(constant_values, x.ndim, "constant_values", False))
    out = x
    for axis, (before, after) in enumerate(widths.tolist()):
        if before == 0 and after == 0:
            continue
        if mode == "constant":
            pair = (constant_values, constant_values) if fills is None else fills[axis]
            out = _pad_constant(out, axis, before, after, pair)
        else:
            out = _pad_gather(out, axis, before, after, mode)
    return out


def _pad_constant(x: TensorVariable, axis: int, before: int, after: int, values: Any) -> TensorVariable:
    parts = []
    for width, value in ((before, values[0]), (after, values[1])):
        shape = [width if d == axis else x.shape[d] for d in range(x.ndim)]
        fill = cast(as_tensor_variable(value), x.dtype)
        if fill.ndim != 0:
            raise ValueError(f"pad: constant_values must be scalars, got {fill.describe()}")
        parts.append(alloc(fill, *shape) if width else None)
    return join(axis, *[p for p in (parts[0], x, parts[1]) if p is not None])


def _pad_gather(x: TensorVariable, axis: int, before: int, after: int, mode: str) -> TensorVariable:
    n = x.shape[axis]
    x = check_and_raise(x, [gt(n, 0)], f"pad: can't extend empty axis {axis} using modes other than 'constant'")
    i = arange(-before, n + after, dtype="int64")
    safe = maximum(n, 1)                      # no division by zero before the check above has run
    if mode == "edge":
        src = minimum(maximum(i, 0), safe - 1)
    elif mode == "wrap":
        src = mod(i, safe)
    elif mode == "reflect":                  # period 2n - 2 (a length-1 axis repeats its element)
        period = maximum(2 * safe - 2, 1)
        m = mod(i, period)
        src = switch(ge(m, safe), period - m, m)
    else:                                    # symmetric: period 2n, the edge element repeated
        m = mod(i, 2 * safe)
        src = switch(ge(m, safe), 2 * safe - 1 - m, m)
    order = [axis] + [d for d in range(x.ndim) if d != axis]
    taken = advanced_subtensor1(x.dimshuffle(*order), src)
    return taken.dimshuffle(*[order.index(d) for d in range(x.ndim)])


__all__ = ["pad"]
