"""LLVM's optimise+codegen step run in a compile worker process, so a long-running process keeps no LLVM memory.

llvmlite 0.50's new-pass-manager bindings leave ~66 KB behind per pipeline run (instrumentation callbacks that
nothing frees, docs/threads.md), which no graphjit code can reach.  So once a process has compiled
``START_AFTER`` libraries fresh (a script compiling a few graphs never starts one), the next compile starts a
worker: a new interpreter (posix_spawn, never a fork of this one) running jit/worker_main.py, which receives a
library's IR parts and returns its object code, the payload the disk cache stores and jit/elfload.py links.
Compiles go on here while it starts; then every fresh compile goes through it, under the compiler's lock (one
request at a time).  It is replaced when its resident memory has grown by ``RECYCLE_BYTES``.

Robustness: a worker that dies (crash, kill) is restarted and the request sent again, once; a second death
raises CompileWorkerError.  A request interrupted on this side (KeyboardInterrupt) kills the worker (the next
compile starts another).  A worker that cannot start means compiling here, for the rest of the process.  A
forked child closes its copy of the pipes and starts its own worker after START_AFTER fresh compiles of its
own.  The worker exits when its pipe closes (this process exiting, even killed).  ``config.compile_worker =
False``: every compile here.
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import signal
import struct
import sys
import time
from typing import Any

from graphjit.config import config
from graphjit.graph import forksafe

START_AFTER = 4                 # fresh compiles made in this process before a worker is started
RECYCLE_BYTES = 256 << 20       # the worker is replaced once its RSS grew this much past its first reply
START_TIMEOUT = 120.0           # seconds a restarted worker (after a death) may take to be ready
_FRAME = struct.Struct("<Q")
_ROOT = os.path.abspath(__file__)
for _ in range(5):                          # .../src/graphjit/link/llvm/jit/worker_client.py -> .../src
    _ROOT = os.path.dirname(_ROOT)
_BOOT = ("import sys; sys.path.insert(0, {root!r}); "
         "from graphjit.link.llvm.jit import worker_main; worker_main.serve()")


class CompileWorkerError(RuntimeError):
    """The compile worker process died twice on one library's compile."""


