"""graphjit: symbolic array graphs compiled into callables (Theano's design, LLVM backend)."""

from __future__ import annotations

from graphjit.compile.function import function
from graphjit.compile.io import In, Out
from graphjit.compile.mode import Mode, get_mode, register_mode
from graphjit.compile import DebugMode, MonitorMode, NanGuardMode
from graphjit.compile.sharedvalue import SharedVariable, shared, shared_constructor
from graphjit.config import change_flags, config
from graphjit.printing import debugprint, dprint, pp, pprint
from graphjit.builders import OpFromGraph
from graphjit.gradient import (Lop, Rop, grad, grad_clip, grad_scale, hessian, hessian_vector_product,
                               jacobian, disconnected_grad, verify_grad, zero_grad)
from graphjit.scan_module import foldl, foldr, map, reduce, scan, until  # noqa: A004  (Theano's names)
# the layers as attributes (gj.tensor, gj.scalar, ...): the imports above load all of them anyway
from graphjit import compile, gradient, graph, link, printing, scalar, scan_module, tensor  # noqa: F401

__version__ = "0.1.0"

__all__ = ["function", "In", "Out", "Mode", "get_mode", "register_mode", "DebugMode", "NanGuardMode", "MonitorMode",
           "shared",
           "SharedVariable", "shared_constructor", "config", "change_flags", "debugprint",
           "dprint", "pprint", "pp", "grad", "Lop", "Rop", "jacobian", "hessian", "hessian_vector_product",
           "verify_grad", "zero_grad", "disconnected_grad", "grad_clip", "grad_scale", "OpFromGraph", "scan", "until",
           "map", "reduce", "foldl", "foldr", "__version__"]

