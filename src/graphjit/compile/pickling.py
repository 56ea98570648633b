"""Pickling compiled Functions: the rewritten graph, the mode, the In/Out settings and the shared values.

A Function pickles as its *rewritten* FunctionGraph (cloned free of features), not the user's graph, so
unpickling skips the rewrites and goes straight to the linker; the linker then finds the module in the
object cache (its IR, hence its key, is a function of the graph alone) and skips LLVM codegen too. That is
what makes shipping Functions to process pools and Dask workers cheap once the cache is warm.

Shared variables are pickled as the SharedVariable objects themselves (with their current values), so
Functions pickled together keep sharing them; after unpickling they are new shared variables, independent of
the sending process's.

A FunctionMaker pickles as ``(compile.maker.rebuild_maker, (maker_state(maker),))``: rebuild_maker makes a blank
FunctionMaker and fills it in with restore_maker. A Function pickles as ``(rebuild_function,
(function_state(fn),))``, its state holding its maker object.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from graphjit.compile.flat_graph import flat_graph, unflatten
from graphjit.compile.io import In, Out
from graphjit.compile.mode import get_mode
from graphjit.graph.features import ReplaceValidate, Supervisor
from graphjit.graph.fg import FunctionGraph

_VERSION = 2        # 2: a Function's state holds its maker object (pickled by FunctionMaker.__reduce__)


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


def maker_state(maker: Any) -> dict[str, Any]:
    """What rebuild_maker needs: the rewritten graph (flat), mode, In/Out settings."""
    fgraph = maker.fgraph
    flat = flat_graph(list(fgraph.inputs), list(fgraph.outputs))
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


def restore_maker(maker: Any, state: dict[str, Any]) -> None:
    """Fill in a blank FunctionMaker from maker_state's state: the rewritten graph linked without any rewrite."""
    if state.get("version") != _VERSION:
        raise ValueError(f"pickled graphjit Function of format {state.get('version')}, expected {_VERSION}")
    specs: list[In] = state["specs"]
    inputs, outputs = unflatten(state["graph"])
    for spec, var in zip(specs, inputs):
        if spec.variable is None:
            spec.variable = var
    for out_idx, in_idx in state["update_mapping"].items():
        specs[in_idx].update = outputs[out_idx]
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


def function_state(fn: Any) -> dict[str, Any]:
    """What rebuild_function needs: the maker, the default values held for explicit inputs, flags."""
    defaults = [None if spec.implicit else c.storage[0] for spec, c in zip(fn.maker.inputs, fn.input_storage)]
    return {"version": _VERSION, "maker": fn.maker, "defaults": defaults, "trust_input": fn.trust_input,
            "name": fn.name}


def rebuild_function(state: dict[str, Any]) -> Any:
    """The Function of a pickled state (compiled by the linker, normally from the object cache)."""
    if state.get("version") != _VERSION:
        raise ValueError(f"pickled graphjit Function of format {state.get('version', 1)}, expected {_VERSION}")
    maker = state["maker"]
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
