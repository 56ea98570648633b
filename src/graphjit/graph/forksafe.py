"""Every lock graphjit holds is made here and taken around ``fork()``, so a forked child can compile and call.

``fork()`` copies only the calling thread.  A lock another thread held at that moment stays held forever in the
child, and whatever it guarded may be half-updated.  So every lock of the library comes from ``new_lock`` or
``new_rlock`` (tests/link/test_fork_locks.py fails on a bare ``threading.Lock()`` anywhere else), and locks
graphjit takes inside its dependencies (llvmlite's global lock, numba's compiler lock) are named with
``register``.  ``os.register_at_fork`` hooks take them all before a fork and release them after it in parent and
child (the child's only thread is the one that took them): the fork waits for every compile, load, lazy import
and stateful call in progress to end, and the child starts with everything consistent and unlocked.

The forking thread takes them without any order: it blocks on one lock while holding none, then only tries the
others; if one is busy it lets go of all and blocks on that one.  So however other threads nest the locks, the
fork never deadlocks with them (it only waits), and a new lock needs no rank.  A lazy import is a lock too:
a thread forked in the middle of another thread's import leaves that module's import lock held in the child,
so graphjit's lazy imports go through ``import_module``, which holds one registered lock around them.
"""

from __future__ import annotations

import gc
import importlib
import itertools
import os
import sys
import threading
import types
import weakref
from typing import Any, Callable, List

# the registry's own guard: held only for a dict or list operation, never while taking another lock
_GUARD = threading.RLock()  # forksafe: the registry's guard (re-entrant: a finalizer may make a lock)
_LOCKS: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()   # creation number -> lock
_GETTERS: List[Callable[[], Any]] = []          # other libraries' locks (None: not loaded yet)
_ORDER = itertools.count()
_VERSION = [0]                                  # bumped by every registration
_HELD: List[Any] = []
_GC_WAS_ENABLED = [False]
_FORKING = [False]


def _track(lock: Any) -> Any:
    with _GUARD:
        _LOCKS[next(_ORDER)] = lock
        _VERSION[0] += 1
    return lock


def new_lock() -> threading.Lock:
    """A new lock, taken around every fork while it lives."""
    return _track(threading.Lock())  # forksafe: the factory


def new_rlock() -> threading.RLock:
    """A new re-entrant lock, taken around every fork while it lives."""
    return _track(threading.RLock())  # forksafe: the factory


def register(get_lock: Callable[[], Any]) -> None:
    """Take the lock get_lock() returns (None: nothing to take yet) around every fork: a dependency's lock."""
    with _GUARD:
        _GETTERS.append(get_lock)
        _VERSION[0] += 1


IMPORTS = new_rlock()           # held around the library's lazy imports (and registry.py's loads)


def import_module(name: str) -> types.ModuleType:
    """importlib.import_module(name), never cut in half by a fork (the library's lazy imports use this)."""
    module = sys.modules.get(name)
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        return module                   # loaded: no import, no lock
    with IMPORTS:
        return importlib.import_module(name)


def _snapshot() -> List[Any]:
    with _GUARD:
        locks = [lock for _, lock in sorted(_LOCKS.items(), key=lambda e: e[0])]
        getters = list(_GETTERS)
    for get_lock in getters:
        lock = get_lock()
        if lock is not None and all(lock is not known for known in locks):
            locks.append(lock)
    return locks


def _take_all(locks: List[Any]) -> None:
    """Hold every lock of locks: block on one while holding none, try the rest, back off on a busy one."""
    first = 0
    while True:
        locks[first].acquire()
        held = [locks[first]]
        busy = None
        for k, lock in enumerate(locks):
            if k != first:
                if not lock.acquire(blocking=False):
                    busy = k
                    break
                held.append(lock)
        if busy is None:
            _HELD[:] = held
            return
        for lock in reversed(held):
            lock.release()
        first = busy


def _release_all() -> None:
    for lock in reversed(_HELD):
        lock.release()
    _HELD.clear()


def _before() -> None:
    # a collection here could run a finalizer that takes a lock this thread already holds
    _GC_WAS_ENABLED[0] = gc.isenabled()
    _FORKING[0] = True
    gc.disable()
    while True:
        version = _VERSION[0]
        locks = _snapshot()
        if locks:
            _take_all(locks)
        _GUARD.acquire()
        if version == _VERSION[0]:       # no lock was made meanwhile: all are held
            return
        _GUARD.release()
        _release_all()


def _after() -> None:
    _release_all()
    _GUARD.release()
    _FORKING[0] = False
    if _GC_WAS_ENABLED[0]:
        gc.enable()


def gc_was_enabled() -> bool:
    """gc.isenabled(), but True while a fork in progress has switched the collector off only for itself."""
    return gc.isenabled() or (_FORKING[0] and _GC_WAS_ENABLED[0])


def held() -> int:
    """How many locks the fork handler holds now (0 outside a fork)."""
    return len(_HELD)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before, after_in_parent=_after, after_in_child=_after)
