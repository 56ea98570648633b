"""The compile worker process (jit/worker_client.py starts it): builds libraries' object code from their IR parts.

It reads requests from its stdin and writes replies to the descriptor its stdout was; its own stdout goes to
stderr, so that nothing LLVM or Python prints can corrupt a reply.  Each request carries the parent's host facts
(the same target, CPU and features as the parent's cache keys).  A build's exception is sent back (pickled) and
raised in the parent.  Ctrl-C in a terminal reaches the whole process group: the worker ignores SIGINT (the
parent decides), and exits when its stdin closes.
"""

from __future__ import annotations

import os
import pickle
import signal
from typing import Any

from graphjit.link.llvm.jit.compiler import NativeCompiler
from graphjit.link.llvm.jit.worker_client import read_frame, write_frame


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _sendable(exc: BaseException) -> BaseException:
    """exc if it pickles back into an exception, else a RuntimeError with its type and message."""
    try:
        back = pickle.loads(pickle.dumps(exc))
        if isinstance(back, BaseException):
            return exc
    except Exception:  # noqa: BLE001 - anything unpicklable is described instead
        pass
    return RuntimeError(f"{type(exc).__name__}: {exc}")


def _handle(compiler: NativeCompiler, request: tuple) -> tuple[str, Any, dict[str, float], int]:
    _, parts, opt_level, prefix, host = request
    compiler.adopt_host(host)
    timings: dict[str, float] = {}
    try:
        payload: Any = compiler.build_here(parts, opt_level, prefix, timings)
        kind = "ok"
    except Exception as exc:  # noqa: BLE001 - raised in the parent
        payload, kind = _sendable(exc), "error"
    return kind, payload, timings, _rss()


def serve() -> None:
    """Answer build requests until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.dup(1)
    os.dup2(2, 1)
    compiler = NativeCompiler()
    try:
        write_frame(replies, ("ready", os.getpid()))
        while True:
            write_frame(replies, _handle(compiler, read_frame(0)))
    except (EOFError, BrokenPipeError):     # the parent closed its pipes (exit, recycling, a fork's child)
        return
