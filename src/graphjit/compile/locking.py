"""Locks that make a Function call, with its updates, atomic with respect to other calls sharing its state.

Every container holding state between calls (a shared variable's, or an input given a value and an update)
gets one re-entrant lock, made on first use and numbered in creation order.  A Function with any such input
takes the locks of all of them, in that order (so two Functions holding several never deadlock), around
reading the state, running the compiled code (which may write an update in place with the GIL released) and
storing the updates.  A Function with no state takes none: its fast path stays lock-free.  See docs/threads.md.
"""

from __future__ import annotations

import threading
from typing import Any, Iterable, Tuple

from graphjit.graph.container import container_lock  # noqa: F401  (the per-container locks live beside Container)


def ordered_locks(containers: Iterable[Any]) -> Tuple[threading.RLock, ...]:
    """The locks of containers, each once, in the global acquisition order."""
    entries = {id(c): container_lock(c) for c in containers}
    return tuple(lock for _, lock in sorted(entries.values(), key=lambda e: e[0]))


class _Ordered:
    """A context manager taking several locks in order and releasing them last taken first."""

    __slots__ = ("locks",)

    def __init__(self, locks: Tuple[threading.RLock, ...]) -> None:
        self.locks = locks

    def __enter__(self) -> None:
        taken = []
        try:
            for lock in self.locks:
                lock.acquire()
                taken.append(lock)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise

    def __exit__(self, *exc: Any) -> None:
        for lock in reversed(self.locks):
            lock.release()


def guard(locks: Tuple[threading.RLock, ...]) -> Any:
    """A context manager holding locks (None if there are none; a single lock is its own, the cheapest)."""
    if not locks:
        return None
    return locks[0] if len(locks) == 1 else _Ordered(locks)
