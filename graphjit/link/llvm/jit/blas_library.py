"""numpy's own OpenBLAS behind graphjit's products, so they run what ``numpy.dot`` runs.

numpy's wheels bundle ``libscipy_openblas64_`` (ILP64: 64-bit integers, symbols ``scipy_dgemm_64_``...), already
loaded by ``import numpy``; scipy's wheels bundle an older LP64 build (``cython_blas``).  The lowerings call the
LP64 Fortran ABI (``int*`` lengths, see ``runtime.BLAS_SIGNATURES``) through ``routine()``: with scipy's library
that is the published ``gj_<name>`` itself; with numpy's it is a small internal shim in the graph's own module
that widens every ``int*`` argument into an ``i64`` slot and calls the ILP64 routine (published as
``gj_np_<name>``) with the other pointers unchanged.  No separate library is compiled or loaded.
``numpy_routines()`` returns None when numpy's build is not that library (an MKL or system BLAS, another
platform): the runtime then publishes scipy's.  ``GRAPHJIT_BLAS=scipy`` forces scipy's.
"""

from __future__ import annotations

import ctypes
import os
import re

from llvmlite import ir

# a cycle (context -> compiler -> runtime -> here): looked up at call time
from graphjit.link.llvm.ir import context as _context
from graphjit.link.llvm.ir.layouts import I8P, I64

_LIB = re.compile(r"\S*libscipy_openblas64_\S*\.(so|dylib)\S*")
_RETURNS = {"void": ir.VoidType(), "double": ir.DoubleType(), "float": ir.FloatType()}


def _loaded_library() -> str | None:
    """Path of numpy's bundled ILP64 OpenBLAS: beside numpy (a wheel), else as loaded in this process (Linux)."""
    import numpy
    root = os.path.dirname(numpy.__file__)
    for folder in (root + ".libs", os.path.join(root, ".dylibs")):
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if _LIB.fullmatch(os.path.join(folder, name)):
                    return os.path.join(folder, name)
    try:
        with open("/proc/self/maps") as maps:
            text = maps.read()
    except OSError:
        return None
    at = text.find("libscipy_openblas64_")         # a plain find: the regex over the whole map is slow
    if at < 0:
        return None
    found = _LIB.search(text[text.rfind("\n", 0, at) + 1:text.find("\n", at)])
    return found.group(0) if found else None


def _parse(signature: str) -> tuple[str, list[bool]]:
    """('void' | 'double' | 'float', which arguments are int*) from a runtime.BLAS_SIGNATURES entry."""
    ret, args = signature.split("(", 1)
    return ret.strip(), [a.strip().startswith("int*") for a in args.rstrip(")").split(",")]


def numpy_routines(names: list[str]) -> dict[str, int] | None:
    """name -> address of numpy's ILP64 routine for every name; None if unavailable (or GRAPHJIT_BLAS=scipy)."""
    if os.environ.get("GRAPHJIT_BLAS", "").lower() == "scipy":
        return None
    path = _loaded_library()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        return {name: ctypes.cast(getattr(lib, f"scipy_{name}_64_"), ctypes.c_void_p).value for name in names}
    except (OSError, AttributeError):
        return None


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
