"""Reading PyCapsules: the C pointers Cython modules (scipy's cython_blas/cython_lapack/cython_special) and numpy
export in ``__pyx_capi__`` / ``_ARRAY_API``."""

from __future__ import annotations

import ctypes
from typing import Any, Optional

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


def capsule_name(capsule: Any) -> Optional[str]:
    """The capsule's name (for a Cython function: its C signature), or None."""
    name = _get_name(capsule)
    return None if name is None else name.decode()


def capsule_address(capsule: Any, name: Optional[str] = "") -> int:
    """The pointer the capsule holds; name: the name it must carry ("" = its own, None = unnamed)."""
    if name == "":
        raw = _get_name(capsule)
    else:
        raw = None if name is None else name.encode()
    return _get_pointer(capsule, raw)
