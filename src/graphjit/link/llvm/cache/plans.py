"""The disk map from a graph's structure to its compiled plan, so a warm process never rebuilds the IR.

The object cache is keyed by the IR text, which costs IR generation and printing to compute (most of a
warm compile).  A plan maps the graph's structural signature (linker.structural_signature) to the object
key, the library's symbol prefix (ir/modules.py) and what the Python side needs to call the entry (argument
specs, messages, fallback positions, slot counts), stored as JSON in a ``.gjp`` entry of the object cache
directory.

The plan key hashes the pickled signature with everything else that shapes the generated code: the
graphjit sources (lowering code changes without a version bump during development), the sources of ops
defined outside graphjit, host target, vector library, BLAS source and versions.  Anything unpicklable in the
signature means no plan (the ordinary IR-hash path still works).  A plan whose object is gone, or that
does not parse, is ignored and rewritten.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import sys
from typing import Any

import llvmlite
import numpy as np

from graphjit.link.llvm.cache.objects import PLAN_SUFFIX
from graphjit.link.llvm.cpython.argspec import ArgSpec
from graphjit.link.llvm.jit.runtime import blas_source

FORMAT = "gjp3"       # gjp3: plans carry their library's symbol prefix
ALIAS_FORMAT = "gja1"
_SOURCES: dict[str, str] = {}


def _file_digest(path: str) -> str:
    digest = _SOURCES.get(path)
    if digest is None:
        try:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            digest = "?"
        _SOURCES[path] = digest
    return digest


def package_digest() -> str:
    """A digest of graphjit's own sources: path, size and modification time of each (once per process).

    Reading every file costs more than the rest of a warm compile; an edit (or a checkout) changes the
    modification time, which is what matters here.
    """
    here = os.path.abspath(__file__)                       # graphjit/link/llvm/cache/plans.py
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(here))))     # graphjit/
    digest = _SOURCES.get(root)
    if digest is None:
        h = hashlib.sha256()
        for base, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(base, name)
                st = os.stat(path)
                h.update(f"{path[len(root):]}:{st.st_size}:{st.st_mtime_ns}\0".encode())
        digest = _SOURCES[root] = h.hexdigest()
    return digest


def source_digest(module_name: str) -> str:
    """The digest of a module's source file when it is not graphjit's own ("" otherwise or without a file)."""
    if module_name.split(".")[0] == "graphjit":
        return ""
    path = getattr(sys.modules.get(module_name), "__file__", None)
    return _file_digest(path) if path else ""


def _foreign_sources(signature: tuple) -> list[str]:
    """Digests of the modules defining ops from outside graphjit (their lower() may change freely)."""
    # structural_signature: (level, parallel, variant, (inputs, nodes, outputs, op classes)[, instrumentation])
    graph = signature[3] if isinstance(signature, tuple) and len(signature) >= 4 else None
    if not (isinstance(graph, tuple) and len(graph) == 4 and isinstance(graph[3], tuple)):
        return []
    ops = {cls for cls in graph[3] if isinstance(cls, type)}
    return sorted({d for d in (source_digest(op.__module__) for op in ops) if d})


def stable_pickle(obj: Any) -> bytes | None:
    """obj pickled without the memo, so equal structures give equal bytes however their objects are shared.

    (With the memo, a graph whose nodes share one op instance pickles differently from an equal graph with
    an instance per node: a plan written by one would never be found by the other.)  None if it does not
    pickle.
    """
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=4)
    pickler.fast = True
    try:
        pickler.dump(obj)
    except Exception:   # noqa: BLE001 - any state pickle rejects (or a cycle) just means no key
        return None
    return buf.getvalue()


def plan_key(signature: Any, compiler: Any, blob: bytes | None = None) -> str | None:
    """The plan's key for a structural signature on this host (None when the signature does not pickle);
    blob: the signature's stable_pickle, if the caller has it."""
    blob = stable_pickle(signature) if blob is None else blob
    if blob is None:
        return None
    return _host_digest(FORMAT, _foreign_sources(signature), compiler, blob)


