"""The Python object of a compiled wrapper: a real builtin (PyCFunction_NewEx) whose ``__self__`` keeps the library
alive.  The load side of the LLVM linker (a warm process) makes one per function without llvmlite; the wrapper's
IR is built by cpython/wrapper.py, which documents its calling convention and slow path.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from typing import Any, Callable

from graphjit.link.llvm.ir.errors import describe

METH_FASTCALL = 0x80
METH_KEYWORDS = 0x02


class _PyMethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_new_cfunction = ctypes.pythonapi.PyCFunction_NewEx
_new_cfunction.restype = ctypes.py_object
_new_cfunction.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]


class NativeHandle:
    """The ``__self__`` of a compiled builtin: keeps its PyMethodDef, library and anything else alive.

    ``_fallback`` (None or a callable) is what the wrapper calls with the original arguments when its fast path
    does not take them (it looks up FALLBACK_ATTRIBUTE on its ``self``: this handle, or a Function).
    """

    __slots__ = ("_fallback", "method_def", "library", "keepalive", "name", "word_error")

    def __init__(self, method_def: _PyMethodDef, library: Any, keepalive: Any, name: str,
                 fallback: Callable[..., Any] | None = None,
                 word_error: Callable[..., BaseException] | None = None) -> None:
        self._fallback = fallback
        self.method_def, self.library, self.keepalive, self.name = method_def, library, keepalive, name
        self.word_error = word_error     # (code, msg, node, a, b, c) -> exception (ir/errors.py)

    def __repr__(self) -> str:
        return f"<graphjit native {self.name}>"


def make_python_callable(library: Any, wrapper_name: str = "pywrap", keepalive: Any = None,
                         name: str | None = None, doc: str | None = None,
                         fallback: Callable[..., Any] | None = None,
                         word_error: Callable[..., BaseException] | None = None,
                         messages: Sequence[str] = ()) -> Callable[..., Any]:
    """A real builtin (PyCFunction_NewEx, METH_FASTCALL|METH_KEYWORDS) for the wrapper of a compiled library.

    Arguments its fast path does not take go to ``fallback(*args, **kwargs)`` if given, else raise SlowPath.
    Errors of the entry are worded by word_error, else by the message templates alone (ir/errors.py).
    """
    addr = library.get_address(wrapper_name)
    label = name or wrapper_name
    md = _PyMethodDef(label.encode(), addr, METH_FASTCALL | METH_KEYWORDS,
                      (doc or "graphjit compiled function").encode())
    if word_error is None:
        word_error = functools.partial(describe, list(messages), None, None)
    handle = NativeHandle(md, library, keepalive, label, fallback, word_error)
    return _new_cfunction(ctypes.addressof(md), handle, None)
