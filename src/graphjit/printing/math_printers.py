"""The default pprint's printers for graphjit's ops: operators, functions, indexing, reductions, shapes.

Operators print in Theano's style, every operator expression in parentheses: ``(x + y)``, ``exp((-x))``,
``((a * b) ** 2)``. Elementwise functions print by their scalar op's name (``tanh(x)``), reductions with
their axes (``sum(x, axis=0)``), indexing as Python writes it (``x[1:3]``, ``x.shape[0]``, ``x.T``), and any
other op as its class name in snake case with its properties (``softmax(x, axis=-1)``). A scalar op declares
its operator, call name and reduction name itself (scalar/math.py): nothing here is keyed by an op's name.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, List, Sequence

from graphjit.graph.basic import Variable
from graphjit.printing.formula import LOWEST, OperatorPrinter, PPrinter, pprint
from graphjit.scalar.basic import ScalarOp
from graphjit.scalar.math import Cast
from graphjit.tensor.advanced_subtensor import (AdvancedIncSubtensor, AdvancedIncSubtensor1, AdvancedSubtensor,
                                                AdvancedSubtensor1)
from graphjit.tensor.alloc import Alloc
from graphjit.tensor.blas import Dot
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from graphjit.tensor.extra_ops import ArgReduce
from graphjit.tensor.join import Join, MakeVector
from graphjit.tensor.shape import Reshape, Shape, Shape_i
from graphjit.tensor.subtensor import ArrayIndex, IncSubtensor, ScalarIndex, Slice, Subtensor


def _scalar_name(scalar_op: ScalarOp) -> str:
    return getattr(scalar_op, "name", None) or str(scalar_op)


def elemwise_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """An Elemwise node: an operator, a cast or a function of its scalar op."""
    scalar_op = var.owner.op.scalar_op
    inputs = [_unbroadcast(i) for i in var.owner.inputs]
    operator = getattr(scalar_op, "operator", None)
    if operator is not None and len(inputs) <= 2:
        return OperatorPrinter(operator.symbol, operator.precedence, operator.associativity,
                               parens=True).render(inputs, pp, outer)
    args = ", ".join(pp.format(i, LOWEST) for i in inputs)
    if isinstance(scalar_op, Cast):
        return f"cast({args}, {scalar_op.dtype!r})"
    index = f"[{var.index}]" if len(var.owner.outputs) > 1 else ""
    return f"{getattr(scalar_op, 'call_name', None) or _scalar_name(scalar_op)}({args}){index}"


def _unbroadcast(var: Variable) -> Variable:
    """An elementwise input that only adds broadcast dims to x (order kept; what x + y inserts): x."""
    node = var.owner
    if node is not None and isinstance(node.op, DimShuffle):
        op = node.op
        if [d for d in op.new_order if d != "x"] == list(range(op.input_ndim)) and not op.drop:
            return node.inputs[0]
    return var


def dimshuffle_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``x.T``, or ``dimshuffle(x, (order))``; inside an elementwise op a broadcast prints as x itself."""
    op, x = var.owner.op, var.owner.inputs[0]
    if op.input_ndim >= 2 and list(op.new_order) == list(range(op.input_ndim))[::-1]:
        return f"{pp.format(x, 1000)}.T"
    order = ", ".join(repr(d) if d == "x" else str(d) for d in op.new_order)
    return f"dimshuffle({pp.format(x, LOWEST)}, ({order}{',' if len(op.new_order) == 1 else ''}))"


def _index_text(idx_list: Sequence[Any], inputs: Iterator[Variable], pp: PPrinter) -> str:
    def bound(b: Any) -> str:
        if b is None:
            return ""
        return pp.format(next(inputs), LOWEST) if isinstance(b, ScalarIndex) else str(b)

    parts: List[str] = []
    for e in idx_list:
        if isinstance(e, Slice):
            text = f"{bound(e.start)}:{bound(e.stop)}"
            parts.append(text + (f":{bound(e.step)}" if e.step is not None else ""))
        elif isinstance(e, (ScalarIndex, ArrayIndex)):
            parts.append(pp.format(next(inputs), LOWEST))
        elif e is None:
            parts.append("None")
        elif e is Ellipsis:
            parts.append("...")
        else:
            parts.append(str(e))
    return ", ".join(parts)


def subtensor_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``x[1:3, i]``; ``x.shape[0]`` when x is a shape."""
    node = var.owner
    return f"{pp.format(node.inputs[0], 1000)}[{_index_text(node.op.idx_list, iter(node.inputs[1:]), pp)}]"


def inc_subtensor_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``set_subtensor(x[1:], y)`` / ``inc_subtensor(x[1:], y)``."""
    node = var.owner
    name = "set_subtensor" if node.op.set_instead_of_inc else "inc_subtensor"
    target = f"{pp.format(node.inputs[0], 1000)}[{_index_text(node.op.idx_list, iter(node.inputs[2:]), pp)}]"
    return f"{name}({target}, {pp.format(node.inputs[1], LOWEST)})"


