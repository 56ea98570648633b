"""Reductions, products, softmax, cumulative ops, linear algebra, checks and the ops that hold a graph."""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np
import pytensor.scalar.basic as ps
import pytensor.tensor.blas as pblas
import pytensor.tensor.nlinalg as pnl
import pytensor.tensor.slinalg as psl
import pytensor.tensor.special as psp
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.ops import DeepCopyOp, ViewOp
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce
from pytensor.tensor.extra_ops import CumOp
from pytensor.tensor.math import Argmax, Dot

import graphjit.tensor as gt
import graphjit.tensor.linalg as gl
from graphjit.pytensor.registry import lookup, register
from graphjit.pytensor.translate import translate_graph
from graphjit.tensor.blockwise import vectorize_graph
from graphjit.tensor.check_op import check_and_raise

REDUCTIONS = {ps.Add: gt.sum, ps.Mul: gt.prod, ps.ScalarMaximum: gt.max, ps.ScalarMinimum: gt.min,
              ps.AND: gt.all, ps.OR: gt.any}


@register(CAReduce)
def careduce(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Sum/Prod/Max/Min/All/Any over ``op.axis`` (None: all axes); the dtype is PyTensor's."""
    reduce = REDUCTIONS.get(type(op.scalar_op))
    if reduce is None:
        raise NotImplementedError(f"a reduction by {op.scalar_op}")
    axis = None if op.axis is None else list(op.axis)
    dtype = node.outputs[0].type.dtype
    if reduce in (gt.sum, gt.prod):
        return reduce(values[0], axis=axis, dtype=dtype)
    return reduce(values[0], axis=axis)


@register(Argmax)
def argmax(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Index of the maximum along one axis (or over all)."""
    axis = op.axis if op.axis is None or len(op.axis) != 1 else op.axis[0]
    if axis is not None and not isinstance(axis, int):
        raise NotImplementedError("argmax over several axes")
    return gt.argmax(values[0], axis=axis)


@register(Dot)
def dot(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Vector and matrix products (graphjit's rewrites make a matrix with one column or row a Gemv)."""
    return gt.dot(values[0], values[1])


@register(pblas.Gemv)
def gemv(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """beta * y + alpha * dot(A, x) (graphjit's rewrites choose its own Gemv)."""
    y, alpha, a, x, beta = values
    return beta * y + alpha * gt.dot(a, x)


@register(pblas.Ger)
def ger(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A + alpha * outer(x, y)."""
    a, alpha, x, y = values
    return a + alpha * gt.outer(x, y)


@register(pblas.Dot22)
def dot22(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A matrix product."""
    return gt.dot(values[0], values[1])


@register(psp.Softmax)
def softmax(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Softmax along ``op.axis``."""
    return gt.softmax(values[0], axis=op.axis)


@register(psp.LogSoftmax)
def log_softmax(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Log-softmax along ``op.axis``."""
    return gt.log_softmax(values[0], axis=op.axis)


@register(psp.SoftmaxGrad)
def softmax_grad(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """The gradient of softmax: sm * (dy - sum(dy * sm, axis))."""
    dy, sm = values
    axis = op.axis if op.axis is not None else None
    return sm * (dy - gt.sum(dy * sm, axis=axis, keepdims=True))


@register(CumOp)
def cumop(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """cumsum / cumprod along ``op.axis`` (None: flattened)."""
    return (gt.cumsum if op.mode == "add" else gt.cumprod)(values[0], axis=op.axis)


@register(psl.Cholesky)
def cholesky(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """The Cholesky factor; a matrix that is not positive definite gives NaNs, as in PyTensor."""
    return gl.cholesky(values[0], lower=op.lower, on_error="nan")


@register(psl.SolveTriangular)
def solve_triangular(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A triangular solve; a singular matrix gives NaNs, as in PyTensor."""
    return gl.solve_triangular(values[0], values[1], lower=op.lower, unit_diagonal=op.unit_diagonal,
                               on_error="nan")


@register(psl.Solve)
def solve(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A general, symmetric or positive-definite solve (a singular matrix raises, as scipy does in PyTensor)."""
    if op.assume_a not in ("gen", "sym", "pos"):
        raise NotImplementedError(f"solve with assume_a={op.assume_a!r}")
    return gl.solve(values[0], values[1], assume_a=op.assume_a, lower=op.lower)


@register(pnl.MatrixInverse)
def matrix_inverse(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """The inverse (a singular matrix raises, as numpy does in PyTensor)."""
    return gl.inv(values[0])


@register(pnl.Det)
def det(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """The determinant."""
    return gl.det(values[0])


@register(pnl.SLogDet)
def slogdet(op: Any, node: Any, values: Sequence[Any]) -> List[Any]:
    """(sign, log|det|)."""
    return list(gl.slogdet(values[0]))


@register(DeepCopyOp, ViewOp)
def identity(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """Copies and views: graphjit's own compiler decides where an output needs its own memory."""
    return values[0]


@register(CheckAndRaise)
def check_and_raise_op(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """PyMC's CheckParameterValue: -inf where it may be replaced by -inf, else a raise (so is Assert)."""
    x, conds = values[0], [c if c.ndim == 0 else gt.all(c) for c in values[1:]]
    if getattr(op, "can_be_replaced_by_ninf", False):
        ok = conds[0]
        for c in conds[1:]:
            ok = gt.and_(ok, c)
        return gt.switch(ok, x, gt.constant(np.array(-np.inf, dtype=x.dtype), dtype=x.dtype))
    return check_and_raise(x, conds, op.msg or str(op), exc="ValueError")


@register(OpFromGraph)
def op_from_graph(op: Any, node: Any, values: Sequence[Any]) -> List[Any]:
    """An inner graph, inlined: graphjit compiles it with the rest."""
    inner = op.fgraph
    return translate_graph(inner.inputs, inner.outputs, inner.toposort(), values)


@register(Blockwise)
def blockwise(op: Any, node: Any, values: Sequence[Any]) -> Any:
    """A Blockwise is its core op: applied directly when the inputs have no batch dimensions, else translated on
    core-shaped stand-ins and vectorized over the batch dimensions by graphjit (its Blockwise)."""
    core = lookup(op.core_op)
    if core is None:
        raise NotImplementedError(f"its core op {op.core_op} has no translation")
    if all(inp.type.ndim == len(sig) for inp, sig in zip(node.inputs, op.inputs_sig)):
        return core(op.core_op, node, values)
    stand_ins = [gt.tensor(v.dtype, shape=v.type.shape[v.ndim - len(sig):])
                 for v, sig in zip(values, op.inputs_sig)]
    outs = core(op.core_op, node, stand_ins)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return vectorize_graph(outs, dict(zip(stand_ins, values)))
