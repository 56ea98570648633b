"""link/llvm/jit/gc_pause.py: the collector is off inside, restored after, nested and threaded uses share one pause."""

import gc
import threading

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