def alias_key(state: Any, foreign_modules: Any, compiler: Any) -> str | None:
    """The key of a plan alias: a plan stored under the rewrite cache's key of the graph (compile/rewrite_cache.py)
    with state (that key, the lowering versions, flags and the order's check, see linker.compile_graph), so that
    a warm process finds its plan without the structural signature; the same host parts and sources as
    plan_key, the sources of foreign_modules (those defining the graph's op and Type classes) included."""
    blob = stable_pickle(state)
    if blob is None:
        return None
    foreign = sorted({d for d in (source_digest(m) for m in foreign_modules) if d})
    return _host_digest(ALIAS_FORMAT, foreign, compiler, blob)


def _host_digest(fmt: str, foreign: list[str], compiler: Any, blob: bytes) -> str:
    """sha256 of fmt, graphjit's sources, the foreign sources, the host's target, BLAS and versions, and blob."""
    h = hashlib.sha256()
    parts = [fmt, package_digest(), *foreign, compiler.triple, compiler.cpu,
             compiler.features, compiler.vector_library, blas_source(), llvmlite.__version__,
             compiler.llvm_version, np.__version__]
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    h.update(blob)
    return h.hexdigest()


def _spec_state(spec: ArgSpec) -> list:
    return [spec.kind, spec.dtype, spec.ndim, list(spec.shape), spec.writeable]


def _spec(state: list) -> ArgSpec:
    kind, dtype, ndim, shape, writeable = state
    if any(n is not None and (type(n) is not int or n < 0) for n in shape):
        raise ValueError("bad static length in a stored spec")
    return ArgSpec(kind, dtype, int(ndim), tuple(shape), bool(writeable))


def store_json(cache: Any, key: str, state: dict[str, Any]) -> None:
    """Write a JSON entry under key (a plan, or any other map to an object key)."""
    cache.store(key, json.dumps(state, sort_keys=True).encode(), suffix=PLAN_SUFFIX)


def load_json(cache: Any, key: str) -> dict[str, Any] | None:
    """The JSON entry under key, or None (missing or unreadable)."""
    raw = cache.load(key, remove_corrupt=True, suffix=PLAN_SUFFIX)
    if raw is None:
        return None
    try:
        state = json.loads(raw.decode())
    except ValueError:
        state = None
    if not isinstance(state, dict):
        cache.discard(key, PLAN_SUFFIX)
        return None
    return state


def store_plan(cache: Any, key: str, plan: dict[str, Any]) -> None:
    """Write a plan (object key, in/out specs, fallback indices, counts, messages) under key."""
    store_json(cache, key, dict(plan, in_specs=[_spec_state(s) for s in plan["in_specs"]],
                                out_specs=[_spec_state(s) for s in plan["out_specs"]]))


_PLAN_FIELDS = {"object": str, "prefix": str, "messages": list, "message_nodes": list, "fallback_indices": list,
                "n_groups": int, "n_temp": int, "uses_blas": bool, "calls_python": bool}


def _valid_plan(state: dict[str, Any]) -> bool:
    """Whether a stored plan has every field, of its type (the object key a sha256 hex, the prefix a symbol_prefix)."""
    if any(not isinstance(state.get(k), t) for k, t in _PLAN_FIELDS.items()):
        return False
    ints = [*state["message_nodes"], *state["fallback_indices"], state["n_groups"], state["n_temp"]]
    return (len(state["object"]) == 64 and all(c in "0123456789abcdef" for c in state["object"])
            and _is_prefix(state["prefix"])
            and all(type(i) is int for i in ints) and all(isinstance(m, str) for m in state["messages"]))


def _is_prefix(text: str) -> bool:
    """Whether text is a modules.symbol_prefix: ``gj_<20 hex digits>_``."""
    return (len(text) == 24 and text.startswith("gj_") and text.endswith("_")
            and all(c in "0123456789abcdef" for c in text[3:-1]))


def load_plan(cache: Any, key: str) -> dict[str, Any] | None:
    """The plan stored under key, or None (missing or unreadable: a bad entry is removed)."""
    state = load_json(cache, key)
    if state is None:
        return None
    try:
        if not _valid_plan(state):
            raise ValueError("malformed plan")
        state["in_specs"] = [_spec(s) for s in state["in_specs"]]
        state["out_specs"] = [_spec(s) for s in state["out_specs"]]
        return state
    except (ValueError, KeyError, TypeError):
        cache.discard(key, PLAN_SUFFIX)
        return None
