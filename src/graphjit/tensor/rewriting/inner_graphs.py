"""Expanding ops that stand for a graph (an op defining ``inline_expansion(node) -> outputs``, e.g.
``graphjit.builders.OpFromGraph``) into that graph.

- ``inline_marked_graphs`` (fast_run, fast_compile): the ops whose ``inline`` attribute is true, in every mode.
- ``inline_inner_graphs`` (tag ``inline_inner_graphs`` only, which the FAST_RUN and FAST_COMPILE modes include):
  every such op.  The LLVM linker then compiles the inner graph as part of the fused function (its own lowering
  of the op, by inlining); PY mode keeps the op and runs its ``perform``.

Both run before canonicalize, so the expanded graph gets every later rewrite; nested ops expand to a fixpoint.
"""

from __future__ import annotations

from typing import Any

from graphjit.graph.basic import Apply
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import GraphRewriter, replace_pairs
from graphjit.tensor.rewriting.basic import keep_type, rewrite_db


class InlineGraphs(GraphRewriter):
    """Replace each expandable node (every one, or those whose op has ``inline`` true) by its graph."""

    def __init__(self, only_marked: bool, name: str) -> None:
        self.only_marked = only_marked
        self.name = name

    def _wanted(self, node: Apply) -> bool:
        if getattr(node.op, "inline_expansion", None) is None:
            return False
        return not self.only_marked or bool(getattr(node.op, "inline", False))

    def apply(self, fgraph: FunctionGraph) -> Any:
        """Expand to a fixpoint; returns the number of nodes expanded."""
        done = 0
        while True:
            nodes = [n for n in fgraph.toposort() if self._wanted(n)]
            if not nodes:
                return done
            for node in nodes:
                if node not in fgraph.apply_nodes:
                    continue
                new = [keep_type(v, o) for v, o in zip(node.op.inline_expansion(node), node.outputs)]
                if any(v is None for v in new) or not replace_pairs(fgraph, list(zip(node.outputs, new)), self.name):
                    raise TypeError(f"{self.name}: {node.op}'s graph cannot replace the node ({node})")
                done += 1


rewrite_db.register("inline_marked_graphs", InlineGraphs(True, "inline_marked_graphs"), "fast_run", "fast_compile",
                    position=0.25)
rewrite_db.register("inline_inner_graphs", InlineGraphs(False, "inline_inner_graphs"), "inline_inner_graphs",
                    position=0.26)
