"""A process forked while another thread compiles, cold or from the disk cache, can compile and call
(graph/forksafe.py, link/llvm/jit/forking.py; issue 37)."""

import faulthandler
import os
import random
import signal
import sys
import threading
import time

import llvmlite.binding
import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.cache import in_memory
from graphjit.link.llvm.jit import forking

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
              # Python 3.12+ warns on any fork of a process with threads: forking so is the point here
              pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")]

CHILD_TIMEOUT = 60.0
WARM = 6                 # graphs compiled once, then loaded from the disk cache again and again
FORKS = 100              # per phase (the thread compiling cold, then warm)
X = np.linspace(0.0, 1.0, 5)


def _small(k: float):
    a = gt.dvector("a")
    return gj.function([a], gt.tanh(a) * (2.0 + k))


def _child(cold: bool) -> int:
    """In the forked child: call what the parent compiled, then compile (from the disk cache, or a graph
    nobody compiled before) and call; the exit status."""
    try:
        signal.alarm(int(CHILD_TIMEOUT) + 5)        # a hang must never outlive the test
        in_memory.clear()                           # the next compile loads from the disk cache
        k = os.getpid() + 0.25 if cold else os.getpid() % WARM
        f = _small(k)
        return 0 if np.allclose(f(X), np.tanh(X) * (2.0 + k)) else 3
    except BaseException:  # noqa: BLE001 - any failure is the exit status
        return 2


def _fork(cold: bool) -> int:
    pid = os.fork()
    if pid == 0:                      # the child: never return into pytest
        code = 1
        try:
            code = _child(cold)
        finally:
            sys.stdout.flush()
            os._exit(code)
    return pid


def _wait(pid: int) -> int | None:
    """The child's exit status, or None if it had to be killed after CHILD_TIMEOUT (it hung)."""
    deadline = time.monotonic() + CHILD_TIMEOUT
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.002)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def _forks_while(compile_one, forks: int, rng: random.Random) -> list:
    """Fork `forks` times at random points of a thread compiling in a loop; the children's exit statuses."""
    stop, compiled = threading.Event(), []

    def loop():
        k = 0
        while not stop.is_set():
            compile_one(k)
            compiled.append(k)
            k += 1

    worker = threading.Thread(target=loop, daemon=True)
    worker.start()
    statuses = []
    try:
        while not compiled:
            time.sleep(0.001)
        for n in range(forks):
            time.sleep(rng.uniform(0.0, 0.004))
            status = _wait(_fork(cold=n % 25 == 0))
            statuses.append(status)
            if status != 0:
                break
    finally:
        stop.set()
        worker.join(timeout=120)
    assert not worker.is_alive()
    assert len(compiled) > 1
    return statuses


@pytest.mark.soak
def test_children_forked_during_cold_and_warm_compiles_compile_and_call(cache_dir):
    rng = random.Random(37)
    for k in range(WARM):
        _small(k)(X)

    def cold(k):
        y = gt.dmatrix("y")
        gj.function([y], gt.tanh(y) * (k + 0.5) + gt.sum(y ** 2, axis=0))(np.ones((2, 3)))

    def warm(k):
        in_memory.clear()
        assert np.allclose(_small(k % WARM)(X), np.tanh(X) * (2.0 + k % WARM))

    faulthandler.dump_traceback_later(600, exit=True)      # a fork that deadlocks fails the run, never hangs it
    try:
        for phase in (cold, warm):
            statuses = _forks_while(phase, FORKS, rng)
            assert statuses == [0] * FORKS, f"{phase.__name__}: None: a child hung (killed after the timeout)"
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_the_dependencies_locks_join_the_fork_handler():
    assert forking.llvmlite_lock() is llvmlite.binding.ffi.lib._lock._lock
    held = forking.llvmlite_lock()
    assert held.acquire(blocking=False)
    held.release()
