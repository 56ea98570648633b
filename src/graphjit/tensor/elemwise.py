"""Elemwise (a scalar op mapped over broadcast tensors), DimShuffle, and CAReduce (reductions)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.op import Op
from graphjit.scalar import math as smath
from graphjit.scalar.basic import ScalarOp
from graphjit.scalar.casting import astype
from graphjit.tensor.basic import (Builders, NotScalarConstantError, as_tensor_inputs, as_tensor_variable,
                                   constant)
from graphjit.tensor.type import TensorType


def broadcast_static_shape(shapes: Sequence[Tuple[Optional[int], ...]], what: str = "inputs"
                           ) -> Tuple[Optional[int], ...]:
    """numpy's broadcast of equal-rank static shapes (None = unknown); ValueError if they clash."""
    out: List[Optional[int]] = []
    for dim, lengths in enumerate(zip(*shapes)):
        known = set(lengths)
        if len(known) == 1:                 # all equal (the common case): that length, None or 1 alike
            out.append(lengths[0])
            continue
        known.discard(None)
        known.discard(1)
        if len(known) > 1:
            raise ValueError(f"{what} cannot be broadcast together: lengths {sorted(known)} "
                             f"in dimension {dim} (static shapes {list(shapes)})")
        out.append(known.pop() if known else None)      # a mix of 1 and None is unknown
    return tuple(out)


