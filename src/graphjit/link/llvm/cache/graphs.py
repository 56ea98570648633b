"""The LLVM linker's store of rewritten graphs (compile/rewrite_cache.py asks the mode's linker for it).

Entries live in the object cache's directory as ``<key>.gjr``, authenticated like the objects (cache/guard.py);
keys (cache/keys.py rewritten_graph_key) cover graphjit's own sources and the graph's signature with names and
source lines.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from graphjit.graph.basic import Apply
from graphjit.graph.fg import FunctionGraph
from graphjit.link.llvm.cache.objects import GRAPH_SUFFIX, ObjectCache
from graphjit.link.llvm.cache import keys

Signature = Callable[..., Any]      # keys.graph_signature(fgraph, order, named=...)


class RewrittenGraphs:
    """A link.basic.GraphStore over the object cache: keys, and blobs stored beside the objects."""

    def __init__(self, cache: ObjectCache, signature: Signature) -> None:
        self._cache = cache
        self._signature = signature

    def key(self, fgraph: FunctionGraph, state: Any) -> str | None:
        """sha256 of state, graphjit's sources and fgraph's named signature; None if they do not pickle."""
        order: Sequence[Apply] = fgraph.toposort()
        return keys.rewritten_graph_key(state, self._signature(fgraph, order, named=True))

    def source_digest(self, module: str) -> str:
        """The digest of a module's source (rewrites defined outside graphjit: users edit them)."""
        return keys.source_digest(module)

    def load(self, key: str) -> bytes | None:
        """The authenticated blob stored under key (a corrupt entry is removed), or None."""
        return self._cache.load(key, remove_corrupt=True, suffix=GRAPH_SUFFIX)

    def store(self, key: str, blob: bytes) -> None:
        """Write blob under key (nothing when the cache is disabled)."""
        if self._cache.enabled:
            self._cache.store(key, blob, suffix=GRAPH_SUFFIX)

    def discard(self, key: str) -> None:
        """Remove the entry under key."""
        self._cache.discard(key, GRAPH_SUFFIX)
