"""The LowerContext inside a kernel function: the graph's context it reports to, and whether it is on vectors."""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir.context import LowerContext, ScalarOnly
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I32


class KernelContext(LowerContext):
    """Context inside a kernel function: scalar errors return a message index + 1 from the kernel."""

    def __init__(self, builder: ir.IRBuilder, gctx: GraphContext) -> None:
        super().__init__(builder, rt=None)
        self.gctx = gctx
        self.current_node = gctx.current_node
        self.lanes = 0                      # > 0 while a body is emitted on vectors (loops/vector_body.py)
        self.vector_refused = ""            # why the body did not lower on vectors

    def scalar_error_if(self, cond: ir.Value, exc: str, text: str) -> None:
        """If cond, return the message's index + 1 from the kernel (a body that can fail stays scalar)."""
        if self.lanes:
            raise ScalarOnly("the body reports errors")
        idx = self.gctx.message(self.current_node, exc, text)
        b = self.builder
        with b.if_then(cond, likely=False):
            b.ret(I32(idx + 1))