class DimShuffle(Op):
    """Reorder dimensions, insert broadcastable ones ('x'), drop ones of static length 1."""

    __props__ = ("input_ndim", "new_order")
    view_map = {0: [0]}

    def __init__(self, input_ndim: int, new_order: Sequence[Any]):
        new_order = tuple(new_order)
        seen = set()
        for d in new_order:
            if d == "x":
                continue
            if not isinstance(d, (int, np.integer)) or not 0 <= d < input_ndim:
                raise ValueError(f"DimShuffle: {d!r} is not 'x' or a dimension of a {input_ndim}-d input")
            if d in seen:
                raise ValueError(f"DimShuffle: dimension {d} appears twice in {new_order}")
            seen.add(int(d))
        self.input_ndim = int(input_ndim)
        self.new_order = tuple(d if d == "x" else int(d) for d in new_order)
        self.drop = tuple(d for d in range(self.input_ndim) if d not in seen)
        self.shuffle = tuple(d for d in self.new_order if d != "x")
        self.augment = tuple(i for i, d in enumerate(self.new_order) if d == "x")

    def __str__(self) -> str:
        if self.new_order == tuple(range(self.input_ndim))[::-1] and self.input_ndim > 1:
            return "Transpose"
        return f"DimShuffle{{{','.join(str(d) for d in self.new_order)}}}"

    @property
    def is_transpose(self) -> bool:
        """True if only the order of dimensions changes."""
        return not self.drop and not self.augment

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if x.ndim != self.input_ndim:
            raise TypeError(f"{self}: expected a {self.input_ndim}-d input, got {x.describe()}")
        for d in self.drop:
            if x.type.shape[d] != 1:
                raise ValueError(f"{self}: cannot drop dimension {d} of {x.describe()}: "
                                 "its length is not statically 1")
        shape = tuple(1 if d == "x" else x.type.shape[d] for d in self.new_order)
        return Apply(self, [x], [TensorType(x.dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (x,) = inputs
        res = np.transpose(x, self.shuffle + self.drop)
        res = res.reshape(tuple(1 if d == "x" else x.shape[d] for d in self.new_order))
        out[0][0] = res

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        (ishape,) = shapes
        return [tuple(1 if d == "x" else ishape[d] for d in self.new_order)]

    def L_op(self, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]) -> List[Variable]:
        (x,), (gz,) = inputs, grads
        gz = outputs[0].type.clone(dtype=gz.dtype).filter_variable(gz)
        kept = [i for i, d in enumerate(self.new_order) if d != "x"]   # drop the inserted axes
        order = [self.shuffle.index(d) if d in self.shuffle else "x" for d in range(self.input_ndim)]
        g = DimShuffle(gz.ndim, kept)(gz) if len(kept) != gz.ndim else gz
        return [DimShuffle(g.ndim, order)(g)]

    def R_op(self, inputs: List[Variable], eval_points: List[Optional[Variable]]) -> List[Variable]:
        if eval_points[0] is None:
            return [None]
        return [self(eval_points[0])]


def expand_to_ndim(x: Variable, ndim: int) -> Variable:
    """Left-pad x with broadcastable dimensions up to ndim (numpy's broadcasting rule)."""
    if x.ndim == ndim:
        return x
    return DimShuffle(x.ndim, ("x",) * (ndim - x.ndim) + tuple(range(x.ndim)))(x)


def folded_broadcast(v: Variable) -> Optional[Constant]:
    """v as one pre-shaped constant if it is a constant broadcast by expand_to_ndim (``DimShuffle{x,x}`` of the 0-d
    ``2.0`` in ``x * 2.``), else None: for an inner graph that keeps no DimShuffle of a constant (scan's)."""
    node = v.owner
    if node is None or not isinstance(node.op, DimShuffle) or not isinstance(node.inputs[0], Constant):
        return None
    op = node.op
    k = len(op.new_order) - op.input_ndim
    if op.new_order != ("x",) * k + tuple(range(op.input_ndim)):
        return None
    data = np.asarray(node.inputs[0].data)
    return constant(data.reshape((1,) * k + data.shape), dtype=str(data.dtype))


# the scalar ops whose Elemwise takes any number (>= 2) of inputs, folded left to right
VARIADIC = (smath.add, smath.mul)


class Elemwise(Op):
    """A scalar op applied elementwise, with numpy broadcasting.

    inplace_pattern maps an output index to the input whose buffer it overwrites.
    """

    __props__ = ("scalar_op", "inplace_pattern")

    def __init__(self, scalar_op: ScalarOp, inplace_pattern: Optional[Dict[int, int]] = None,
                 name: Optional[str] = None):
        self.scalar_op = scalar_op
        self.inplace_pattern = tuple(sorted((inplace_pattern or {}).items()))
        self.destroy_map = {o: [i] for o, i in self.inplace_pattern}
        self.given_name = name

    def __str__(self) -> str:
        if self.given_name:
            return self.given_name
        if self.inplace_pattern:
            return f"Elemwise{{{self.scalar_op},inplace}}"
        return f"Elemwise{{{self.scalar_op}}}"

    @property
    def name(self) -> str:
        """Theano's ``op.name``: the name given to the constructor, else ``str(op)`` (``Elemwise{mul}``)."""
        return str(self)

    @name.setter
    def name(self, value: Optional[str]) -> None:
        self.given_name = value

    def __setstate__(self, state: Dict[str, Any]) -> None:
        if "name" in state:                     # pickled before `name` became a property
            state["given_name"] = state.pop("name")
        self.__dict__.update(state)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        """The node's output; add and mul (not in place) also take more than two inputs, folded from the left
        (PyTensor's n-ary form: ``add(a, b, c)`` is ``add(add(a, b), c)``)."""
        if len(inputs) > 2 and self.scalar_op in VARIADIC and not self.inplace_pattern and not kwargs:
            out = super().__call__(inputs[0], inputs[1])
            for x in inputs[2:]:
                out = super().__call__(out, x)
            return out
        return super().__call__(*inputs, **kwargs)

    def make_node(self, *inputs: Any) -> Apply:
        inputs = as_tensor_inputs(*inputs)
        if len(inputs) != self.scalar_op.nin:
            raise TypeError(f"{self}: takes {self.scalar_op.nin} input(s), got {len(inputs)}")
        ndim = max(i.ndim for i in inputs)
        inputs = [expand_to_ndim(i, ndim) for i in inputs]
        try:
            dtype = self.scalar_op.output_dtype(*[i.dtype for i in inputs])
        except TypeError as e:
            args = ", ".join(i.describe() for i in inputs)
            raise TypeError(f"{self}: {e}; inputs: {args}") from None
        try:
            shape = broadcast_static_shape([i.type.shape for i in inputs], f"inputs of {self}")
        except ValueError as e:
            args = ", ".join(i.describe() for i in inputs)
            raise ValueError(f"{e}; inputs: {args}") from None
        for o, i in self.inplace_pattern:
            if inputs[i].dtype != dtype or inputs[i].type.shape != shape:
                raise TypeError(f"{self}: input {i} cannot hold output {o} in place")
        return Apply(self, inputs, [TensorType(dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        dtype = node.outputs[0].type.dtype
        result = self.scalar_op.impl(*inputs)
        result = np.asarray(result)
        if result.dtype != dtype:
            result = astype(result, dtype)
        if self.inplace_pattern:
            (o, i), = self.inplace_pattern
            target = inputs[i]
            if target.shape == result.shape:    # may destroy: a target smaller at run time keeps result
                target[...] = result
                result = target
        elif any(result is x for x in inputs):
            result = result.copy()  # never alias an input without declaring a view
        out[0][0] = result

    # L_op and R_op are installed by tensor/elemwise_grad.py, infer_shape by tensor/lengths.py: they build graphs
    # with the math and shape ops, which build on this module.

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        """The scalar op's: an input whose values are never read (second's model) is disconnected."""
        connected = getattr(self.scalar_op, "connected", None)
        if connected is None:
            return [[True] for _ in node.inputs]
        return [[c] for c in connected]


# ------------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------------

def get_scalar_constant_value(v: Any) -> Any:
    """The value of v if it is a constant (or a DimShuffle of one) holding a single element."""
    while isinstance(v, Variable) and v.owner is not None and isinstance(v.owner.op, DimShuffle):
        v = v.owner.inputs[0]
    if isinstance(v, Constant):
        data = np.asarray(v.data)
        if data.size == 1:
            return data.reshape(())[()]
        if data.size and np.all(data == data.flat[0]):
            return data.flat[0]
    if not isinstance(v, Variable):
        data = np.asarray(v)
        if data.size == 1:
            return data.reshape(())[()]
    raise NotScalarConstantError(f"{v} is not a scalar constant")


def normalize_axis(axis: Any, ndim: int) -> Tuple[int, ...]:
    """axis (None, int or sequence, negatives allowed) as a sorted tuple of dimensions."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    out = []
    for a in axis:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"axis must be an int or a tuple of ints, got {a!r}")
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(f"axis {a} is out of bounds for a {ndim}-d tensor")
        out.append(int(a) % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in axis {axis}")
    return tuple(sorted(out))


class CAReduce(Op):
    """Reduce over axes with a commutative, associative scalar op (sum, prod, max, min, all, any).

    dtype is the output dtype; acc_dtype the accumulator's (numpy's rules by default).
    """

    __props__ = ("scalar_op", "axis", "dtype", "acc_dtype")

    def __init__(self, scalar_op: ScalarOp, axis: Optional[Tuple[int, ...]] = None,
                 dtype: Optional[str] = None, acc_dtype: Optional[str] = None):
        if not (scalar_op.commutative and scalar_op.associative):
            raise ValueError(f"CAReduce needs a commutative, associative op, got {scalar_op}")
        self.scalar_op = scalar_op
        self.axis = None if axis is None else tuple(axis)
        self.dtype = dtype
        self.acc_dtype = acc_dtype

    def __str__(self) -> str:
        name = _REDUCE_NAMES.get(self.scalar_op, f"CAReduce{{{self.scalar_op}}}")
        axis = "" if self.axis is None else f"axes={list(self.axis)}"
        extra = ", ".join(x for x in (axis,) if x)
        return f"{name}{{{extra}}}" if extra else name

    def _widens(self) -> bool:
        """A sum or product: numpy accumulates small ints in 64 bits."""
        return self.scalar_op is smath.add or self.scalar_op is smath.mul

    def _logical(self) -> bool:
        return self.scalar_op is smath.and_ or self.scalar_op is smath.or_

    def _extremum(self) -> bool:
        """max or min: no identity, so a zero-size reduction is an error."""
        return self.scalar_op is smath.maximum or self.scalar_op is smath.minimum

    def _out_dtype(self, in_dtype: str) -> str:
        if self.dtype is not None:
            return self.dtype
        if self._logical() and in_dtype == "bool":
            return "bool"
        if self._widens():
            kind = np.dtype(in_dtype).kind
            if kind == "b" or (kind == "i" and np.dtype(in_dtype).itemsize < 8):
                return "int64"
            if kind == "u" and np.dtype(in_dtype).itemsize < 8:
                return "uint64"
        return in_dtype

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        axis = normalize_axis(self.axis, x.ndim)
        if self.axis is not None and axis != self.axis:
            raise ValueError(f"{self}: axis must be sorted non-negative dimensions, got {self.axis}")
        if self._extremum():
            for a in axis:
                if x.type.shape[a] == 0:
                    raise ValueError(f"{self}: zero-size reduction over dimension {a} of "
                                     f"{x.describe()} has no identity")
        dtype = self._out_dtype(x.dtype)
        shape = tuple(s for d, s in enumerate(x.type.shape) if d not in axis)
        return Apply(self, [x], [TensorType(dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (x,) = inputs
        axis = tuple(range(x.ndim)) if self.axis is None else self.axis
        dtype = node.outputs[0].type.dtype
        op = self.scalar_op
        if self._extremum():
            for a in axis:
                if x.shape[a] == 0:
                    raise ValueError(f"{self}: zero-size array to reduction operation "
                                     f"{'max' if op is smath.maximum else 'min'} (dimension {a})")
        if not axis:
            out[0][0] = np.array(x, dtype=dtype, copy=True)
            return
        ufunc = getattr(self.scalar_op, "numpy")
        acc = self.acc_dtype or (dtype if self._widens() else None)
        with np.errstate(all="ignore"):
            if self._widens():
                res = ufunc.reduce(x, axis=axis, dtype=acc)
            elif self._logical() and x.dtype == np.bool_:
                res = (np.all if op is smath.and_ else np.any)(x, axis=axis)
            else:
                res = ufunc.reduce(x, axis=axis)
        res = np.asarray(res)
        out[0][0] = res if res.dtype == dtype else astype(res, dtype)

    # L_op and R_op are installed by tensor/elemwise_grad.py (they build graphs with the math ops).

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        (ishape,) = shapes
        axis = self.axis if self.axis is not None else tuple(range(len(ishape)))
        return [tuple(s for d, s in enumerate(ishape) if d not in axis)]


_REDUCE_NAMES = {smath.add: "Sum", smath.mul: "Prod", smath.maximum: "Max", smath.minimum: "Min",
                 smath.and_: "All", smath.or_: "Any"}


Builders.elemwise = Elemwise