def write_frame(fd: int, obj: Any) -> None:
    """Send obj (pickled, length-prefixed) through fd."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_FRAME.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def read_frame(fd: int) -> Any:
    """The next object from fd; EOFError if the other side closed it."""
    (size,) = _FRAME.unpack(_read_exactly(fd, _FRAME.size))
    return pickle.loads(_read_exactly(fd, size))


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the compile worker closed its pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class _Worker:
    """One worker process: its pid and this side's ends of its two pipes."""

    def __init__(self) -> None:
        to_child, self.to_fd = os.pipe()
        self.from_fd, from_child = os.pipe()
        argv = [sys.executable, "-c", _BOOT.format(root=_ROOT)]
        try:
            self.pid = os.posix_spawn(sys.executable, argv, os.environ,
                                      file_actions=[(os.POSIX_SPAWN_DUP2, to_child, 0),
                                                    (os.POSIX_SPAWN_DUP2, from_child, 1)])
        except BaseException:
            os.close(self.to_fd)
            os.close(self.from_fd)
            raise
        finally:
            os.close(to_child)
            os.close(from_child)
        self.ready = False
        self.base_rss = 0

    def poll_ready(self, timeout: float) -> bool:
        """Whether its start-up message arrived (waiting at most timeout s); EOFError if it died starting."""
        if not self.ready and select.select([self.from_fd], [], [], timeout)[0]:
            read_frame(self.from_fd)
            self.ready = True
        return self.ready

    def request(self, message: Any) -> Any:
        """Send a request, return its reply (EOFError / BrokenPipeError if the worker is gone)."""
        write_frame(self.to_fd, message)
        return read_frame(self.from_fd)

    def close_fds(self) -> None:
        """Close this side's pipes (the worker sees EOF and exits)."""
        for fd in (self.to_fd, self.from_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def status(self, wait: float) -> str:
        """How the process ended (reaped), waiting at most wait s; killed if it did not end by then."""
        deadline = time.monotonic() + wait
        while True:
            try:
                pid, code = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return "reaped elsewhere"
            if pid:
                if os.WIFSIGNALED(code):
                    return f"killed by signal {os.WTERMSIG(code)}"
                return f"exit status {os.WEXITSTATUS(code)}"
            if time.monotonic() >= deadline:
                os.kill(self.pid, signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.002)


_LOCK = forksafe.new_rlock()
_STATE: dict[str, Any] = {"worker": None, "fresh": 0, "disabled": None, "started": 0, "built": 0}


def build(parts: list, opt_level: int, prefix: str, host: dict[str, Any], timings: dict[str, float]
          ) -> bytes | None:
    """The packed objects of a library built by the worker (timings filled in), or None: build it here.

    CompileWorkerError if the worker died twice on it; the build's own errors are raised as raised there.
    """
    with _LOCK:
        worker = _usable_worker()
        if worker is None:
            return None
        message = ("build", parts, opt_level, prefix, host)
        for attempt in (0, 1):
            try:
                reply = worker.request(message)
                break
            except (EOFError, BrokenPipeError) as exc:
                status = _drop(worker, wait=5.0)
                if attempt:
                    raise CompileWorkerError(
                        f"graphjit: the LLVM compile worker died ({status}) twice compiling library {prefix}; "
                        "config.compile_worker = False compiles in this process instead") from exc
                worker = _start(wait=True)
                if worker is None:
                    return None
            except BaseException:
                _drop(worker, wait=0.0)           # a reply half read: this worker cannot be trusted any more
                raise
        return _unpack(worker, reply, timings)


def _unpack(worker: _Worker, reply: tuple, timings: dict[str, float]) -> bytes:
    kind, value, worker_timings, rss = reply
    if not worker.base_rss:
        worker.base_rss = rss
    elif rss - worker.base_rss > RECYCLE_BYTES:
        _drop(worker, wait=0.0)                   # the next compile starts a fresh one
    if kind == "error":
        raise value
    _STATE["built"] += 1
    timings.update(worker_timings)
    return value


def _usable_worker() -> _Worker | None:
    """The ready worker; None while it starts, before START_AFTER fresh compiles, or if workers are off."""
    _STATE["fresh"] += 1
    if not config.compile_worker or _STATE["disabled"] is not None or not hasattr(os, "posix_spawn"):
        return None
    worker = _STATE["worker"]
    if worker is None:
        if _STATE["fresh"] <= START_AFTER:
            return None
        worker = _start(wait=False)
        if worker is None:
            return None
    try:
        return worker if worker.poll_ready(0.0) else None
    except (EOFError, OSError) as exc:
        _STATE["disabled"] = f"the compile worker did not start ({_drop(worker, wait=5.0)}): {exc}"
        return None


def _start(wait: bool) -> _Worker | None:
    """A new worker (waiting until it is ready if wait); None if none can start (then compiles stay here)."""
    try:
        worker = _Worker()
    except OSError as exc:
        _STATE["disabled"] = f"the compile worker could not be started: {exc}"
        return None
    _STATE["worker"] = worker
    _STATE["started"] += 1
    if wait:
        try:
            if not worker.poll_ready(START_TIMEOUT):
                raise EOFError("not ready in time")
        except (EOFError, OSError) as exc:
            _STATE["disabled"] = f"the compile worker did not start ({_drop(worker, wait=5.0)}): {exc}"
            return None
    return worker


def _drop(worker: _Worker, wait: float) -> str:
    """Stop using a worker: close its pipes (it exits) and reap it; how it ended."""
    if _STATE["worker"] is worker:
        _STATE["worker"] = None
    worker.close_fds()
    if wait <= 0:
        try:
            os.kill(worker.pid, signal.SIGKILL)
        except OSError:
            pass
    return worker.status(max(wait, 0.0) or 5.0)


def wait_until_ready(timeout: float) -> bool:
    """Whether a worker runs and is ready, waiting at most timeout s for one that is starting."""
    with _LOCK:
        worker = _STATE["worker"]
        try:
            return worker is not None and worker.poll_ready(timeout)
        except (EOFError, OSError):
            return False


def info() -> dict[str, Any]:
    """The worker's state, for compiler.info(): its pid (None if none runs), workers started, libraries it
    built, why it is off (None: it is not)."""
    worker = _STATE["worker"]
    return {"pid": worker.pid if worker is not None else None, "started": _STATE["started"],
            "built": _STATE["built"], "disabled": _STATE["disabled"]}


def stop() -> None:
    """Stop the worker if one runs (the next fresh compile past START_AFTER starts another)."""
    with _LOCK:
        worker = _STATE["worker"]
        if worker is not None:
            _drop(worker, wait=5.0)


def _forget_in_child() -> None:
    """After fork, in the child: the worker is the parent's; close the child's copy of its pipes.  The child
    starts its own after START_AFTER fresh compiles of its own (a short-lived child never does)."""
    worker = _STATE["worker"]
    _STATE["worker"], _STATE["fresh"], _STATE["started"], _STATE["built"] = None, 0, 0, 0
    if worker is not None:
        worker.close_fds()


atexit.register(stop)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