def advanced_inc1_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``set_subtensor(x[idx], y)`` / ``inc_subtensor(x[idx], y)`` for one integer array index."""
    x, y, idx = var.owner.inputs
    name = "set_subtensor" if var.owner.op.set_instead_of_inc else "inc_subtensor"
    return f"{name}({pp.format(x, 1000)}[{pp.format(idx, LOWEST)}], {pp.format(y, LOWEST)})"


def advanced1_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``x[idx]`` for one integer array index."""
    x, idx = var.owner.inputs
    return f"{pp.format(x, 1000)}[{pp.format(idx, LOWEST)}]"


def _axis_text(axis: Any, ndim: int) -> str:
    if axis is None or (isinstance(axis, (tuple, list)) and sorted(axis) == list(range(ndim))):
        return ""
    if isinstance(axis, (tuple, list)):
        return f", axis={axis[0]}" if len(axis) == 1 else f", axis={tuple(axis)}"
    return f", axis={axis}"


def careduce_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``sum(x, axis=0)``, ``max(x)``."""
    op, x = var.owner.op, var.owner.inputs[0]
    name = getattr(op.scalar_op, "reduction_name", None) or f"reduce_{_scalar_name(op.scalar_op)}"
    return f"{name}({pp.format(x, LOWEST)}{_axis_text(op.axis, x.type.ndim)})"


def argreduce_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``argmax(x, axis=0)``."""
    op, x = var.owner.op, var.owner.inputs[0]
    keep = ", keepdims=True" if op.keepdims else ""
    return f"{type(op).__name__.lower()}({pp.format(x, LOWEST)}{_axis_text(op.axis, x.type.ndim)}{keep})"


def call_printer(name: str, keywords: Sequence[str] = ()) -> Any:
    """A printer writing ``name(inputs..., keyword=value...)`` from the op's attributes."""
    def printer(var: Variable, pp: PPrinter, outer: int) -> str:
        op = var.owner.op
        args = [pp.format(i, LOWEST) for i in var.owner.inputs]
        args += [f"{k}={getattr(op, k)!r}" for k in keywords]
        return f"{name}({', '.join(args)})"
    return printer


def shape_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``x.shape``."""
    return f"{pp.format(var.owner.inputs[0], 1000)}.shape"


def shape_i_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``x.shape[i]``."""
    return f"{pp.format(var.owner.inputs[0], 1000)}.shape[{var.owner.op.i}]"


def join_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``join(axis, a, b)`` (numpy's concatenate)."""
    return f"join({var.owner.op.axis}, {', '.join(pp.format(i, LOWEST) for i in var.owner.inputs)})"


def make_vector_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """``[a, b]``."""
    return f"[{', '.join(pp.format(i, LOWEST) for i in var.owner.inputs)}]"


def snake_case(name: str) -> str:
    """'LogSumExp' -> 'log_sum_exp'."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def generic_printer(var: Variable, pp: PPrinter, outer: int) -> str:
    """Any other op: its class name in snake case with its properties: ``softmax(x, axis=-1)``."""
    node = var.owner
    op = node.op
    args = [pp.format(i, LOWEST) for i in node.inputs]
    args += [f"{k}={getattr(op, k)!r}" for k in getattr(op, "__props__", ())]
    index = f"[{var.index}]" if len(node.outputs) > 1 else ""
    return f"{snake_case(type(op).__name__)}({', '.join(args)}){index}"


def install(printer: PPrinter) -> None:
    """Teach printer graphjit's ops (the first assigned is the last tried)."""
    printer.assign(lambda var: type(var.owner.op).__module__.startswith("graphjit."), generic_printer)
    for cls, fn in [(Elemwise, elemwise_printer), (DimShuffle, dimshuffle_printer),
                    (CAReduce, careduce_printer), (ArgReduce, argreduce_printer),
                    (Subtensor, subtensor_printer), (IncSubtensor, inc_subtensor_printer),
                    (AdvancedSubtensor1, advanced1_printer), (AdvancedSubtensor, subtensor_printer),
                    (AdvancedIncSubtensor1, advanced_inc1_printer), (AdvancedIncSubtensor, inc_subtensor_printer),
                    (Dot, call_printer("dot")), (Shape, shape_printer), (Shape_i, shape_i_printer),
                    (MakeVector, make_vector_printer), (Reshape, call_printer("reshape")),
                    (Join, join_printer), (Alloc, call_printer("alloc"))]:
        printer.assign(cls, fn)


install(pprint)
