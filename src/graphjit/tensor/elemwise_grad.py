"""Gradients of Elemwise, CAReduce and Alloc (installed on their classes at the end), and SumToShape (undoing
broadcasting in gradients)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.grad_markers import disconnected_type, grad_not_implemented
from graphjit.graph.op import Op
from graphjit.graph.type import NullType
from graphjit.graph.utils import MethodNotDefined
from graphjit.scalar import math as smath
from graphjit.tensor import math as tm
from graphjit.tensor.alloc import Alloc, broadcast_like, shaped_zeros
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.elemwise import CAReduce, Elemwise
from graphjit.tensor.math import add, mul, restore_reduced_dims, sum as tsum
from graphjit.tensor.shape import shape
from graphjit.tensor.subtensor import getitem
from graphjit.tensor.type import TensorType


class SumToShape(Op):
    """Sum g over the dimensions where the target shape has length 1 and g does not.

    The gradient of a broadcast: numpy may broadcast a length-1 dimension at run time even when it
    is not statically 1, so elementwise gradients reduce to the input's run-time shape. When the
    shapes already agree the output is g itself (a view).
    """

    __props__ = ("static_shape",)
    view_map = {0: [0]}

    def __init__(self, static_shape: Sequence[Optional[int]]):
        self.static_shape = tuple(static_shape)

    def make_node(self, g: Any, shape: Any) -> Apply:
        g, shape = as_tensor_variable(g), as_tensor_variable(shape)
        if shape.ndim != 1 or shape.type.shape[0] != g.ndim or shape.dtype != "int64":
            raise TypeError(f"SumToShape: shape must be an int64 vector of length {g.ndim}, "
                            f"got {shape.describe()}")
        if len(self.static_shape) != g.ndim:
            raise TypeError(f"SumToShape: static shape {self.static_shape} does not match {g.describe()}")
        return Apply(self, [g, shape], [TensorType(g.dtype, self.static_shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        g, shape = inputs
        axes = tuple(d for d, (have, want) in enumerate(zip(g.shape, shape)) if have != want)
        for d in axes:
            if shape[d] != 1:
                raise ValueError(f"SumToShape: cannot reduce a gradient of shape {g.shape} to {tuple(shape)}")
        out[0][0] = g.sum(axis=axes, keepdims=True) if axes else g

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(getitem(node.inputs[1], d) for d in range(node.inputs[0].ndim))]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True], [False]]

    def L_op(self, inputs, outputs, grads):
        return [add(grads[0], mul(inputs[0], 0)), disconnected_type()]

    def R_op(self, inputs, eval_points):
        """The tangent summed the same way (the op is linear in g)."""
        return [None if eval_points[0] is None else self(eval_points[0], inputs[1])]


def sum_to_shape(g: Variable, x: Variable) -> Variable:
    """g summed over the dimensions where x has length 1 (x's run-time shape)."""
    return SumToShape(x.type.shape)(g, shape(x))


def _may_broadcast(x: Variable, others: Sequence[Variable], d: int) -> bool:
    """x's length in dimension d is not known, and another input may be longer there (so the output may be)."""
    if x.type.shape[d] is not None:
        return False
    for o in others:
        pad = x.ndim - o.type.ndim
        if d >= pad and o.type.shape[d - pad] != 1:
            return True
    return False


def reduce_to_input(term: Variable, x: Variable, out_shape: tuple,
                    others: Optional[Sequence[Variable]] = None) -> Variable:
    """Sum term (shaped like the broadcast output) back to the shape of input x.

    others: the other inputs of the broadcast (None: unknown); where none of them can be longer than x, the
    output has x's length and x's shape is not read.
    """
    static_axes = tuple(d for d, (xs, os) in enumerate(zip(x.type.shape, out_shape))
                        if xs == 1 and os != 1)
    if static_axes:
        term = tsum(term, axis=static_axes, keepdims=True)
    if any(xs is None and os != 1 and (others is None or _may_broadcast(x, others, d))
           for d, (xs, os) in enumerate(zip(x.type.shape, out_shape))):
        term = sum_to_shape(term, x)  # x may broadcast at run time: reduce to its real shape
    elif term.type.shape != x.type.shape:
        term = term.type.clone(shape=x.type.shape).filter_variable(term)
    return term


_INEXACT = ("float32", "float64", "complex64", "complex128")
# ops whose rules handle complex inputs themselves (the others are holomorphic where complex)
_NOT_HOLOMORPHIC = (smath.abs, smath.real, smath.imag, smath.conj, smath.angle, smath.complex, smath.sign)


def _is_complex(v: Variable) -> bool:
    return v.dtype.startswith("complex")


def _rule_terms(op: Any, rule: Any, inputs: List[Variable], out: Variable, gz: Variable) -> list:
    """The rule's terms; for a holomorphic op with a complex gz, gz times the conjugate derivative (the
    gradient of a real cost w.r.t. z = x + iy is dC/dx + i dC/dy, PyTensor's convention): the rules are
    linear in gz, so that is conj(rule(conj(gz)))."""
    if not _is_complex(gz) or any(op.scalar_op is o for o in _NOT_HOLOMORPHIC):
        return rule(tm, inputs, out, gz)
    terms = rule(tm, inputs, out, tm.conj(gz))
    return [t if t is None or isinstance(getattr(t, "type", None), NullType) else tm.conj(t) for t in terms]


def elemwise_L_op(op: Any, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]
                  ) -> List[Variable]:
    """Chain rule through an Elemwise: the scalar op's rule, then undo broadcasting per input."""
    rule = op.scalar_op.grad_rule
    if rule is None:
        return [grad_not_implemented(op, i, x) for i, x in enumerate(inputs)]
    (gz,) = grads
    (out,) = outputs
    terms = _rule_terms(op, rule, inputs, out, gz)
    result = []
    for x, term in zip(inputs, terms):
        float_dtype = x.dtype if x.dtype in _INEXACT else gz.dtype
        if _is_complex(gz) and not _is_complex(x):
            float_dtype = x.dtype if x.dtype in _INEXACT else {"complex64": "float32"}.get(gz.dtype, "float64")
        if term is None:
            result.append(shaped_zeros(x, dtype=float_dtype))
            continue
        if isinstance(getattr(term, "type", None), NullType):   # the rule's grad_not_implemented/undefined
            result.append(term)
            continue
        term = as_tensor_variable(term)
        if _is_complex(term) and not float_dtype.startswith("complex"):
            term = tm.real(term)                # a real input's share of a complex gradient
        if term.dtype != float_dtype:
            term = tm.cast(term, float_dtype)
        if term.ndim == 0 and x.ndim > 0:
            term = broadcast_like(term, *inputs)
        others = [i for i in inputs if i is not x]
        result.append(reduce_to_input(term, x, out.type.shape, others))
    return result


