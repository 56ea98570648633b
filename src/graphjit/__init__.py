"""graphjit: symbolic array graphs compiled into callables (Theano's design, LLVM backend)."""

from __future__ import annotations

from typing import Any

from graphjit.compile.function import function
from graphjit.compile.io import In, Out
from graphjit.compile.mode import Mode, get_mode, register_mode
from graphjit.compile import DebugMode, MonitorMode, NanGuardMode
from graphjit.compile.function_dump import function_dump
from graphjit.compile.sharedvalue import SharedVariable, shared, shared_constructor
from graphjit.config import change_flags, config
from graphjit.graph.basic import clone_replace
from graphjit.link.fallback_warning import FallbackWarning
from graphjit.tensor.blas import dot     # Theano's theano.dot
from graphjit.gradient import (Lop, Rop, grad, grad_clip, grad_scale, hessian, hessian_vector_product,
                               jacobian, disconnected_grad, verify_grad, zero_grad)
# the layers as attributes (gj.tensor, gj.scalar, ...): the imports above load them anyway
from graphjit import compile, gradient, graph, link, scalar, tensor  # noqa: F401
from graphjit.graph import forksafe

__version__ = "0.1.0"

# public names whose modules load on first use (import graphjit stays light: scan ~6 ms, printing ~2 ms):
# name -> (module, attribute or None for the module itself)
_LAZY = {
    "scan": ("graphjit.scan_module", "scan"), "until": ("graphjit.scan_module", "until"),
    "map": ("graphjit.scan_module", "map"), "reduce": ("graphjit.scan_module", "reduce"),
    "foldl": ("graphjit.scan_module", "foldl"), "foldr": ("graphjit.scan_module", "foldr"),
    "scan_module": ("graphjit.scan_module", None),
    "debugprint": ("graphjit.printing", "debugprint"), "dprint": ("graphjit.printing", "dprint"),
    "pp": ("graphjit.printing", "pp"), "pprint": ("graphjit.printing", "pprint"),
    "printing": ("graphjit.printing", None),
    "OpFromGraph": ("graphjit.builders", "OpFromGraph"), "builders": ("graphjit.builders", None),
}


def __getattr__(name: str) -> Any:
    """A public name of _LAZY: its module is imported on first access (then the name is a plain attribute)."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    loaded = forksafe.import_module(module)
    value = loaded if attribute is None else getattr(loaded, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the lazy ones included."""
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["function", "In", "Out", "Mode", "get_mode", "register_mode", "DebugMode", "NanGuardMode", "MonitorMode",
           "shared", "function_dump",
           "SharedVariable", "shared_constructor", "config", "change_flags", "debugprint",
           "dprint", "pprint", "pp", "grad", "Lop", "Rop", "jacobian", "hessian", "hessian_vector_product",
           "verify_grad", "zero_grad", "disconnected_grad", "grad_clip", "grad_scale", "OpFromGraph", "scan", "until",
           "map", "reduce", "foldl", "foldr", "clone_replace", "FallbackWarning", "dot", "__version__"]

