"""Lowering of CheckAndRaise: x itself, after one test per condition (the op's exception and message)."""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.check_op import CheckAndRaise

from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext


@lowerings.register(CheckAndRaise, complex=True)    # reads only the conditions
def lower_check_and_raise(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Raise the op's exception where a (bool, i8 in memory) condition is zero; return x."""
    b = ctx.builder
    for cond in inputs[1:]:
        v = ctx.load_element(cond, [])
        ctx.raise_if(b.icmp_unsigned("==", v, ir.Constant(v.type, 0)), node, node.op.exc,
                     node.op.msg.replace("%", "%%"))
    return [inputs[0]]
