"""Index reductions and scans: Argmax/Argmin (first index on ties) and CumOp (cumsum/cumprod)."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import grad_not_implemented
from graphjit.graph.op import Op
from graphjit.scalar import math as smath
from graphjit.scalar.basic import ScalarOp
from graphjit.tensor.alloc import zeros_like
from graphjit.tensor.basic import as_tensor_variable, constant
from graphjit.tensor.cumprod_grad import cumprod_jvp, cumprod_vjp, diff_dtype
from graphjit.tensor.elemwise import normalize_axis
from graphjit.tensor.math import mul
from graphjit.tensor.subtensor import getitem
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


def _axis_or_none(axis: Any, ndim: int) -> Optional[int]:
    """axis (an int, negatives allowed, or None) as a non-negative int or None."""
    if axis is None:
        return None
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis must be an int or None, got {axis!r}")
    return normalize_axis(int(axis), ndim)[0]


class ArgReduce(Op):
    """Base of Argmax and Argmin: the int64 index of the extreme element along axis (flat if None)."""

    __props__ = ("axis", "keepdims")
    numpy_fn: Any = None

    def __init__(self, axis: Optional[int] = None, keepdims: bool = False):
        self.axis = None if axis is None else int(axis)
        self.keepdims = bool(keepdims)

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if self.axis is not None and not 0 <= self.axis < x.ndim:
            raise np.exceptions.AxisError(f"{self}: axis {self.axis} is out of bounds for {x.describe()}")
        reduced = range(x.ndim) if self.axis is None else (self.axis,)
        if any(x.type.shape[d] == 0 for d in reduced):
            raise ValueError(f"{self}: attempt to take the index of an extreme of an empty sequence "
                             f"({x.describe()})")
        return Apply(self, [x], [TensorType("int64", self._out_shape(x.type.shape, 1))()])

    def _out_shape(self, shape: Sequence[Any], one: Any) -> tuple:
        if self.axis is None:
            return (one,) * len(shape) if self.keepdims else ()
        if self.keepdims:
            return tuple(one if d == self.axis else s for d, s in enumerate(shape))
        return tuple(s for d, s in enumerate(shape) if d != self.axis)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (x,) = inputs
        try:
            res = type(self).numpy_fn(x, axis=self.axis, keepdims=self.keepdims)
        except ValueError as e:
            raise ValueError(f"{self}: {e} (input shape {x.shape})") from None
        out[0][0] = np.asarray(res, dtype="int64")

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [self._out_shape(shapes[0], constant(1, dtype="int64"))]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Zero: the index does not change under small changes of x (the seed's integer case 3)."""
        x = inputs[0]
        return [zeros_like(x, dtype=x.dtype if x.dtype in ("float32", "float64") else grads[0].dtype)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """No tangent: the output is an integer."""
        return [None]


class Argmax(ArgReduce):
    """numpy.argmax: index of the first maximum (NaN counts as the maximum)."""

    numpy_fn = staticmethod(np.argmax)


class Argmin(ArgReduce):
    """numpy.argmin: index of the first minimum (NaN counts as the minimum)."""

    numpy_fn = staticmethod(np.argmin)


# the scans CumOp runs, by scalar op: numpy's function of each
_CUM_FUNCS = {smath.add: np.cumsum, smath.mul: np.cumprod}


def cum_dtype(dtype: str) -> str:
    """numpy's accumulator dtype for cumsum/cumprod of dtype (small ints and bool widen to int64)."""
    return str(np.cumsum(np.zeros(1, dtype=dtype)).dtype)


class CumOp(Op):
    """Running sum (mode smath.add) or product (smath.mul) along axis; axis None scans the flattened input.

    mode is the scalar op of the scan, as CAReduce holds its own (Theano's spelling 'add'/'mul' is accepted).
    """

    __props__ = ("axis", "mode")

    def __init__(self, axis: Optional[int] = None, mode: Union[ScalarOp, str] = smath.add):
        if isinstance(mode, str):
            mode = next((op for op in _CUM_FUNCS if op.name == mode), mode)
        if mode not in _CUM_FUNCS:
            raise ValueError(f"CumOp: mode must be the scalar op add or mul, got {mode!r}")
        self.axis = None if axis is None else int(axis)
        self.mode = mode

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if self.axis is not None and not 0 <= self.axis < x.ndim:
            raise np.exceptions.AxisError(f"{self}: axis {self.axis} is out of bounds for {x.describe()}")
        if self.axis is None:
            known = all(s is not None for s in x.type.shape)
            shape = (int(np.prod(x.type.shape, dtype="int64")) if known else None,)
        else:
            shape = x.type.shape
        return Apply(self, [x], [TensorType(cum_dtype(x.dtype), shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (x,) = inputs
        fn = _CUM_FUNCS[self.mode]
        with np.errstate(over="ignore", invalid="ignore"):
            res = fn(x, axis=self.axis, dtype=node.outputs[0].type.dtype)
        out[0][0] = np.asarray(res)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        if self.axis is not None:
            return [shapes[0]]
        size = constant(1, dtype="int64")
        for s in shapes[0]:
            size = mul(size, s)
        return [(size,)]

    def _reverse_cumsum(self, g: Any) -> Any:
        """The running sum of g taken from the end of the axis (the transpose of cumsum)."""
        axis = self.axis if self.axis is not None else 0
        rev = (slice(None),) * axis + (slice(None, None, -1),)
        return getitem(CumOp(axis, smath.add)(getitem(g, rev)), rev)

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """cumsum: gz summed from the end; cumprod: CumprodDiff's sweep, no division (exact at zeros)."""
        (x,), (gz,) = inputs, grads
        if self.mode == smath.add:
            g = self._reverse_cumsum(gz)
        else:
            g = CumprodDiff(self.axis or 0, True)(self._along_axis(x), gz)
        return [g.reshape(x.shape, ndim=x.ndim) if self.axis is None and x.ndim != 1 else g]

    def _along_axis(self, v: Any) -> Any:
        """v flattened when the scan is over the flattened input (axis None)."""
        return v.flatten() if self.axis is None else v

    def R_op(self, inputs: list, eval_points: list) -> list:
        """cumsum is linear: the cumsum of the tangent; cumprod: CumprodDiff's forward form."""
        (x,), (v,) = inputs, eval_points
        if v is None:
            return [None]
        if self.mode == smath.add:
            return [self(v)]
        return [CumprodDiff(self.axis or 0, False)(self._along_axis(x), self._along_axis(v))]


# ------------------------------------------------------------------------------------------------
# Public helpers
# ------------------------------------------------------------------------------------------------

def argmax(x: Any, axis: Any = None, keepdims: bool = False) -> TensorVariable:
    """numpy.argmax(x, axis, keepdims): int64 index of the first maximum (of the flattened x if axis is None; of
    the axes raveled together, in increasing order, for a tuple of axes, as PyTensor)."""
    return _arg_reduce(Argmax, x, axis, keepdims)


def argmin(x: Any, axis: Any = None, keepdims: bool = False) -> TensorVariable:
    """numpy.argmin(x, axis, keepdims): int64 index of the first minimum (axis None or a tuple as argmax)."""
    return _arg_reduce(Argmin, x, axis, keepdims)


def _arg_reduce(cls: type, x: Any, axis: Any, keepdims: bool) -> TensorVariable:
    x = as_tensor_variable(x)
    if not isinstance(axis, (tuple, list)):
        return cls(_axis_or_none(axis, x.ndim), keepdims)(x)
    axes = sorted(_axis_or_none(a, x.ndim) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{cls.__name__}: repeated axis in {axis!r}")
    if len(axes) == 1:
        return cls(axes[0], keepdims)(x)
    kept = [d for d in range(x.ndim) if d not in axes]
    # the reduced axes raveled into one last axis (their length an explicit product: -1 is ambiguous at size 0)
    size = constant(1, dtype="int64")
    for d in axes:
        size = mul(size, x.shape[d])
    moved = x.dimshuffle(*kept, *axes).reshape([x.shape[d] for d in kept] + [size], ndim=len(kept) + 1)
    out = cls(len(kept), False)(moved)
    if keepdims:
        out = out.dimshuffle(*["x" if d in axes else kept.index(d) for d in range(x.ndim)])
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
        """Linear in v: the other form is the transpose.  In x: for the transposed form (cumprod's gradient) the
        derivative of S / x with S = x * out (the reverse running sum of v * cumprod(x)), which divides by x as
        Theano's first derivative did (a second derivative where x has zeros is not finite); for the forward
        form, not implemented."""
        (x, v), (out,), (w,) = inputs, outputs, grads
        gv = CumprodDiff(self.axis, not self.transpose)(x, w)
        if not self.transpose:
            return [grad_not_implemented(self, 0, x, "the derivative in x of cumprod's forward derivative"), gv]
        rev = (slice(None),) * self.axis + (slice(None, None, -1),)
        y = CumOp(self.axis, smath.mul)(x)
        running = getitem(CumOp(self.axis, smath.add)(getitem(v * y * CumOp(self.axis, smath.add)(w / x), rev)), rev)
        return [(running - w * out) / x, gv]


def cumsum(x: Any, axis: Optional[int] = None, reverse: bool = False) -> TensorVariable:
    """numpy.cumsum(x, axis): running sums along axis (over the flattened x if axis is None); reverse: summed
    from the end of the axis (out[i] = x[i:].sum())."""
    return _cum(x, axis, smath.add, reverse)


def cumprod(x: Any, axis: Optional[int] = None, reverse: bool = False) -> TensorVariable:
    """numpy.cumprod(x, axis): running products along axis (over the flattened x if axis is None); reverse:
    from the end of the axis."""
    return _cum(x, axis, smath.mul, reverse)


def _cum(x: Any, axis: Optional[int], mode: ScalarOp, reverse: bool) -> TensorVariable:
    x = as_tensor_variable(x)
    axis = _axis_or_none(axis, x.ndim)
    if not reverse:
        return CumOp(axis, mode)(x)
    if axis is None:
        x, axis = x.flatten(), 0
    rev = (slice(None),) * axis + (slice(None, None, -1),)
    return getitem(CumOp(axis, mode)(getitem(x, rev)), rev)


__all__ = ["ArgReduce", "Argmax", "Argmin", "CumOp", "CumprodDiff", "argmax", "argmin", "cumsum", "cumprod"]