def elemwise_R_op(op: Any, inputs: List[Variable], eval_points: List[Optional[Variable]]) -> List[Variable]:
    """Forward mode: sum over inputs of the partial derivative times the tangent (rules are linear in gz)."""
    rule = op.scalar_op.grad_rule
    if rule is None:
        raise MethodNotDefined(f"{op}.R_op")
    out = op(*inputs)
    total = None
    for i, v in enumerate(eval_points):
        if v is None:
            continue
        term = rule(tm, inputs, out, v)[i]
        if term is None:
            continue
        if isinstance(getattr(term, "type", None), NullType):
            raise MethodNotDefined(f"{op}.R_op: {term.type}")
        total = term if total is None else tm.add(total, term)
    if total is None:
        return [shaped_zeros(out)]
    total = as_tensor_variable(total)
    if total.ndim < out.ndim or total.type.shape != out.type.shape:
        total = broadcast_like(total, *inputs)
    return [total]


def _expand_reduced(gz: Variable, x: Variable, axis: Optional[tuple]) -> Variable:
    """gz of a reduction over axis, with the reduced dimensions put back as length 1."""
    return restore_reduced_dims(gz, x, tuple(range(x.ndim)) if axis is None else axis)


def careduce_L_op(op: Any, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]
                  ) -> List[Variable]:
    """sum: broadcast gz back; prod: gz * prod / x; max/min: gz where x equals the extremum."""
    (x,), (out,), (gz,) = inputs, outputs, grads
    dtype = x.dtype if x.dtype in _INEXACT else gz.dtype
    gz_full = _expand_reduced(tm.cast(gz, dtype), x, op.axis)
    scalar_op = op.scalar_op
    if scalar_op is smath.add:
        return [broadcast_like(gz_full, x)]
    if scalar_op is smath.mul:
        others = _prod_others(op, x, dtype)
        return [tm.mul(gz_full, tm.conj(others) if _is_complex(x) else others)]
    if scalar_op is smath.maximum or scalar_op is smath.minimum:
        mask = tm.eq(x, _expand_reduced(out, x, op.axis))
        return [tm.mul(gz_full, mask)]
    return [grad_not_implemented(op, 0, x)]


def _prod_others(op: Any, x: Variable, dtype: str) -> Variable:
    """d prod / d x_i = the product of the other elements, exact with zeros (no division by x_i).

    With no zero in a reduced slice it is prod / x_i; with one zero, the product of the nonzero
    elements at the zero and 0 elsewhere; with two or more zeros, 0 everywhere.
    """
    is_zero = tm.eq(x, 0)
    n_zeros = _expand_reduced(tm.sum(is_zero, axis=op.axis, dtype="int64"), x, op.axis)
    safe = tm.switch(is_zero, tm.cast(1, dtype), tm.cast(x, dtype))
    nonzero_prod = _expand_reduced(tm.prod(safe, axis=op.axis), x, op.axis)
    at_single_zero = tm.switch(tm.and_(tm.eq(n_zeros, 1), is_zero), nonzero_prod, tm.cast(0, dtype))
    return tm.switch(tm.eq(n_zeros, 0), tm.true_div(nonzero_prod, safe), at_single_zero)


def careduce_R_op(op: Any, inputs: List[Variable], eval_points: List[Optional[Variable]]) -> List[Variable]:
    """Forward mode of a sum is the sum of the tangent; other reductions use the Lop fallback."""
    if op.scalar_op is not smath.add or eval_points[0] is None:
        raise MethodNotDefined(f"{op}.R_op")
    return [op(eval_points[0])]


def alloc_L_op(op: Alloc, inputs: list, outputs: list, grads: list) -> list:
    """gz summed back to the value's shape; the lengths only set the shape (seed case 4)."""
    value, (gz,) = inputs[0], grads
    pad = gz.ndim - value.ndim
    g = tsum(gz, axis=tuple(range(pad))) if pad else gz
    return [reduce_to_input(g, value, g.type.shape)] + [disconnected_type()] * (len(inputs) - 1)


# The gradients of the ops below this module (elemwise.py, alloc.py), which build on math and shape themselves
Elemwise.L_op = elemwise_L_op
Elemwise.R_op = elemwise_R_op
CAReduce.L_op = careduce_L_op
CAReduce.R_op = careduce_R_op
Alloc.L_op = alloc_L_op
