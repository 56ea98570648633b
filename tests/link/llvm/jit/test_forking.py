"""A process forked while another thread compiles can compile (link/llvm/jit/forking.py)."""

import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.jit import forking

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

CHILD_TIMEOUT = 60.0


def _child() -> int:
    """In the forked child: compile a graph nobody compiled before, call it; the exit status."""
    try:
        x = gt.dvector("x")
        f = gj.function([x], gt.exp(x) * (os.getpid() + 0.25))     # distinct per child: a real compile
        a = np.linspace(0, 1, 5)
        return 0 if np.allclose(f(a), np.exp(a) * (os.getpid() + 0.25)) else 3
    except BaseException:  # noqa: BLE001 - any failure is the exit status
        return 2


def _wait(pid: int) -> int | None:
    """The child's exit status, or None if it had to be killed after CHILD_TIMEOUT (it hung)."""
    deadline = time.monotonic() + CHILD_TIMEOUT
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.soak
def test_a_child_forked_during_compiles_can_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHJIT_CACHE_DIR", str(tmp_path))     # fresh: every graph is a real compile
    stop, compiled = threading.Event(), []

    def compile_loop():
        k = 0
        while not stop.is_set():
            y = gt.dmatrix("y")
            gj.function([y], gt.tanh(y) * (k + 0.5) + gt.sum(y ** 2, axis=0))(np.ones((2, 3)))
            compiled.append(k)
            k += 1

    worker = threading.Thread(target=compile_loop, daemon=True)
    worker.start()
    statuses = []
    try:
        while not compiled:                   # the worker is past its first compile: LLVM is busy
            time.sleep(0.01)
        for _ in range(4):
            time.sleep(0.05)
            pid = os.fork()
            if pid == 0:                      # the child: never return into pytest
                code = 1
                try:
                    code = _child()
                finally:
                    sys.stdout.flush()
                    os._exit(code)
            statuses.append(_wait(pid))
    finally:
        stop.set()
        worker.join(timeout=120)
    assert statuses == [0, 0, 0, 0], "None: the child hung (killed after the timeout)"
    assert len(compiled) > 1


def test_the_locks_are_released_after_a_fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0 if not forking._HELD and forking._GUARD.acquire(blocking=False) else 1)
    assert _wait(pid) == 0
    assert not forking._HELD and forking._GUARD.acquire(blocking=False)
    forking._GUARD.release()
