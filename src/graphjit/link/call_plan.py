"""The call plan: what a Function tells its compiled function-call wrapper, as one array of machine words.

A Function compiled by the LLVM linker is called through ``<prefix>fncall`` (link/llvm/cpython/fncall.py) as its
vectorcall.  The compiled code is shared by every Function of the same graph structure, so what differs
between Functions (which graph inputs are explicit, their defaults and names, the cells of the shared
variables, the locks to take, which outputs are updates and where they go, how the result is returned) is
data: this plan, whose address the Function stores in the word at ``PLAN_OFFSET`` of its own object
(compile/vectorcall.py).  Every ``PyObject*`` in it is borrowed: the Function keeps the objects alive
(``CallPlan.keep``).

Layout (int64 words; ``n_in`` graph inputs without the fallback table, ``n_out`` graph outputs):

- header: ``[N_EXPLICIT]`` explicit inputs, ``[N_USER]`` outputs returned, ``[UNPACK]`` 1 to return output 0
  alone, ``[N_LOCKS]`` locks, ``[EXTRA]`` the fallback table (or 0), ``[N_IN]`` and ``[N_OUT]`` (checked by
  the wrapper against its own counts);
- ``source(k)``: an explicit input's default (0: required) or an implicit input's storage cell (a list);
- ``name(k)``: an explicit input's interned name (0: none, or several inputs share it);
- ``scalar(k)``: 1 when a Python scalar may stand for this 0-d input (not strict; float32 needs downcasts);
- ``update(j)``: the storage cell output j is stored into (0: none);
- ``lock(i)``, ``lock(i) + 1``: the bound ``acquire`` and ``release`` of lock i, taken in order.

This module is light (ctypes only): ``import graphjit`` loads it.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any, Optional, Sequence

WORD = ctypes.sizeof(ctypes.c_void_p)
PLAN_OFFSET = object.__basicsize__ + 3 * WORD     # after the instance dict, weakrefs and the vectorcall slot
N_EXPLICIT, N_USER, UNPACK, N_LOCKS, EXTRA, N_IN, N_OUT = range(7)
HEADER = 8


def source(k: int) -> int:
    """Word of input k's default or storage cell."""
    return HEADER + k


def name(n_in: int, k: int) -> int:
    """Word of explicit input k's name."""
    return HEADER + n_in + k


def scalar(n_in: int, k: int) -> int:
    """Word saying whether a Python scalar may stand for input k."""
    return HEADER + 2 * n_in + k


def update(n_in: int, j: int) -> int:
    """Word of the storage cell output j updates."""
    return HEADER + 3 * n_in + j


def lock(n_in: int, n_out: int, i: int) -> int:
    """Word of lock i's bound acquire (release in the next word)."""
    return HEADER + 3 * n_in + n_out + 2 * i


@dataclass
class CallPlan:
    """A plan's words (``words``, a ctypes array; ``address``) and the objects it points to (``keep``)."""

    words: Any
    keep: tuple

    @property
    def address(self) -> int:
        """Where the words are (what the Function's plan word holds)."""
        return ctypes.addressof(self.words)


def make_plan(n_explicit: int, n_user: int, unpack: bool, sources: Sequence[Any], names: Sequence[Optional[str]],
              scalars: Sequence[bool], updates: Sequence[Any], locks: Sequence[Any], extra: Any,
              n_out: int) -> CallPlan:
    """A plan for a graph of len(sources) inputs and n_out outputs.

    sources[k]: an explicit input's default value (None: required) or an implicit input's cell; updates: one
    cell or None per output; locks: objects with ``acquire``/``release``, in the order to take them.
    """
    n_in = len(sources)
    words = (ctypes.c_int64 * lock(n_in, n_out, len(locks)))()
    keep: list = []

    def ref(obj: Any) -> int:
        if obj is None:
            return 0
        keep.append(obj)
        return id(obj)

    words[N_EXPLICIT], words[N_USER], words[UNPACK] = n_explicit, n_user, int(unpack)
    words[N_LOCKS], words[EXTRA], words[N_IN], words[N_OUT] = len(locks), ref(extra), n_in, n_out
    for k in range(n_in):
        words[source(k)] = ref(sources[k])
        words[name(n_in, k)] = ref(sys.intern(names[k]) if names[k] is not None else None)
        words[scalar(n_in, k)] = int(bool(scalars[k]))
    for j in range(n_out):
        words[update(n_in, j)] = ref(updates[j])
    for i, lk in enumerate(locks):
        words[lock(n_in, n_out, i)] = ref(lk.acquire)
        words[lock(n_in, n_out, i) + 1] = ref(lk.release)
    return CallPlan(words, tuple(keep))
