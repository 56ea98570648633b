"""LAPACK (and the BLAS triangular solve) for the linear-algebra lowerings, from scipy's ``cython_lapack``.

scipy.linalg.cython_lapack / cython_blas export every routine as a function pointer in ``__pyx_capi__``
capsules (LP64 Fortran ABI: every argument a pointer, ``int*`` lengths, ``char*`` flags).  ``ensure_lapack()``
(imports scipy.linalg the first time, ~0.4 s) publishes each routine the lowerings use as ``gj_lapack_<name>``
with ``llvmlite.binding.add_symbol``; each name is also registered with ``symbols.provide`` so an object loaded
from the disk cache in a new process, which never runs a lowering, gets its pointers published before it is
linked.  ``routine(module, name)`` declares the routine in a module (``void(i8*, ...)``).
"""

from __future__ import annotations


from graphjit.link.llvm.jit.lazy_ir import ir    # llvmlite.ir on first use (never when warm)

from graphjit.link.llvm.jit import binding as _binding
from graphjit.link.llvm.jit.capsules import capsule_address
from graphjit.link.llvm.jit.symbols import provide
from graphjit.graph import forksafe

# name -> number of (pointer) arguments; "s"/"d" variants of each
_ARITY = {"potrf": 5, "trtri": 6, "lauum": 5, "getrf": 6, "getrs": 9, "getri": 7, "syevd": 11, "potrs": 8,
          "gesdd": 14, "geqrf": 8, "orgqr": 9, "gesv": 8, "gelsd": 14, "sygvd": 14, "geev": 14}
# the "c"/"z" (complex64/complex128) variants: the same routines, the drivers with a real workspace (rwork)
_COMPLEX_ARITY = {"potrf": 5, "getrf": 6, "getrs": 9, "getri": 7, "potrs": 8, "geqrf": 8, "ungqr": 9, "gesdd": 15,
                  "gelsd": 15, "geev": 14, "heevd": 13, "hegvd": 16, "gesv": 8}
_BLAS_ARITY = {"trsm": 11, "gemm": 13, "gemv": 11}
ROUTINES = {**{p + n: k for n, k in _ARITY.items() for p in "sd"},
            **{p + n: k for n, k in _COMPLEX_ARITY.items() for p in "cz"}}
BLAS_ROUTINES = {p + n: k for n, k in _BLAS_ARITY.items() for p in "sdcz"}
PREFIX = "gj_lapack_"

_LOCK = forksafe.new_lock()
_PUBLISHED: dict[str, int] = {}


def ensure_lapack() -> dict[str, int]:
    """Publish every routine as gj_lapack_<name> (once per process); name -> address."""
    if not _PUBLISHED:
        with _LOCK:
            if not _PUBLISHED:
                from scipy.linalg import cython_blas, cython_lapack   # heavy: only when a lowering needs it
                found = {}
                for module, names in ((cython_lapack, ROUTINES), (cython_blas, BLAS_ROUTINES)):
                    for name in names:
                        capsule = module.__pyx_capi__[name]
                        found[name] = capsule_address(capsule)
                for name, addr in found.items():
                    _binding.add_symbol(PREFIX + name, addr)
                _PUBLISHED.update(found)
    return _PUBLISHED


for _name in (*ROUTINES, *BLAS_ROUTINES):     # cache hits link objects without lowering: publish on demand
    provide(PREFIX + _name, ensure_lapack)


def routine(module: ir.Module, name: str) -> ir.Function:
    """The declaration of LAPACK/BLAS routine name ('dpotrf', 'strsm', ...) in module; publishes the symbols."""
    ensure_lapack()
    full = PREFIX + name
    existing = module.globals.get(full)
    if existing is not None:
        return existing
    arity = ROUTINES.get(name) or BLAS_ROUTINES[name]
    return ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()] * arity), full)
