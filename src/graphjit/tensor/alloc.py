"""Tensors made from a shape: Alloc (zeros, ones, full, fill, *_like), ARange, Eye."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.elemwise import broadcast_static_shape, expand_to_ndim
from graphjit.tensor.filled import (dtype_or_floatx, fill, fill_value_tensor, full_like, ones_like, second,
                                    zeros_like)
from graphjit.tensor.math import ceil, maximum, mul, sub, sum as tsum, true_div
from graphjit.tensor.lengths import as_length, broadcast_shape_symbolic, static_int, vector_entry
from graphjit.tensor.shape_base import shape_i
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable

__all__ = ["Alloc", "ARange", "Eye", "alloc", "zeros", "ones", "full", "zeros_like", "ones_like",
           "full_like", "second", "second_as_alloc", "fill", "arange", "eye", "shaped_zeros", "broadcast_like"]

# Alloc outputs with more elements than this are never folded into constants: a big constant costs
# memory and compile time (it is hashed into the cache key), while computing it is cheap.
ALLOC_FOLD_MAX_SIZE = 10_000


class Alloc(Op):
    """value broadcast (numpy rules) to a shape given as 0-d int64 lengths; a new array."""

    __props__ = ()

    def make_node(self, value: Any, *shape: Any) -> Apply:
        v = as_tensor_variable(value)
        lengths = [as_length(s, f"each length given to {self}") for s in shape]
        if v.ndim > len(lengths):
            raise ValueError(f"{self}: the value {v.describe()} has more dimensions than the "
                             f"{len(lengths)} of the requested shape")
        pad = len(lengths) - v.ndim
        static: List[Optional[int]] = []
        for d, length in enumerate(lengths):
            want = static_int(length)
            have = v.type.shape[d - pad] if d >= pad else 1
            if want is not None and want < 0:
                raise ValueError(f"{self}: negative length {want} in dimension {d}")
            if want is not None and have not in (None, 1, want):
                raise ValueError(f"{self}: cannot broadcast {v.describe()} (length {have} in "
                                 f"dimension {d - pad}) to length {want}")
            static.append(want if want is not None else (have if have != 1 else None))
        return Apply(self, [v, *lengths], [TensorType(v.dtype, static)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        value, *shape = inputs
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"{self}: negative length in shape {shape}")
        res = np.empty(shape, dtype=node.outputs[0].type.dtype)
        try:
            res[...] = value
        except ValueError:
            raise ValueError(f"{self}: cannot broadcast a value of shape {np.shape(value)} to "
                             f"shape {shape}") from None
        out[0][0] = res

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        static = node.outputs[0].type.shape
        return [tuple(constant(s, dtype="int64") if s is not None else length
                      for s, length in zip(static, node.inputs[1:]))]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True]] + [[False]] * (len(node.inputs) - 1)

    # L_op is installed by tensor/elemwise_grad.py (it undoes the broadcast like an Elemwise's gradient).

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The value's tangent broadcast the same way."""
        return [None if eval_points[0] is None else self(eval_points[0], *inputs[1:])]

    def do_constant_folding(self, fgraph: Any, node: Apply) -> bool:
        """Fold only small results that are not graph outputs (those would be copied every call)."""
        out = node.outputs[0]
        if fgraph is not None and any(c[0] == "output" for c in fgraph.clients.get(out, [])):
            return False
        size = 1
        for length in node.inputs[1:]:
            value = static_int(length)
            if value is None:
                return False
            size *= value
        return size <= ALLOC_FOLD_MAX_SIZE


_alloc = Alloc()


