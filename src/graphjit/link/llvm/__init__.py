"""The LLVM backend.  Importing it loads only the registry: a warm process (plan and object in the disk cache) loads
the linker, the caches and the object loader, no lowering.  The lowerings and Type layouts (registry.py) load on first use
(registry.load_builtins; builtin_table.py lists their modules), and the IR builders the linker calls
for a cold compile are attributes of this package that load when first read (``llvm.native_entry``...)."""

from __future__ import annotations

from typing import Any

from graphjit.link.llvm import registry as _registry
from graphjit.graph import forksafe

# attribute -> module: the linker's cold-compile and instrumentation side, loaded on first access
_LAZY = {
    "native_entry": "graphjit.link.llvm.driver.native_entry",
    "fallback": "graphjit.link.llvm.ir.fallback",
    "instrument": "graphjit.link.llvm.driver.callback_table",
    "fusion": "graphjit.link.llvm.loops.fusion",
}


# attribute -> module: IR-side modules of their own (no lowerings needed first), loaded on first access
_LAZY_PLAIN = {
    "layouts": "graphjit.link.llvm.ir.layouts",     # cpython/argspec.py's layout(): never when warm
    "context": "graphjit.link.llvm.ir.context",     # jit/ir_prep.py's finish_module: never when warm
}


def __getattr__(name: str) -> Any:
    """The module behind a lazy attribute (_LAZY: imported with the backend's lowerings; _LAZY_PLAIN: alone)."""
    module = _LAZY.get(name)
    if module is None:
        module = _LAZY_PLAIN.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    else:
        _registry.load_builtins()   # the IR builders import the lowerings' helpers: load those first, in order
    value = forksafe.import_module(module)
    globals()[name] = value
    return value
