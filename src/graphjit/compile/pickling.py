"""Pickling compiled Functions: the rewritten graph, the mode, the In/Out settings and the shared values.

A Function pickles as its *rewritten* FunctionGraph (cloned free of features), not the user's graph, so
unpickling skips the rewrites and goes straight to the linker; the linker then finds the module in the
object cache (its IR, hence its key, is a function of the graph alone) and skips LLVM codegen too. That is
what makes shipping Functions to process pools and Dask workers cheap once the cache is warm.

Shared variables are pickled as the SharedVariable objects themselves (with their current values), so
Functions pickled together keep sharing them; after unpickling they are new shared variables, independent of
the sending process's.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from graphjit.compile.io import In, Out
from graphjit.compile.mode import get_mode
from graphjit.graph.basic import Apply, io_toposort, rebuilt_variable
from graphjit.graph.features import ReplaceValidate, Supervisor
from graphjit.graph.fg import FunctionGraph

_VERSION = 1


def _mode_state(mode: Any) -> Any:
    """A registered mode by name (the receiver's registry resolves it), else the Mode object itself."""
    name = getattr(mode, "name", None)
    if isinstance(name, str):
        try:
            if get_mode(name) is mode:
                return name
        except (KeyError, ValueError, TypeError):
            pass
    return mode


def _flat_graph(inputs: list, outputs: list) -> dict[str, Any]:
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


def _unflatten(flat: dict[str, Any]) -> tuple[list, list]:
    """Inputs and outputs of the graph stored by _flat_graph (new Apply nodes over the stored ops)."""
    table = list(flat["leaves"])
    for op, refs, shells, first in flat["nodes"]:
        outs = []
        for cls, typ, name, tag in shells:
            outs.append(rebuilt_variable(cls, typ, name, tag))
        Apply(op, [table[r] for r in refs], outs)
        table[first:first + len(outs)] = outs
    return [table[i] for i in flat["inputs"]], [table[i] for i in flat["outputs"]]


def maker_state(maker: Any) -> dict[str, Any]:
    """What rebuild_maker needs: the rewritten graph (flat), mode, In/Out settings."""
    fgraph = maker.fgraph
    flat = _flat_graph(list(fgraph.inputs), list(fgraph.outputs))
    specs = []
    for spec in maker.inputs:
        cp = copy.copy(spec)
        cp.update = None                 # rebuilt from update_mapping (the rewritten update expression)
        if not spec.implicit:
            cp.variable = None           # the graph's own input stands for the user's Variable
        specs.append(cp)
    return {"version": _VERSION, "graph": flat, "specs": specs,
            "borrow": [o.borrow for o in maker.outputs], "unpack_single": maker.unpack_single,
            "update_mapping": dict(fgraph.update_mapping), "mode": _mode_state(maker.mode),
            "name": maker.name, "accept_inplace": maker.accept_inplace}


def rebuild_maker(state: dict[str, Any]) -> Any:
    """A FunctionMaker over the pickled rewritten graph, linked without running any rewrite."""
    if state.get("version") != _VERSION:
        raise ValueError(f"pickled graphjit Function of format {state.get('version')}, expected {_VERSION}")
    specs: list[In] = state["specs"]
    inputs, outputs = _unflatten(state["graph"])
    for spec, var in zip(specs, inputs):
        if spec.variable is None:
            spec.variable = var
    for out_idx, in_idx in state["update_mapping"].items():
        specs[in_idx].update = outputs[out_idx]
    maker = FunctionMaker.__new__(FunctionMaker)
    maker.unpack_single = state["unpack_single"]
    maker.inputs = specs
    n_user = len(state["borrow"])
    maker.outputs = [Out(v, b) for v, b in zip(outputs[:n_user], state["borrow"])]
    maker.mode = get_mode(state["mode"])
    maker.name, maker.accept_inplace = state["name"], state["accept_inplace"]
    fgraph = FunctionGraph(inputs, outputs, clone=False, update_mapping=state["update_mapping"])
    fgraph.attach_feature(ReplaceValidate())
    fgraph.attach_feature(Supervisor([v for v, s in zip(fgraph.inputs, specs)
                                      if not s.mutable and s.update is None]))
    maker.fgraph = fgraph
    maker.no_recycling = maker._no_recycling()
    maker.linker = maker.mode.linker.accept(fgraph, maker.no_recycling)
    return maker


def reduce_maker(maker: Any) -> tuple[Callable[..., Any], tuple]:
    """``FunctionMaker.__reduce__``."""
    return rebuild_maker, (maker_state(maker),)


def function_state(fn: Any) -> dict[str, Any]:
    """What rebuild_function needs: the maker's state, the default values held for explicit inputs, flags."""
    defaults = [None if spec.implicit else c.storage[0] for spec, c in zip(fn.maker.inputs, fn.input_storage)]
    return {"maker": maker_state(fn.maker), "defaults": defaults, "trust_input": fn.trust_input,
            "name": fn.name}


def rebuild_function(state: dict[str, Any]) -> Any:
    """The Function of a pickled state (compiled by the linker, normally from the object cache)."""
    maker = rebuild_maker(state["maker"])
    cells = maker.initial_cells()
    for k, (spec, value) in enumerate(zip(maker.inputs, state["defaults"])):
        if not spec.implicit and value is not None and spec.value is not None:
            cells[k][0] = value          # a default changed with f[name] = value since compilation
    fn = maker.create(input_storage=cells, trust_input=state["trust_input"])
    fn.name = state["name"]
    return fn


def reduce_function(fn: Any) -> tuple[Callable[..., Any], tuple]:
    """``Function.__reduce__``."""
    return rebuild_function, (function_state(fn),)


# maker.py imports this module: FunctionMaker is imported once this module's names exist.
from graphjit.compile.maker import FunctionMaker  # noqa: E402