def _shape_lengths(shape: Sequence[Any]) -> List[Any]:
    """alloc's *shape: lengths, or one tuple/list/int vector of them."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, np.ndarray)):
        return list(shape[0])
    if len(shape) == 1 and isinstance(shape[0], Variable) and getattr(shape[0].type, "ndim", 0) == 1:
        vec = as_tensor_variable(shape[0])
        n = vec.type.shape[0]
        if n is None:
            raise ValueError(f"alloc: the length of the shape vector {vec.describe()} is not known "
                             "statically")
        return [vector_entry(vec, i) for i in range(n)]
    return list(shape)


def alloc(value: Any, *shape: Any) -> TensorVariable:
    """value broadcast to shape (lengths as ints or 0-d int variables, or one tuple/int vector)."""
    return _alloc(value, *_shape_lengths(shape))


def zeros(shape: Any, dtype: Optional[str] = None) -> TensorVariable:
    """A new tensor of zeros (dtype default floatX)."""
    return full(shape, 0, dtype_or_floatx(dtype))


def ones(shape: Any, dtype: Optional[str] = None) -> TensorVariable:
    """A new tensor of ones (dtype default floatX)."""
    return full(shape, 1, dtype_or_floatx(dtype))


def full(shape: Any, fill_value: Any, dtype: Optional[str] = None) -> TensorVariable:
    """A new tensor of shape filled with fill_value (dtype default: fill_value's, like numpy)."""
    lengths = [shape] if isinstance(shape, (int, np.integer)) else _shape_lengths((shape,))
    return alloc(fill_value_tensor(fill_value, dtype), *lengths)


def _lengths_of(x: TensorVariable) -> List[TensorVariable]:
    return [shape_i(x, d) for d in range(x.ndim)]


def second_as_alloc(model: Any, value: Any) -> TensorVariable:
    """second(model, value) as an Alloc of the broadcast lengths of model and value."""
    model, value = as_tensor_variable(model), as_tensor_variable(value)
    ndim = max(model.ndim, value.ndim)
    padded = [expand_to_ndim(model, ndim), expand_to_ndim(value, ndim)]
    try:
        broadcast_static_shape([p.type.shape for p in padded], "fill's model and value")
    except ValueError as e:
        raise ValueError(f"{e}: model {model.describe()}, value {value.describe()}") from None
    lengths = broadcast_shape_symbolic([tuple(_lengths_of(p)) for p in padded],
                                       [p.type.shape for p in padded])
    return alloc(value, *lengths)


def broadcast_like(value: Any, *models: Any) -> TensorVariable:
    """value broadcast to the broadcast shape of models, reading only their shapes (Shape_i, or a constant
    length where static): a gradient built with it does not need the models' values (unlike second)."""
    vs = [as_tensor_variable(m) for m in models]
    value = as_tensor_variable(value)
    ndim = max([v.ndim for v in vs] + [value.ndim])
    padded = [expand_to_ndim(v, ndim) for v in vs]
    lengths = broadcast_shape_symbolic([tuple(_lengths_of(p)) for p in padded], [p.type.shape for p in padded])
    return alloc(value, *lengths)


def shaped_zeros(model: Any, dtype: Optional[str] = None) -> TensorVariable:
    """Zeros of model's shape (dtype default model's), reading only its shape: zeros_like without the
    reference to model's values (so a gradient built with it takes model only for its shape, if at all)."""
    model = as_tensor_variable(model)
    return broadcast_like(fill_value_tensor(0, dtype or model.dtype), model)


# ------------------------------------------------------------------------------------------------
# ARange and Eye
# ------------------------------------------------------------------------------------------------

def arangedtype_or_floatx(*dtypes: str) -> str:
    """numpy.arange's default dtype: each input raised to at least int64/float64, then upcast."""
    wide = []
    for d in dtypes:
        kind = np.dtype(d).kind
        wide.append(np.result_type(d, "int64") if kind in "biu" else np.result_type(d, "float64"))
    return str(np.result_type(*wide))


class ARange(Op):
    """numpy.arange(start, stop, step, dtype) from 0-d tensors; length ceil((stop-start)/step)."""

    __props__ = ("dtype",)

    def __init__(self, dtype: str):
        self.dtype = str(np.dtype(dtype))

    def make_node(self, start: Any, stop: Any, step: Any) -> Apply:
        args = [as_tensor_variable(a) for a in (start, stop, step)]
        for name, a in zip(("start", "stop", "step"), args):
            if a.ndim != 0 or a.type.numpy_dtype.kind not in "biuf":
                raise TypeError(f"{self}: {name} must be a 0-d real number, got {a.describe()}")
        length = _static_arange_length(*args)
        return Apply(self, args, [TensorType(self.dtype, (length,))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        start, stop, step = inputs
        if step == 0:
            raise ZeroDivisionError(f"{self}: step is 0")
        out[0][0] = np.arange(start, stop, step, dtype=self.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        static = node.outputs[0].type.shape[0]
        if static is not None:
            return [(constant(static, dtype="int64"),)]
        start, stop, step = node.inputs
        # numpy's own formula, in the inputs' dtypes: ceil((stop - start) / step), at least 0
        length = cast(ceil(true_div(sub(stop, start), step)), "int64")
        return [(maximum(length, constant(0, dtype="int64")),)]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True], [False], [True]]   # stop only sets the length

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """out[i] = start + i * step: sum(gz) for start, sum(gz * i) for step; stop is disconnected."""
        (out,), (gz,) = outputs, grads
        index = ARange("int64")(0, out.shape[0], 1)
        return [tsum(gz), disconnected_type(), tsum(mul(gz, index))]


def _static_arange_length(start: Variable, stop: Variable, step: Variable) -> Optional[int]:
    """numpy's length ceil((stop - start) / step), at least 0, when the bounds are constants."""
    if not all(isinstance(a, Constant) for a in (start, stop, step)):
        return None
    lo, hi, delta = (np.asarray(a.data) for a in (start, stop, step))
    if delta == 0:
        raise ZeroDivisionError(f"arange: step is 0 ({step.describe()})")
    with np.errstate(all="ignore"):
        length = np.ceil((hi - lo) / delta)
    if not np.isfinite(length):
        raise ValueError(f"arange: the length of arange({lo}, {hi}, {delta}) is not finite")
    return max(int(length), 0)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Optional[str] = None
           ) -> TensorVariable:
    """numpy.arange with symbolic 0-d bounds (numpy's length and default dtype rules)."""
    if stop is None:
        start, stop = 0, start
    args = [as_tensor_variable(a) for a in (start, stop, step)]
    dtype = arangedtype_or_floatx(*[a.dtype for a in args]) if dtype is None else dtype_or_floatx(dtype)
    return ARange(dtype)(*args)


class Eye(Op):
    """numpy.eye(n, m, k, dtype): an n x m matrix with ones on diagonal k."""

    __props__ = ("dtype",)

    def __init__(self, dtype: str):
        self.dtype = str(np.dtype(dtype))

    def make_node(self, n: Any, m: Any, k: Any) -> Apply:
        n, m, k = (as_length(a, f"{name} of {self}") for name, a in (("n", n), ("m", m), ("k", k)))
        for name, a in (("n", n), ("m", m)):
            if static_int(a) is not None and static_int(a) < 0:
                raise ValueError(f"{self}: negative {name} {static_int(a)}")
        return Apply(self, [n, m, k], [TensorType(self.dtype, (static_int(n), static_int(m)))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        n, m, k = (int(v) for v in inputs)
        if n < 0 or m < 0:
            raise ValueError(f"{self}: negative dimensions n={n}, m={m}")
        out[0][0] = np.eye(n, m, k, dtype=self.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [(node.inputs[0], node.inputs[1])]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[False], [False], [False]]   # integer lengths and offset: no gradient

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Disconnected: n, m and k only say where the ones go."""
        return [disconnected_type()] * 3


def eye(n: Any, m: Any = None, k: Any = 0, dtype: Optional[str] = None) -> TensorVariable:
    """numpy.eye: an n x m matrix (m defaults to n) with ones on diagonal k (dtype default floatX)."""
    return Eye(dtype_or_floatx(dtype))(n, n if m is None else m, k)

