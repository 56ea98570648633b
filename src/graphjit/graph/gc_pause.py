"""The cyclic garbage collector paused while a graph is compiled (FunctionMaker, the LLVM linker).

Building IR allocates tens of thousands of small llvmlite objects that all stay alive until the module is
printed. Each allocation burst can start a full collection that walks every object in the process, and how
often that happens depends on how many long-lived objects the process holds: after issue 19 made
``import graphjit`` light (no scipy, no llvmlite at import), the W3 training graph's IR build went from 37 ms
to 57 ms with the collector on and stayed at 37 ms with it off.  Reference counting still frees everything
that is not in a cycle.  The whole compile is paused (compile/maker.py), not only the IR: cloning and
rewriting a 10,000-node graph made full collections walk the user's graph again and again (W9).

Ending the pause: every object allocated during it is still in the youngest generation, so the first
allocation after ``gc.enable()`` would start one young collection walking all of them (W9 N = 1000: two such
collections, ~0.2 s, mostly the llvmlite IR objects, which are cyclic garbage by then).  Instead the pause
hands them to the oldest generation (``gc.freeze(); gc.unfreeze()``: two list splices, no walk), where the
next full collection examines them, as it would objects that had survived young collections.  Full
collections are triggered by survivors of young collections, which the handed-over objects are not counted
as, so only one pause's objects are handed over between two full collections (and at most
``HANDOVER_LIMIT``): any other pause ends as before (the young collection runs over its objects).
``function()`` is one pause (its rewrites and its linking nest in it), so that is one function's compile.  So at most
one compile's garbage waits for a full collection, however many functions are compiled, and no pause ever
forces a full collection.  (Handing over every pause's objects up to a million in all made a process compiling
small graphs in a loop hold ~100 MB of compile garbage, and the arenas it spread its survivors over: ~300 KB of
RSS per graph compiled and dropped, issue 37.)  The hand-over
is skipped as well when the user has frozen objects (``gc.freeze()`` before a fork): unfreezing them would
undo that.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from typing import Iterator

from graphjit.graph import forksafe

# the most objects one pause hands to the oldest generation (W9 N = 1000 hands over ~300,000 objects per
# compile, ~20 MB of them garbage; N = 3000 ~740,000, ~60 MB)
HANDOVER_LIMIT = 1_000_000

_lock = forksafe.new_lock()
_depth = 0
_reenable = False
_handed_over = 0
_full_collections = -1


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic collector off (nested and concurrent uses share one pause)."""
    global _depth, _reenable
    with _lock:
        if _depth == 0:
            _reenable = forksafe.gc_was_enabled()      # a fork in progress switches it off for itself only
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _reenable:
                _end_pause()


def _end_pause() -> None:
    """Turn the collector back on, without a young collection over what the pause allocated if the tally allows."""
    global _handed_over, _full_collections
    full = gc.get_stats()[-1]["collections"]
    if full != _full_collections:           # a full collection examined what was handed over before it
        _full_collections, _handed_over = full, 0
    young = gc.get_count()[0]
    if gc.get_freeze_count() == 0 and _handed_over == 0 and young <= HANDOVER_LIMIT:
        _handed_over += young
        gc.freeze()
        gc.unfreeze()
    gc.enable()


def _after_fork_in_child() -> None:
    """The child has only the forking thread: a pause another thread was in never ends there, so end it."""
    global _depth
    if _depth:
        _depth = 0
        if _reenable:
            gc.enable()


def handed_over() -> int:
    """Objects handed to the oldest generation by pauses since the last full collection (an upper bound)."""
    return _handed_over


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
