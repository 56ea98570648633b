"""The fork handler (graph/forksafe.py): a fork waits for the library's locks, takes them without deadlocking
whatever order other threads nest them in, and leaves them free in parent and child."""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from graphjit.graph import forksafe, gc_pause

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
              # Python 3.12+ warns on any fork of a process with threads: forking so is the point here
              pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")]


def _child_status(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_the_locks_are_free_after_a_fork_in_parent_and_child():
    lock, rlock = forksafe.new_lock(), forksafe.new_rlock()
    pid = os.fork()
    if pid == 0:
        os._exit(0 if forksafe.held() == 0 and lock.acquire(blocking=False) and rlock.acquire(blocking=False)
                 and forksafe._GUARD.acquire(blocking=False) else 1)
    assert _child_status(pid) == 0
    assert forksafe.held() == 0 and lock.acquire(blocking=False) and forksafe._GUARD.acquire(blocking=False)
    forksafe._GUARD.release()
    lock.release()


def test_a_fork_waits_for_a_lock_another_thread_holds():
    lock, taken = forksafe.new_lock(), threading.Event()

    def hold():
        with lock:
            taken.set()
            time.sleep(0.2)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os._exit(0 if lock.acquire(blocking=False) else 1)     # held in the parent's other thread: free here
    waited = time.monotonic() - start
    holder.join()
    assert _child_status(pid) == 0
    assert waited > 0.1


def test_a_paused_collector_is_on_again_in_the_child():
    inside, leave = threading.Event(), threading.Event()

    def pause():
        with gc_pause.gc_paused():
            inside.set()
            leave.wait()

    was = gc.isenabled()
    gc.enable()
    try:
        pauser = threading.Thread(target=pause)
        pauser.start()
        inside.wait()
        assert not gc.isenabled()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if gc.isenabled() else 1)      # the pausing thread does not exist here
        assert not gc.isenabled()                       # still paused in the parent
        leave.set()
        pauser.join()
        assert _child_status(pid) == 0
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


# In a fresh interpreter with a timeout: a deadlock must fail the test, not hang the run.
_NESTING = textwrap.dedent("""
    import os, sys, threading, time
    from graphjit.graph import forksafe

    a, b = forksafe.new_lock(), forksafe.new_rlock()      # a made first
    started = threading.Event()

    def b_then_a():                 # the order opposite to the locks' creation
        with b:
            started.set()
            time.sleep(0.1)
            with a:
                pass

    def make_while_holding():       # a lock made while a fork waits for a lock this thread holds
        with a:
            started.set()
            time.sleep(0.1)
            forksafe.new_lock()

    for body in (b_then_a, make_while_holding):
        started.clear()
        t = threading.Thread(target=body)
        t.start()
        started.wait()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if a.acquire(blocking=False) and b.acquire(blocking=False) else 1)
        t.join()
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, body.__name__
    print("ok")
""")


def test_a_fork_never_deadlocks_with_how_threads_nest_or_make_locks():
    done = subprocess.run([sys.executable, "-c", _NESTING], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_fork_waits_for_a_lazy_import_in_progress(tmp_path, monkeypatch):
    (tmp_path / "gj_slow_import_37.py").write_text("import time\ntime.sleep(0.3)\nVALUE = 37\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importer = threading.Thread(target=forksafe.import_module, args=("gj_slow_import_37",))
    importer.start()
    time.sleep(0.1)                                     # the import is in progress
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)                                # a child stuck on the module's import lock dies
        os._exit(0 if forksafe.import_module("gj_slow_import_37").VALUE == 37 else 1)
    importer.join()
    assert _child_status(pid) == 0
    monkeypatch.delitem(sys.modules, "gj_slow_import_37")
