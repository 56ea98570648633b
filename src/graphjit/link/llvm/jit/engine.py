"""MCJIT engines that hold one library each, so that its code is freed with the engine.

An MCJIT engine cannot unload an object, but disposing of the engine frees everything it loaded: code, data,
GOT, and RuntimeDyld's bookkeeping.  So every library gets an engine of its own (jit.NativeLibrary owns it).

Making one is cheap (~0.2 ms) because it never generates code: the empty module an engine must be created
with is taken out of it at once (left in, the first finalize_object would run the whole codegen pipeline on
it, ~1 ms), and only object files are added.  The engine's TargetMachine is therefore only a formality; it
gets a fresh generic one (the engine owns and deletes it: one TargetMachine reused by two engines segfaults).
llvmlite's memory manager (use_lmm) reserves one block per object for all its sections, GOT and stubs, which
the small code model's 32-bit PC-relative references need (jit._CODE_MODEL).
"""

from __future__ import annotations

import ctypes
from graphjit.link.llvm.jit.binding import llvm


def new_engine(target: llvm.Target, triple: str) -> llvm.ExecutionEngine:
    """An MCJIT engine with no module, ready for add_object_file."""
    tm = target.create_target_machine(reloc="pic", codemodel="small")
    backing = llvm.parse_assembly("")
    backing.triple = triple
    engine = llvm.create_mcjit_compiler(backing, tm, use_lmm=True)
    engine.remove_module(backing)
    return engine


def free_engine(engine: llvm.ExecutionEngine, drop_buffers: int) -> None:
    """Release a library's cached intermediate buffers (its ``drop_buffers``, if any) and free its engine.

    Runs as a finalizer, with the GIL held (the buffers are ndarrays), never while the code may still run:
    whatever calls it holds the library.
    """
    if drop_buffers:
        ctypes.PYFUNCTYPE(None)(drop_buffers)()
    engine.close()

