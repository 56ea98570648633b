"""The compile worker process (jit/worker_client.py): fresh compiles go through it, it survives being killed,
a forked child gets its own, config.compile_worker = False keeps every compile here."""

import os
import signal

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.config import config
from graphjit.link.llvm.jit import worker_client
from graphjit.link.llvm.jit.compiler import get_compiler

_COUNT = iter(range(10 ** 6))


def fresh_graph_works() -> None:
    """Compile a graph no process compiled before (a constant of its own) and check its result."""
    c = next(_COUNT) + os.getpid() * 1e-3 + 0.25
    x = gt.dvector("x")
    np.testing.assert_array_equal(gj.function([x], x * 2.0 + c)(np.arange(3.0)), np.arange(3.0) * 2.0 + c)


@pytest.fixture
def worker(cache_dir, monkeypatch):
    """A ready worker: fresh compiles from the first on go through it."""
    monkeypatch.setattr(worker_client, "START_AFTER", 0)
    fresh_graph_works()
    assert worker_client.wait_until_ready(120.0)
    return worker_client.info()["pid"]


def _built() -> int:
    return worker_client.info()["built"]


def test_fresh_compiles_go_through_the_worker(worker):
    built = _built()
    fresh_graph_works()
    assert _built() == built + 1 and worker_client.info()["pid"] == worker


def test_compile_worker_false_compiles_in_this_process(worker):
    built = _built()
    with config.change_flags(compile_worker=False):
        fresh_graph_works()
    assert _built() == built


def test_a_killed_worker_is_restarted_and_the_compile_goes_on(worker):
    started = worker_client.info()["started"]
    os.kill(worker, signal.SIGKILL)
    fresh_graph_works()
    info = worker_client.info()
    assert info["started"] == started + 1 and info["pid"] not in (None, worker)


def test_a_worker_dying_on_every_attempt_is_a_clear_error(worker, monkeypatch):
    real = worker_client._Worker.request

    def die_first(self, message):
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return real(self, message)

    monkeypatch.setattr(worker_client._Worker, "request", die_first)
    with pytest.raises(worker_client.CompileWorkerError, match="died .*twice"):
        fresh_graph_works()
    monkeypatch.undo()
    fresh_graph_works()                                      # the next compile starts a fresh worker


def test_a_worker_grown_past_the_limit_is_replaced(worker, monkeypatch):
    monkeypatch.setattr(worker_client, "RECYCLE_BYTES", -1)     # any reply after the first is "grown"
    started = worker_client.info()["started"]
    for _ in range(2):                                       # its second reply at the latest: retired after it
        fresh_graph_works()
        if worker_client.info()["pid"] is None:
            break
    assert worker_client.info()["pid"] is None and worker_client.info()["started"] == started
    fresh_graph_works()                                      # here, while a new one starts
    assert worker_client.wait_until_ready(120.0)
    assert worker_client.info()["started"] == started + 1 and worker_client.info()["pid"] != worker


def test_a_build_error_in_the_worker_is_raised_here(worker):
    with pytest.raises(RuntimeError, match="parsing error|expected"):
        worker_client.build([("this is not IR", False)], 3, "gj_00000000000000000000_", get_compiler()._host(), {})


def test_a_forked_child_compiles_without_the_parent_s_worker(worker):
    pid = os.fork()
    if pid == 0:                                          # the child: its own worker or this process
        code = 1
        try:
            fresh_graph_works()
            code = 0 if worker_client.info()["pid"] != worker else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    built = _built()
    fresh_graph_works()                                   # the parent's worker is untouched
    assert _built() == built + 1 and worker_client.info()["pid"] == worker
