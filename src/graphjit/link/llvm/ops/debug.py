"""Lowering of Print: a call back into its perform from the compiled function; its value is its input's."""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.print_op import Print

from graphjit.link.llvm.ir.callbacks import KIND_PERFORM, emit_callback
from graphjit.link.llvm.registry import lowerings

from graphjit.link.llvm.ir.graph_context import GraphContext


@lowerings.register(Print, callback=True)
def lower_print(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """Call Print.perform on the input (it prints; what it returns is dropped), then pass the input on."""
    emit_callback(ctx, ctx.table, ctx.node_index(node), KIND_PERFORM, node.inputs, [])
    return [ctx.values[node.inputs[0]] if node.inputs[0] in ctx.values else inputs[0]]
