"""The old import path of GraphContext and Value, which users' lowerings import from here (docs/extending.md);
both are defined in ir/graph_context.py, and the driver that builds a native entry is driver/native_entry.py."""

from graphjit.link.llvm.ir.graph_context import GraphContext, Value

__all__ = ["GraphContext", "Value"]
