"""graph/gc_pause.py: the collector is off inside, restored after, nested and threaded uses share one pause."""

import gc
import threading

from graphjit.graph import gc_pause
from graphjit.graph.gc_pause import gc_paused


def test_paused_inside_and_restored_after():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()            # the inner exit does not end the outer pause
    assert gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_restored_after_an_exception():
    try:
        with gc_paused():
            raise KeyError("x")
    except KeyError:
        pass
    assert gc.isenabled()


def test_overlapping_threads_share_one_pause():
    inside, leave = threading.Event(), threading.Event()

    def other():
        with gc_paused():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with gc_paused():
        pass
    assert not gc.isenabled()                # the other thread is still compiling
    leave.set()
    t.join()
    assert gc.isenabled()


def _cycles(n):
    out = []
    for _ in range(n):
        a = []
        a.append(a)
        out.append(a)
    return out


def test_pause_hands_its_objects_to_the_oldest_generation(monkeypatch):
    """No young collection walks what the pause allocated; its cyclic garbage waits for a full collection."""
    import weakref
    monkeypatch.setattr(gc_pause, "_handed_over", 0)
    gc.collect()

    class Node:
        pass

    with gc_paused():
        keep = _cycles(5000)
        garbage = Node()
        garbage.self = garbage
        probe = weakref.ref(garbage)
        del garbage
    assert gc.get_count()[0] < 100                   # nothing left in the youngest generation
    assert gc_pause.handed_over() >= 5000
    gc.collect(1)
    assert probe() is not None                       # in the oldest generation now: young collections skip it
    gc.collect()
    assert probe() is None                           # a full collection frees it
    assert len(keep) == 5000


def test_past_the_limit_the_pause_ends_with_the_young_collection(monkeypatch):
    """Over HANDOVER_LIMIT the pause's objects stay young (a young collection frees its garbage), no full collection
    is forced; a full collection restarts the tally."""
    import weakref
    monkeypatch.setattr(gc_pause, "HANDOVER_LIMIT", 3000)
    monkeypatch.setattr(gc_pause, "_handed_over", 0)

    class Node:
        pass

    full = gc.get_stats()[-1]["collections"]
    with gc_paused():
        keep = _cycles(2000)
    tally = gc_pause.handed_over()
    assert tally >= 2000
    with gc_paused():
        keep += _cycles(2000)
        garbage = Node()
        garbage.self = garbage
        probe = weakref.ref(garbage)
        del garbage
    assert gc_pause.handed_over() == tally              # not handed over
    assert gc.get_stats()[-1]["collections"] == full      # and no full collection forced
    gc.collect(0)
    assert probe() is None                              # still young: a young collection frees it
    gc.collect()
    with gc_paused():
        keep += _cycles(2000)
    assert 2000 <= gc_pause.handed_over() < tally + 2000    # the full collection restarted the tally
    assert gc.isenabled() and len(keep) == 6000


def test_objects_the_user_froze_stay_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            keep = _cycles(100)
        assert gc.get_freeze_count() == frozen
        assert gc.isenabled() and len(keep) == 100
    finally:
        gc.unfreeze()


def _failing_rewriter(fgraph):
    assert not gc.isenabled()
    raise RuntimeError("rewrite failed")


def test_function_restores_the_collector_when_compiling_fails():
    import pytest
    import graphjit as gj
    import graphjit.tensor as gt
    x = gt.dvector("x")
    for state in (True, False):
        (gc.enable if state else gc.disable)()
        try:
            with pytest.raises(ValueError, match="on_unused_input"):
                gj.function([x], x * 2, on_unused_input="nope")
            for linker in ("py", "llvm"):           # raised inside the pause, while rewriting
                with pytest.raises(RuntimeError, match="rewrite failed"):
                    gj.function([x], x * 2, mode=gj.Mode(linker=linker, rewriter=_failing_rewriter))
            assert gc.isenabled() is state
        finally:
            gc.enable()
