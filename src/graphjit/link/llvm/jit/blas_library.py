"""numpy's own OpenBLAS behind graphjit's products, so they run what ``numpy.dot`` runs.

numpy's wheels bundle ``libscipy_openblas64_`` (ILP64: 64-bit integers, symbols ``scipy_dgemm_64_``...), already
loaded by ``import numpy``; scipy's wheels bundle an older LP64 build (``cython_blas``).  The lowerings call the
LP64 Fortran ABI (``int*`` lengths, see ``runtime.BLAS_SIGNATURES``) through ``ir/blas_shims.routine()``: with scipy's library
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

_LIB = re.compile(r"\S*libscipy_openblas64_\S*\.(so|dylib)\S*")


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
