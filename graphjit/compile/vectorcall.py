"""Calling a Function with no Python frame: point its vectorcall slot at the compiled IR wrapper (CPython).

A Function is a ``functools.partial`` whose ``func`` is its Python call path. CPython calls a partial through the
function pointer stored in the object (its vectorcall slot, honoured when the type has
``Py_TPFLAGS_HAVE_VECTORCALL``). Storing the address of the LLVM linker's wrapper there makes ``f(x, y)`` run
the wrapper directly: it receives the Function as ``self`` and, when its fast path does not take the
arguments, calls ``func`` (the partial's first field, which is also where the wrapper looks for a NativeHandle's
fallback) with them. The layout facts used here are checked on a probe object at import; where they do not
hold, ``supported()`` is False and Functions call through ``func`` as usual.

Python 3.11 does not let a Python subclass of partial inherit the vectorcall flag (3.12 does): the flag is set
on the subclass once, which is sound because the class never reassigns ``__call__``.
"""

from __future__ import annotations

import ctypes
import functools
import platform

_HAVE_VECTORCALL = 1 << 11
_TP_VECTORCALL_OFFSET = 56            # offsetof(PyTypeObject, tp_vectorcall_offset) on 64-bit CPython
_PARTIAL_FN_OFFSET = 16               # offsetof(partialobject, fn), right after PyObject_HEAD


def _vectorcall_offset(cls: type) -> int:
    return ctypes.c_ssize_t.from_address(id(cls) + _TP_VECTORCALL_OFFSET).value


def _flags_offset(cls: type) -> int | None:
    """Offset of tp_flags in the type object: the one word equal to cls.__flags__ in its usual range."""
    hits = [off for off in range(120, 240, 8) if ctypes.c_ulong.from_address(id(cls) + off).value == cls.__flags__]
    return hits[0] if len(hits) == 1 else None


def _probe() -> bool:
    if platform.python_implementation() != "CPython" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    target = len                       # a METH_O builtin: has a vectorcall of its own
    probe = functools.partial(target)
    offset = _vectorcall_offset(functools.partial)
    if not _PARTIAL_FN_OFFSET < offset <= functools.partial.__basicsize__ - 8:
        return False
    if ctypes.c_void_p.from_address(id(probe) + _PARTIAL_FN_OFFSET).value != id(target):
        return False
    return bool(ctypes.c_void_p.from_address(id(probe) + offset).value)


_SUPPORTED = _probe()


def supported() -> bool:
    """Can a partial's vectorcall slot be pointed at a compiled wrapper in this interpreter?"""
    return _SUPPORTED


def enable(cls: type) -> bool:
    """Give a Python subclass of functools.partial the vectorcall flag (inherited from 3.12 on); True if set."""
    if not _SUPPORTED or not issubclass(cls, functools.partial):
        return False
    if cls.__flags__ & _HAVE_VECTORCALL:
        return True
    offset = _flags_offset(cls)
    if offset is None or _vectorcall_offset(cls) != _vectorcall_offset(functools.partial):
        return False
    ctypes.c_ulong.from_address(id(cls) + offset).value = cls.__flags__ | _HAVE_VECTORCALL
    return bool(cls.__flags__ & _HAVE_VECTORCALL)


def install(obj: functools.partial, address: int) -> None:
    """Make calls of obj (a partial of an enabled class) go to the wrapper at address.

    The caller keeps the code at address alive as long as obj; calling partial.__setstate__ on obj afterwards
    resets the slot to CPython's own.
    """
    if not (type(obj).__flags__ & _HAVE_VECTORCALL) or not _SUPPORTED:
        raise RuntimeError("vectorcall is not enabled for " + type(obj).__name__)
    ctypes.c_void_p.from_address(id(obj) + _vectorcall_offset(type(obj))).value = address
