"""llvmlite.ir, imported on the first attribute access: the modules the object loader shares with IR building
(jit/compiler.py's helpers, the symbol providers) name ``ir`` from here, so a warm process, which builds no IR,
never imports llvmlite.ir (~3 ms of its start; tests/link/llvm/cache/test_plan_alias.py checks it)."""

from __future__ import annotations

import importlib
import types
from typing import Any

from graphjit.graph import forksafe

_LOCK = forksafe.IMPORTS      # an import: the lock of the library's lazy imports


class _LazyModule(types.ModuleType):
    """Stands for a module; the first missing attribute imports it and copies its namespace in, so that later
    lookups are plain attribute reads (IR building looks ``ir.<name>`` up very often)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        with _LOCK:
            real = importlib.import_module(self.__dict__["_target"])
            for key, value in real.__dict__.items():
                if not key.startswith("__"):
                    self.__dict__.setdefault(key, value)
        return getattr(real, name)


ir: Any = _LazyModule("llvmlite.ir (lazy)")
ir._target = "llvmlite.ir"
