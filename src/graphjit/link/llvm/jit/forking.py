"""The locks of graphjit's dependencies that the fork handler (graph/forksafe.py) takes too.

llvmlite serialises every call into LLVM with one global re-entrant lock (``llvmlite.binding.ffi.lib._lock``,
held for the duration of each C call): a child forked during an LLVM call would hang on its first one, and
LLVM's state could be half-updated.  numba's compiler holds its global compiler lock around a whole compile
(an ``as_op`` or a numba function calling a graphjit Function).  Both are taken around every fork, like
graphjit's own locks, once their library is loaded; before that there is nothing to take.
"""

from __future__ import annotations

import sys
from typing import Any

from graphjit.graph import forksafe


def _inner(holder: Any) -> Any:
    lock = getattr(holder, "_lock", None)
    return lock if hasattr(lock, "acquire") else None


def llvmlite_lock() -> Any:
    """llvmlite's global lock (None while llvmlite.binding is not loaded)."""
    ffi = sys.modules.get("llvmlite.binding.ffi")
    return _inner(getattr(getattr(ffi, "lib", None), "_lock", None)) if ffi is not None else None


def numba_lock() -> Any:
    """numba's global compiler lock (None while numba is not loaded)."""
    module = sys.modules.get("numba.core.compiler_lock")
    return _inner(getattr(module, "global_compiler_lock", None)) if module is not None else None


forksafe.register(llvmlite_lock)
forksafe.register(numba_lock)
