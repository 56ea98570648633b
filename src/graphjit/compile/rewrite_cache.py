"""Rewritten graphs on disk: a warm process skips the rewrites as well as IR generation (cache/plans.py).

FunctionMaker asks here before rewriting.  The key hashes what the rewrites see and do: the graph as
built (ops, types, constants, wiring, and the names and source lines that error messages quote), the
In/Out settings, the mode's rewrite selection (every registered rewrite, and the sources of those defined
outside graphjit), every config flag, graphjit's own sources and the versions.  The entry is the rewritten
graph (copies for aliased outputs included) as flat tables without its inputs: a hit rebuilds it over the
maker's own input variables, so shared variables keep their containers and values.

Only modes whose linker has a store use it (``Linker.graph_store()``, link/basic.py: the LLVM linker's keeps
the entries in its object cache directory, where compile time matters), so compiling here loads no backend.
Anything unpicklable means no entry: the rewrites simply run.

The entry is a pickle (a graph holds Ops and Types of any class, which no data-only format describes), so
it is only unpickled after the object cache has verified its HMAC with the per-user secret key
(link/llvm/cache/guard.py): whoever cannot read that 0600 key cannot make this process unpickle anything.
An entry that does not rebuild is removed (and written again after the rewrites).
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from graphjit.compile.mode import REWRITERS
from graphjit.compile.flat_graph import flat_graph, unflatten
from graphjit.config import config
from graphjit.graph.basic import Apply, Variable, io_toposort
from graphjit.graph.rewriting.db import LazyDatabase, RewriteDatabase
from graphjit.link.basic import GraphStore

FORMAT = "gjr2"     # gjr2: keyed on the graph as the user built it (no FunctionGraph clone before the lookup)


class GraphEnds:
    """The user's graph as the key sees it, before any FunctionGraph is built: a hit never clones it."""

    def __init__(self, inputs: list[Variable], outputs: list[Variable], update_mapping: dict[int, int]) -> None:
        self.inputs = inputs
        self.outputs = outputs
        self.update_mapping = update_mapping

    def toposort(self) -> list[Apply]:
        """The nodes between inputs and outputs in dependency order (deterministic for a given graph)."""
        return io_toposort(self.inputs, self.outputs)


def _rewriter_fingerprint(mode: Any, graphs: GraphStore) -> tuple:
    """The mode's tags and every entry of the rewrite databases it queries (names, tags, positions, code)."""

    def code(obj: Any) -> tuple:
        """Where obj's code lives; with the source's digest when that is outside graphjit (users edit it)."""
        fn = getattr(obj, "fn", None) or getattr(obj, "transform", None) or obj
        module = getattr(fn, "__module__", None) or type(obj).__module__
        return (type(obj).__module__, type(obj).__qualname__, module, graphs.source_digest(module))

    def describe(db: Any) -> tuple:
        rows = []
        for e in db.entries():
            obj = e.obj
            body = describe(obj) if isinstance(obj, RewriteDatabase) else code(obj)
            rows.append((e.name, tuple(sorted(e.tags)), e.position, body))
        return tuple(rows)

    r = mode.provided_rewriter
    if isinstance(r, str):
        name, r = r.lower(), REWRITERS[r.lower()]
    else:
        name = None
    if isinstance(r, LazyDatabase):
        if r.pristine():
            # graphjit's own rewrites, covered by the source digest: the same key before and after the first
            # compile imports the database, and a warm process never imports it (~4 ms of a warm start)
            return (name, mode.effective_include, mode.exclude, mode.require, ("builtin", r.module, r.attribute))
        r = r.resolve()
    body = describe(r) if isinstance(r, RewriteDatabase) else code(r)
    return (name, mode.effective_include, mode.exclude, mode.require, body)


def rewrite_key(maker: Any, graphs: GraphStore, ends: GraphEnds) -> str | None:
    """The entry's key for a maker's graph (ends: as the user built it, not yet rewritten; None: do not cache)."""
    try:
        ins = tuple((s.mutable, s.borrow, s.strict, s.allow_downcast, s.implicit, s.update is not None)
                    for s in maker.inputs)
        state = (FORMAT, np.__version__, _rewriter_fingerprint(maker.mode, graphs),
                 tuple(sorted(config.flags().items())), maker.accept_inplace, ins,
                 tuple(o.borrow for o in maker.outputs), tuple(sorted(ends.update_mapping.items())))
        return graphs.key(ends, state)
    except Exception:   # noqa: BLE001 - an op or value the signature cannot describe just means no entry
        return None


def store(graphs: GraphStore, key: str, fgraph: Any) -> bool:
    """Write the rewritten graph (without its inputs) under key; whether it could be (it pickles)."""
    flat = flat_graph(list(fgraph.inputs), list(fgraph.outputs))
    for k in flat["inputs"]:
        flat["leaves"][k] = None                  # the maker's own inputs take their place on load
    try:
        blob = pickle.dumps({"graph": flat, "update_mapping": dict(fgraph.update_mapping)}, protocol=4)
    except Exception:   # noqa: BLE001
        return False
    graphs.store(key, blob)
    return True


def load(graphs: GraphStore, key: str, inputs: list) -> tuple[list, list, dict] | None:
    """(inputs, outputs, update_mapping) of the stored rewritten graph rebuilt over inputs; None if absent."""
    raw = graphs.load(key)
    if raw is None:
        return None
    try:
        state = pickle.loads(raw)       # authenticated by graphs.load (HMAC, see the module doc)
        flat = state["graph"]
        if len(flat["inputs"]) != len(inputs):
            raise ValueError("the stored graph has other inputs")
        for k, var in zip(flat["inputs"], inputs):
            flat["leaves"][k] = var
        ins, outs = unflatten(flat)
        return ins, outs, {int(k): int(v) for k, v in state["update_mapping"].items()}
    except Exception:   # noqa: BLE001 - a stale or unreadable entry is dropped (and rewritten)
        graphs.discard(key)
        return None
