"""The in-memory map from a graph's structural signature to its CompiledGraph (linker.compile_graph).

Weak: an entry lasts while something uses the compiled graph (a Function, a copy, a numba caller's type), so
the code of dropped graphs is freed (jit.NativeLibrary).  The ``RECENT`` graphs compiled or reused last are
also held strongly, so that a Function made, dropped and made again (in a loop, in a test) does not reload its
code every time; once their last Function is gone they keep no intermediate buffers (CompiledGraph.add_user).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

from graphjit.link.llvm.native_view import CompiledGraph
from graphjit.graph import forksafe

RECENT = 8
_WEAK: weakref.WeakValueDictionary[Any, CompiledGraph] = weakref.WeakValueDictionary()
_RECENT: OrderedDict[Any, CompiledGraph] = OrderedDict()
_LOCK = forksafe.new_lock()


def _keep(sig: Any, compiled: CompiledGraph) -> None:
    _RECENT[sig] = compiled
    _RECENT.move_to_end(sig)
    while len(_RECENT) > RECENT:
        _RECENT.popitem(last=False)


def lookup(sig: Any) -> CompiledGraph | None:
    """The CompiledGraph of a signature if it is still loaded, else None."""
    with _LOCK:
        hit = _WEAK.get(sig)
        if hit is not None:
            _keep(sig, hit)
    return hit


def remember(sig: Any, compiled: CompiledGraph) -> CompiledGraph:
    """Record compiled under sig; returns the one recorded (another thread's, if it got there first)."""
    with _LOCK:
        compiled = _WEAK.setdefault(sig, compiled)
        _keep(sig, compiled)
    return compiled


def size() -> int:
    """How many compiled graphs are loaded (held by a user or among the recent ones)."""
    return len(_WEAK)


def clear() -> None:
    """Forget every entry (what a new process sees); Functions keep their own code."""
    with _LOCK:
        _WEAK.clear()
        _RECENT.clear()

