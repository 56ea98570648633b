"""llvmlite.binding, loaded on first use, and the process's table of the symbols compiled code calls.

Loading libllvmlite costs 25-35 ms; a warm process that finds its object in the disk cache links it with
jit/elfload.py and never needs it.  So modules use ``llvm`` from here (an attribute access imports
llvmlite.binding), and publish symbols with ``add_symbol``: the table here is the one source of truth, read by
the ELF loader and copied into LLVM's own table when (and if) llvmlite.binding is loaded.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from graphjit.graph import forksafe
from graphjit.link.llvm.jit import forking  # noqa: F401  (llvmlite's and numba's locks join the fork handler)


_TABLE: dict[str, int] = {}
_LIBRARIES: list[str] = []
_LOCK = forksafe.new_rlock()
_MODULE: Any = None
_PROCESS = ctypes.CDLL(None)
# dlsym on the process handle: indexing the CDLL makes a function pointer object per lookup, and those stay
# behind (a few per compiled library)
_DLSYM = _PROCESS.dlsym
_DLSYM.restype, _DLSYM.argtypes = ctypes.c_void_p, (ctypes.c_void_p, ctypes.c_char_p)


def _load() -> Any:
    """Import llvmlite.binding and give it every symbol and library published so far."""
    global _MODULE
    with _LOCK:
        if _MODULE is None:
            import llvmlite.binding as module
            for name in _LIBRARIES:
                module.load_library_permanently(name)
            for name, address in _TABLE.items():
                module.add_symbol(name, address)
            _MODULE = module
    return _MODULE


class _Lazy:
    """Stands for llvmlite.binding; the first attribute access imports it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_MODULE if _MODULE is not None else _load(), name)


llvm: Any = _Lazy()


def loaded() -> bool:
    """Whether llvmlite.binding was loaded through this module (or by anyone: then it is taken in)."""
    if _MODULE is None and "llvmlite.binding" in sys.modules:
        _load()
    return _MODULE is not None


def add_symbol(name: str, address: int) -> None:
    """Publish name at address for compiled code (here, and in LLVM's table if LLVM is loaded)."""
    with _LOCK:
        _TABLE[name] = address
        if loaded():                     # someone else may have loaded LLVM: it needs the symbol too
            _MODULE.add_symbol(name, address)


def address_of_symbol(name: str) -> int:
    """Address of a published symbol, else of the process's (its libraries loaded globally); 0 if none."""
    address = _TABLE.get(name)
    if address:
        return address
    address = _DLSYM(_PROCESS._handle, name.encode())
    if address:
        return address
    # published straight into LLVM by someone else (a user's lowering calling llvmlite.binding.add_symbol)
    return (_MODULE.address_of_symbol(name) or 0) if loaded() else 0


def load_library(name: str) -> None:
    """Load a shared library with its symbols visible to compiled code (RuntimeError if it does not load)."""
    with _LOCK:
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise RuntimeError(str(exc)) from exc
        _LIBRARIES.append(name)
        if loaded():
            _MODULE.load_library_permanently(name)
