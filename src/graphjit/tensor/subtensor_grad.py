"""Gradients and forward-mode products of indexing reads and writes (shared by basic and advanced indexing)."""

from __future__ import annotations

from typing import Any, List, Sequence

from graphjit.graph.basic import Variable
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.tensor import math as gm
from graphjit.tensor.alloc import shaped_zeros


def _disconnected(n: int) -> List[Variable]:
    return [disconnected_type() for _ in range(n)]


def sum_to(g: Variable, y: Variable) -> Variable:
    """g summed over the dimensions along which y was broadcast (leading ones, static length 1)."""
    lead = g.ndim - y.ndim
    if lead:
        g = gm.sum(g, axis=tuple(range(lead)))
    axes = tuple(d for d, (ys, gs) in enumerate(zip(y.type.shape, g.type.shape)) if ys == 1 and gs != 1)
    return gm.sum(g, axis=axes, keepdims=True) if axes else g


def read_grad(write_op: Op, inputs: Sequence[Variable], gz: Variable) -> List[Variable]:
    """The gradients of x[idx]: gz added into zeros shaped like x (write_op), none for the index."""
    x, *index_inputs = inputs
    return [write_op(shaped_zeros(x), gz, *index_inputs)] + _disconnected(len(index_inputs))


def write_grads(op: Any, read_op: Op, set_op: Op, inputs: Sequence[Variable], gz: Variable
                ) -> List[Variable]:
    """The gradients of a write: gz (zeroed at idx for a set) for x, gz[idx] summed to y's shape for y."""
    x, y, *index_inputs = inputs
    gx = set_op(gz, 0, *index_inputs) if op.set_instead_of_inc else gz
    return [gx, sum_to(read_op(gz, *index_inputs), y)] + _disconnected(len(index_inputs))


def read_rop(op: Op, inputs: Sequence[Variable], eval_points: Sequence[Any]) -> List[Any]:
    """Forward mode of a read: the tangent of x read at the same index."""
    return [None if eval_points[0] is None else op(eval_points[0], *inputs[1:])]


def write_rop(op: Op, inputs: Sequence[Variable], eval_points: Sequence[Any]) -> List[Any]:
    """Forward mode of a write (it is linear in x and y): the same write of the tangents."""
    (x, y, *index_inputs), (vx, vy) = inputs, eval_points[:2]
    if vx is None and vy is None:
        return [None]
    return [op(shaped_zeros(x) if vx is None else vx, shaped_zeros(y) if vy is None else vy, *index_inputs)]
