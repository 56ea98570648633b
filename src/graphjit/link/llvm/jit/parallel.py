"""Optimising and emitting independent LLVM modules on several cores at once.

llvmlite 0.50 wraps every call into libllvmlite in one process-wide lock (``llvmlite.binding.ffi.lib``), so
two threads compiling through its public API take turns (measured on W9's N = 1000 kernels, two copies on two
threads: 3.30 s one after the other, 3.23 s "in parallel").  The two long calls, running a module pass manager
and emitting an object, are made here through the ctypes functions the lock wraps (``_cfn``), so they run side by
side (same measurement: 2.51 s on two busy cores); so is parsing each module's text.  LLVM allows this: each module lives in an LLVM context of its
own, and each thread gets its own target machine and pass builder (created under the lock, before the threads
start).  Process-wide LLVM options (cl::opt) are set by the caller around the whole batch.  Where the raw
functions are missing (another llvmlite), `available()` is False and the caller compiles one module at a time.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, Callable, Sequence, TypeVar

from graphjit.link.llvm.jit.binding import llvm
from graphjit.graph import forksafe

T = TypeVar("T")
_RUN = "LLVMPY_RunNewModulePassManager"
_EMIT = "LLVMPY_TargetMachineEmitToMemory"
_PARSE = "LLVMPY_ParseAssembly"


def _raw(name: str) -> Any:
    return getattr(getattr(llvm.ffi.lib, name, None), "_cfn", None)


def available() -> bool:
    """True if llvmlite exposes the unlocked pass-manager run and object emission."""
    try:
        return all(_raw(name) is not None for name in (_RUN, _EMIT, _PARSE))
    except (OSError, AttributeError):
        return False


def cores() -> int:
    """How many cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parse_assembly(text: str, context: Any) -> Any:
    """llvm.parse_assembly(text, context) without llvmlite's lock for the parse itself (context: this thread's)."""
    with llvm.ffi.OutputString() as err:
        mod = llvm.ModuleRef(_raw(_PARSE)(context, ctypes.c_char_p(text.encode()), err), context)
        if err:
            mod.close()
            raise RuntimeError(f"LLVM IR parsing error\n{err}")
    return mod


def run_passes(mpm: Any, mod: Any, pb: Any) -> None:
    """mpm.run(mod, pb) without llvmlite's lock (mod, pb and pb's target machine are this thread's)."""
    _raw(_RUN)(mpm, mod, pb)


def emit_object(tm: Any, mod: Any) -> bytes:
    """tm.emit_object(mod) without llvmlite's lock for the emission itself."""
    with llvm.ffi.OutputString() as err:
        buf = _raw(_EMIT)(tm, mod, 1, err)
        if not buf:
            raise RuntimeError(str(err))
    try:
        return ctypes.string_at(llvm.ffi.lib.LLVMPY_GetBufferStart(buf), llvm.ffi.lib.LLVMPY_GetBufferSize(buf))
    finally:
        llvm.ffi.lib.LLVMPY_DisposeMemoryBuffer(buf)


def run_all(jobs: Sequence[Callable[[], T]], workers: int = 2) -> list[T]:
    """The jobs run by `workers` threads (this one among them), each taking the next job not started; results
    in order; the first error re-raised once all have stopped."""
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []
    lock = forksafe.new_lock()
    pending = iter(range(len(jobs)))

    def work() -> None:
        while not errors:
            with lock:
                k = next(pending, None)
            if k is None:
                return
            try:
                results[k] = jobs[k]()
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                errors.append(exc)

    threads = [threading.Thread(target=work, name=f"graphjit-codegen-{k}")
               for k in range(1, max(1, min(workers, len(jobs))))]
    for t in threads:
        t.start()
    work()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
