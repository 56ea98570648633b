"""The disk map from a graph's structure to its compiled plan, so a warm process never rebuilds the IR.

The object cache is keyed by the IR text, which costs IR generation and printing to compute (most of a
warm compile).  A plan maps the graph's structural signature (cache/keys.py structural_signature) to the object
key, the library's symbol prefix (ir/modules.py) and what the Python side needs to call the entry (argument
specs, messages, fallback positions, slot counts), stored as JSON in a ``.gjp`` entry of the object cache
directory.

The plan key (cache/keys.py plan_key, or alias_key for the same plan under the rewrite cache's key) hashes the
pickled signature with everything else that shapes the generated code: graphjit's sources (its lowerings
included), the sources of ops defined outside graphjit, host target, vector library, BLAS source and versions.
Anything unpicklable in the signature means no plan (the ordinary IR-hash path still works).  A plan whose
object is gone, or that does not parse, is ignored and rewritten.
"""

from __future__ import annotations

import json
from typing import Any

from graphjit.link.llvm.cache.objects import PLAN_SUFFIX
from graphjit.link.llvm.cpython.argspec import ArgSpec


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
