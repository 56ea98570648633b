"""The LP64 BLAS routines the lowerings call, declared in a graph's module: scipy's published ``gj_<name>``, or an
internal shim over numpy's ILP64 ``gj_np_<name>`` that widens every ``int*`` argument (jit/blas_library.py finds
numpy's library and says which one the runtime publishes).  IR side only: a warm process never imports this.
"""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir import context as _context
from graphjit.link.llvm.ir.layouts import I8P, I64

_RETURNS = {"void": ir.VoidType(), "double": ir.DoubleType(), "float": ir.FloatType()}


def _parse(signature: str) -> tuple[str, list[bool]]:
    """('void' | 'double' | 'float', which arguments are int*) from a runtime.BLAS_SIGNATURES entry."""
    ret, args = signature.split("(", 1)
    return ret.strip(), [a.strip().startswith("int*") for a in args.rstrip(")").split(",")]


def routine(module: ir.Module, name: str, signature: str, source: str) -> ir.Function:
    """The LP64 routine `name` for this module: scipy's gj_<name>, or a shim over numpy's gj_np_<name>."""
    ret, ints = _parse(signature)
    fnty = ir.FunctionType(_RETURNS[ret], [I8P] * len(ints))
    own = f"gj_{name}" if source == "scipy" else f"{_context.GLUE_PREFIX}blas.{name}"
    existing = module.globals.get(own)
    if existing is not None:
        return existing
    fn = ir.Function(module, fnty, own)
    if source == "scipy":
        return fn
    fn.linkage = "internal"
    target = module.globals.get(f"gj_np_{name}") or ir.Function(module, fnty, f"gj_np_{name}")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args = []
    for arg, is_int in zip(fn.args, ints):
        if not is_int:
            args.append(arg)
            continue
        wide = b.alloca(I64)
        b.store(b.sext(b.load(b.bitcast(arg, ir.IntType(32).as_pointer())), I64), wide)
        args.append(b.bitcast(wide, I8P))
    result = b.call(target, args)
    b.ret_void() if ret == "void" else b.ret(result)
    return fn
