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
from graphjit.graph.basic import clone_get_equiv

_VERSION = 1


def _mode_state(mode: Any) -> Any:
    """A registered mode by name (the receiver's registry resolves it), else the Mode object itself."""
    from graphjit.compile.mode import get_mode
    name = getattr(mode, "name", None)
    if isinstance(name, str):
        try:
            if get_mode(name) is mode:
                return name
        except (KeyError, ValueError, TypeError):
            pass
    return mode


def maker_state(maker: Any) -> dict[str, Any]:
    """What rebuild_maker needs: the rewritten graph (a feature-free clone), mode, In/Out settings."""
    fgraph = maker.fgraph
    equiv = clone_get_equiv(fgraph.inputs, fgraph.outputs, copy_inputs=True)
    inputs = [equiv[v] for v in fgraph.inputs]
    outputs = [equiv[v] for v in fgraph.outputs]
    specs = []
    for spec, var in zip(maker.inputs, inputs):
        cp = copy.copy(spec)
        cp.update = None                 # rebuilt from update_mapping (the rewritten update expression)
        if not spec.implicit:
            cp.variable = var            # the user's Variable is not needed, its clone stands for it
        specs.append(cp)
    return {"version": _VERSION, "inputs": inputs, "outputs": outputs, "specs": specs,
            "borrow": [o.borrow for o in maker.outputs], "unpack_single": maker.unpack_single,
            "update_mapping": dict(fgraph.update_mapping), "mode": _mode_state(maker.mode),
            "name": maker.name, "accept_inplace": maker.accept_inplace}


def rebuild_maker(state: dict[str, Any]) -> Any:
    """A FunctionMaker over the pickled rewritten graph, linked without running any rewrite."""
    from graphjit.compile.maker import FunctionMaker
    from graphjit.compile.mode import get_mode
    from graphjit.graph.features import ReplaceValidate, Supervisor
    from graphjit.graph.fg import FunctionGraph
    if state.get("version") != _VERSION:
        raise ValueError(f"pickled graphjit Function of format {state.get('version')}, expected {_VERSION}")
    specs: list[In] = state["specs"]
    outputs = state["outputs"]
    for out_idx, in_idx in state["update_mapping"].items():
        specs[in_idx].update = outputs[out_idx]
    maker = FunctionMaker.__new__(FunctionMaker)
    maker.unpack_single = state["unpack_single"]
    maker.inputs = specs
    n_user = len(state["borrow"])
    maker.outputs = [Out(v, b) for v, b in zip(outputs[:n_user], state["borrow"])]
    maker.mode = get_mode(state["mode"])
    maker.name, maker.accept_inplace = state["name"], state["accept_inplace"]
    fgraph = FunctionGraph(state["inputs"], outputs, clone=False, update_mapping=state["update_mapping"])
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
