"""The cyclic garbage collector paused while a graph is compiled (FunctionMaker, the LLVM linker).

Building IR allocates tens of thousands of small llvmlite objects that all stay alive until the module is
printed. Each allocation burst can start a full collection that walks every object in the process, and how
often that happens depends on how many long-lived objects the process holds: after issue 19 made
``import graphjit`` light (no scipy, no llvmlite at import), the W3 training graph's IR build went from 37 ms
to 57 ms with the collector on and stayed at 37 ms with it off.  Reference counting still frees everything
that is not in a cycle; the cycles left are collected once the collector runs again.  The whole compile is
paused (compile/maker.py), not only the IR: cloning and rewriting a 10,000-node graph made full collections
walk the user's graph again and again (W9).
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_depth = 0
_reenable = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic collector off (nested and concurrent uses share one pause)."""
    global _depth, _reenable
    with _lock:
        if _depth == 0:
            _reenable = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _reenable:
                gc.enable()
