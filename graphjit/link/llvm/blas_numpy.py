"""numpy's own OpenBLAS behind graphjit's BLAS symbols (``gj_dgemm``...), so products run what ``numpy.dot`` runs.

numpy's wheels bundle ``libscipy_openblas64_`` (ILP64: 64-bit integers, symbols ``scipy_dgemm_64_``...), already
loaded by ``import numpy``; scipy's wheels bundle an older LP64 build (``cython_blas``).  The lowerings call the
LP64 Fortran ABI (``int*`` lengths, see ``runtime.BLAS_SIGNATURES``), so each routine gets a shim compiled once:
it widens every ``int*`` argument into an ``i64`` slot and calls numpy's routine with the other pointers
unchanged.  ``numpy_blas()`` returns None when numpy's build is not that library (an MKL or system BLAS, another
platform): the caller then keeps scipy's.  ``GRAPHJIT_BLAS=scipy`` forces scipy's.
"""

from __future__ import annotations

import ctypes
import os
import re
import llvmlite.binding as llvm
from llvmlite import ir

from .layouts import I8P, I64

_LIB = re.compile(r"\S*libscipy_openblas64_\S*\.(so|dylib)\S*")


def _loaded_library() -> str | None:
    """Path of numpy's bundled ILP64 OpenBLAS as loaded in this process (Linux), else found beside numpy."""
    import numpy
    try:
        with open("/proc/self/maps") as maps:
            text = maps.read()
        at = text.find("libscipy_openblas64_")         # a plain find: the regex over the whole map is slow
        if at >= 0:
            line = text[text.rfind("\n", 0, at) + 1:text.find("\n", at)]
            found = _LIB.search(line)
            if found:
                return found.group(0)
    except OSError:
        pass
    root = os.path.dirname(numpy.__file__)
    for folder in (root + ".libs", os.path.join(root, ".dylibs")):
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if _LIB.fullmatch(os.path.join(folder, name)):
                    return os.path.join(folder, name)
    return None


def _parse(signature: str) -> tuple[str, list[bool]]:
    """('void' | 'double' | 'float', which arguments are int*) from a runtime.BLAS_SIGNATURES entry."""
    ret, args = signature.split("(", 1)
    return ret.strip(), [a.strip().startswith("int*") for a in args.rstrip(")").split(",")]


def _shim_module(signatures: dict[str, str]) -> ir.Module:
    """GJMOD_shim_<name>(pointers...) -> gj_np_<name>(same pointers, int* widened to i64*)."""
    module = ir.Module(name="graphjit_numpy_blas")
    rets = {"void": ir.VoidType(), "double": ir.DoubleType(), "float": ir.FloatType()}
    for name, sig in sorted(signatures.items()):
        ret, ints = _parse(sig)
        fnty = ir.FunctionType(rets[ret], [I8P] * len(ints))
        target = ir.Function(module, fnty, f"gj_np_{name}")
        shim = ir.Function(module, fnty, f"GJMOD_shim_{name}")
        b = ir.IRBuilder(shim.append_basic_block("entry"))
        args = []
        for arg, is_int in zip(shim.args, ints):
            if not is_int:
                args.append(arg)
                continue
            wide = b.alloca(I64)
            b.store(b.sext(b.load(b.bitcast(arg, ir.IntType(32).as_pointer())), I64), wide)
            args.append(b.bitcast(wide, I8P))
        result = b.call(target, args)
        b.ret_void() if ret == "void" else b.ret(result)
    return module


def numpy_blas(signatures: dict[str, str]) -> dict[str, int] | None:
    """name -> address of an LP64 shim over numpy's OpenBLAS for every signature; None if unavailable."""
    if os.environ.get("GRAPHJIT_BLAS", "").lower() == "scipy":
        return None
    path = _loaded_library()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        targets = {name: ctypes.cast(getattr(lib, f"scipy_{name}_64_"), ctypes.c_void_p).value
                   for name in signatures}
    except (OSError, AttributeError):
        return None
    for name, addr in targets.items():
        llvm.add_symbol(f"gj_np_{name}", addr)
    compiled = _compile_shims(signatures)
    return {name: compiled.get_address(f"shim_{name}") for name in signatures}


def _compile_shims(signatures: dict[str, str]) -> object:
    """The shims' library: by a stored map from the signatures to the object (no IR built), else compiled."""
    from .jit import get_compiler
    from .plan_cache import load_json, plan_key, store_json
    compiler = get_compiler()
    cache = compiler.cache
    key = plan_key(("numpy-blas-shims", tuple(sorted(signatures.items()))), compiler) if cache else None
    known = load_json(cache, key) if key else None
    lib = compiler.load(known["object"]) if known and isinstance(known.get("object"), str) else None
    if lib is None:
        lib = compiler.compile(_shim_module(signatures))
        if key:
            store_json(cache, key, {"object": lib.cache_key})
    return lib
