"""A process forked while another thread compiles can compile: no compiler lock is held across ``fork()``.

``fork()`` copies only the calling thread.  A lock another thread held at that moment stays held forever in the
child, and LLVM's own state may be half-updated.  llvmlite serialises every call into LLVM with one global
re-entrant lock (``llvmlite.binding.ffi.lib._lock``, held for the duration of each C call, released by none
in the child), so a child forked during a compile used to hang on its first LLVM call.

``os.register_at_fork`` hooks fix the class: before a fork the forking thread takes every registered lock,
lowest rank first (the order the compiler nests them: graphjit's own locks, then llvmlite's last), which also
waits for the LLVM call in progress to end, so LLVM's state is consistent; after the fork parent and child
release them (the child's only thread is the one that took them).  A lock held around a compile elsewhere
(e.g. in the numba layer) registers itself with ``register`` and a rank below ``RANK_COMPILER``.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, List, Tuple

RANK_COMPILER = 20          # NativeCompiler.lock: held around a whole compile
RANK_RUNTIME = 30           # symbol publication (jit/runtime.py, ir/fallback.py)
RANK_CREATE = 40            # creating the compiler
RANK_MAPS = 50              # the in-memory maps (cache/in_memory.py); a finalizer inside frees an engine
RANK_LLVM = 90              # llvmlite's global lock: innermost

_REGISTRY: List[Tuple[int, int, Callable[[], Any]]] = []     # (rank, order, getter of the lock or None)
_HELD: List[Any] = []
_GUARD = threading.Lock()


def register(get_lock: Callable[[], Any], rank: int) -> None:
    """Take the lock get_lock() returns (None: nothing to take yet) around every fork, at rank."""
    with _GUARD:
        _REGISTRY.append((rank, len(_REGISTRY), get_lock))
        _REGISTRY.sort(key=lambda e: e[:2])


def _llvmlite_lock() -> Any:
    ffi = sys.modules.get("llvmlite.binding.ffi")      # not loaded (a warm process linked alone): no lock
    if ffi is None:
        return None
    inner = getattr(getattr(getattr(ffi, "lib", None), "_lock", None), "_lock", None)
    return inner if hasattr(inner, "acquire") else None


def _before() -> None:
    _GUARD.acquire()
    held = []
    for _, _, get_lock in _REGISTRY:
        lock = get_lock()
        if lock is not None and all(lock is not h for h in held):
            lock.acquire()
            held.append(lock)
    _HELD[:] = held


def _after() -> None:
    for lock in reversed(_HELD):
        lock.release()
    _HELD.clear()
    _GUARD.release()


register(_llvmlite_lock, RANK_LLVM)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before, after_in_parent=_after, after_in_child=_after)
