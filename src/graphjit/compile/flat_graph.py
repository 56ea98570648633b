"""A graph as flat tables (no Variable refers to another), so deep graphs pickle without recursion.

Pickled Functions (compile/pickling.py) and the rewritten graphs on disk (compile/rewrite_cache.py) store their
graph so.
"""

from __future__ import annotations

from typing import Any

from graphjit.graph.basic import Apply, io_toposort, rebuilt_variable


def flat_graph(inputs: list, outputs: list) -> dict[str, Any]:
    """The graph as flat tables (no Variable refers to another), so deep graphs pickle without recursion."""
    index: dict[Any, int] = {}
    leaves: list = []
    for v in inputs:
        index[v] = len(index)
        leaves.append(v.clone())
    nodes = []
    for node in io_toposort(inputs, outputs):
        refs = []
        for v in node.inputs:
            if v not in index:                   # a constant (or orphan): stored as a leaf of its own
                index[v] = len(index)
                leaves.append(v.clone())
            refs.append(index[v])
        shells = [(type(o), o.type, o.name, _tag_state(o)) for o in node.outputs]
        nodes.append((node.op, refs, shells, len(leaves)))
        for o in node.outputs:
            index[o] = len(index)
            leaves.append(None)                  # filled in when rebuilding
    return {"leaves": leaves, "nodes": nodes, "inputs": list(range(len(inputs))),
            "outputs": [index[v] for v in outputs]}


def _tag_state(var: Any) -> Any:
    """What a shell keeps of var's tag: its trace alone (a str) when that is all the tag holds, else a copy.

    Most variables hold nothing else, and a rebuilt variable then makes its tag on first use as a built one
    does (basic.rebuilt_variable): a warm process loading a graph of a thousand nodes makes no tag objects.
    """
    d = var.__dict__
    tag = d.get("_tag")
    if tag is None:
        trace = d.get("_trace")
        return trace if isinstance(trace, str) else var.tag.copy()
    entries = tag.__dict__
    trace = entries.get("trace")
    return trace if len(entries) == 1 and isinstance(trace, str) else tag.copy()


def unflatten(flat: dict[str, Any]) -> tuple[list, list]:
    """Inputs and outputs of the graph stored by flat_graph (new Apply nodes over the stored ops)."""
    table = list(flat["leaves"])
    for op, refs, shells, first in flat["nodes"]:
        outs = []
        for cls, typ, name, tag in shells:
            outs.append(rebuilt_variable(cls, typ, name, tag))
        Apply(op, [table[r] for r in refs], outs)
        table[first:first + len(outs)] = outs
    return [table[i] for i in flat["inputs"]], [table[i] for i in flat["outputs"]]
