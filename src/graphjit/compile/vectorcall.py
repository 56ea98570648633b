"""Calling a Function with no Python frame: a class whose instances own a vectorcall slot (CPython's C API).

CPython calls an object through a function pointer stored in the object itself (its vectorcall slot) when the
object's type has ``Py_TPFLAGS_HAVE_VECTORCALL`` and gives the slot's offset; a NULL slot falls back to the type's
``tp_call``. A class statement can declare neither, and Python 3.10/3.11 do not let a Python subclass inherit
them, so ``with_vectorcall_slot(cls)`` returns a new class: a subclass of ``cls`` made by the documented
``PyType_FromSpecWithBases`` (called through ``ctypes.pythonapi``; since 3.3) whose instances are ``cls``'s
(a ``__slots__ = ()`` class: just the object header) followed by three words of its own layout, named with the
``PyMemberDef`` names documented since 3.9: the instance dict (``__dictoffset__``), the weak reference list
(``__weaklistoffset__``) and the vectorcall slot (``__vectorcalloffset__``), then one word of graphjit's own:
the address of the Function's call plan, which the compiled function-call wrapper reads at ``PLAN_OFFSET``
(link/call_plan.py; ``set_call_plan``). ``__dict__`` is served by the
documented ``PyObject_GenericGetDict``/``PyObject_GenericSetDict``. The new class takes its garbage collection,
deallocation, ``tp_new``, ``tp_init`` and ``tp_call`` from ``cls`` by ordinary inheritance (a class statement's
own, which visit and clear the dict and weak references at the offsets the type declares), so no C function is
written here. ``set_vectorcall`` stores a function address into the slot through a member descriptor of that
layout (a ``Py_T_PYSSIZET`` PyMemberDef, set from Python as any member is): no object's memory is written by
address and nothing is probed; every offset follows from ``cls.__basicsize__`` and the size of a pointer.

The address stored is the LLVM linker's CPython wrapper (link/llvm/cpython/wrapper.py), whose signature
``(self, args, nargsf, kwnames)`` is exactly ``vectorcallfunc``, so there is no trampoline: ``f(x, y)`` runs the
wrapper straight from the call site with the Function as ``self``. Measured (timeit minima, a loaded 2-core VM):
the same wrapper called through this slot and through the previous design (a ``functools.partial`` subclass
whose type flags and slot were written by ctypes) costs the same, 55.7 vs 55.4 ns for W2's ``f(x, y)`` on
size-1 vectors in one Python 3.11 process (77.3 vs 77.5 ns on 3.13); a compiled ``Py_tp_call`` slot instead
costs 30-110 ns more per call (CPython builds an argument tuple, and the slot is per type, not per object), a
Python ``__call__`` 70 ns or more (a frame). A Function that cannot call the wrapper directly (state,
several outputs, another linker) leaves its slot NULL and is called through ``cls.__call__``.

A Python subclass of the new class is called through ``__call__`` (its type has no vectorcall flag: 3.10/3.11
never pass it on, 3.12+ not past an inherited ``__call__``), which is correct, only slower.
"""

from __future__ import annotations

import ctypes
import operator
import platform
from typing import Any, Dict, List

from graphjit.link.call_plan import PLAN_OFFSET

_HAVE_VECTORCALL = 1 << 11          # Py_TPFLAGS_HAVE_VECTORCALL: these constants are part of the stable ABI
_BASETYPE = 1 << 10                 # Py_TPFLAGS_BASETYPE
_DEFAULT = 1 << 18                  # Py_TPFLAGS_DEFAULT (Py_TPFLAGS_HAVE_VERSION_TAG)
_T_PYSSIZET = 19                    # Py_T_PYSSIZET (T_PYSSIZET before 3.12)
_READONLY = 1                       # Py_READONLY
_TP_MEMBERS, _TP_GETSET = 72, 73    # Py_tp_members, Py_tp_getset (typeslots.h)
_WORD = ctypes.sizeof(ctypes.c_void_p)


class _MemberDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("offset", ctypes.c_ssize_t),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


class _GetSetDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("get", ctypes.c_void_p), ("set", ctypes.c_void_p),
                ("doc", ctypes.c_char_p), ("closure", ctypes.c_void_p)]


class _Slot(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int), ("pfunc", ctypes.c_void_p)]


class _Spec(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("basicsize", ctypes.c_int), ("itemsize", ctypes.c_int),
                ("flags", ctypes.c_uint), ("slots", ctypes.POINTER(_Slot))]


_SLOT_MEMBER = "_gj_vectorcall"      # removed from the class once taken: only set_vectorcall writes the slot
_PLAN_MEMBER = "_gj_call_plan"       # the word after it: the address of the call plan the wrapper reads
_SLOTS: Dict[type, Any] = {}         # class made here -> the member descriptor of its vectorcall slot
_PLANS: Dict[type, Any] = {}         # class made here -> the member descriptor of its call-plan word
_KEEP: List[Any] = []                # the specs: some CPython versions keep pointers into them


def _supported() -> bool:
    return (platform.python_implementation() == "CPython"
            and ctypes.sizeof(ctypes.c_ssize_t) == _WORD
            and hasattr(ctypes, "pythonapi"))


_SUPPORTED = _supported()


def supported() -> bool:
    """Can instances of a class made by with_vectorcall_slot be called through their own slot here?"""
    return _SUPPORTED


def _c_function(name: str) -> int:
    return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value or 0


def _spec(cls: type) -> _Spec:
    """The PyType_Spec of cls's subclass with a dict, a weakref list and a vectorcall slot after cls's layout."""
    base = cls.__basicsize__
    dict_at, weak_at, call_at, plan_at = base, base + _WORD, base + 2 * _WORD, base + 3 * _WORD
    if plan_at != PLAN_OFFSET:
        raise TypeError(f"{cls.__qualname__}: the call plan would be at {plan_at}, the wrapper reads {PLAN_OFFSET}")
    members = (_MemberDef * 6)(
        _MemberDef(b"__dictoffset__", _T_PYSSIZET, dict_at, _READONLY, None),
        _MemberDef(b"__weaklistoffset__", _T_PYSSIZET, weak_at, _READONLY, None),
        _MemberDef(b"__vectorcalloffset__", _T_PYSSIZET, call_at, _READONLY, None),
        _MemberDef(_SLOT_MEMBER.encode(), _T_PYSSIZET, call_at, 0, None),
        _MemberDef(_PLAN_MEMBER.encode(), _T_PYSSIZET, plan_at, 0, None),
        _MemberDef(None, 0, 0, 0, None))
    getset = (_GetSetDef * 2)(
        _GetSetDef(b"__dict__", _c_function("PyObject_GenericGetDict"), _c_function("PyObject_GenericSetDict"),
                   None, None),
        _GetSetDef(None, None, None, None, None))
    slots = (_Slot * 3)(_Slot(_TP_MEMBERS, ctypes.addressof(members)), _Slot(_TP_GETSET, ctypes.addressof(getset)),
                        _Slot(0, None))
    name = f"{cls.__module__}.{cls.__qualname__}".encode()
    spec = _Spec(name, base + 4 * _WORD, 0, _DEFAULT | _BASETYPE | _HAVE_VECTORCALL, slots)
    _KEEP.append((spec, slots, members, getset, name))
    return spec


def with_vectorcall_slot(cls: type) -> type:
    """A subclass of cls (named like it) whose instances have a dict, weakrefs and a vectorcall slot.

    cls must declare ``__slots__ = ()`` (its instances are the bare object header) and define ``__call__``,
    which serves every instance whose slot is not set. Where this is not CPython, a plain subclass.
    """
    if cls.__basicsize__ != object.__basicsize__ or cls.__dictoffset__ or cls.__weakrefoffset__:
        raise TypeError(f"{cls.__qualname__} must declare __slots__ = () and derive from object")
    if not _SUPPORTED:
        names = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__}
        return type(cls.__name__, (cls,), names)
    from_spec = ctypes.pythonapi.PyType_FromSpecWithBases
    from_spec.restype = ctypes.py_object
    from_spec.argtypes = [ctypes.c_void_p, ctypes.py_object]
    new = from_spec(ctypes.addressof(_spec(cls)), (cls,))
    _SLOTS[new] = new.__dict__[_SLOT_MEMBER]
    _PLANS[new] = new.__dict__[_PLAN_MEMBER]
    delattr(new, _SLOT_MEMBER)
    delattr(new, _PLAN_MEMBER)
    new.__doc__ = cls.__doc__
    return new


def _slot_of(obj: object, table: Dict[type, Any] = _SLOTS) -> Any:
    for klass in type(obj).__mro__:
        if klass in table:
            return table[klass]
    raise TypeError(f"{type(obj).__name__} has no vectorcall slot (see with_vectorcall_slot)")


def set_vectorcall(obj: object, address: int) -> None:
    """Make calls of obj go to the ``vectorcallfunc`` at address (0: back to its class's ``__call__``).

    The caller keeps the code at address alive as long as obj.
    """
    address = operator.index(address)
    if address < 0:
        raise ValueError("a vectorcall address is not negative")
    _slot_of(obj).__set__(obj, address)


def vectorcall_of(obj: object) -> int:
    """The address in obj's vectorcall slot (0 when calls go through its class's ``__call__``)."""
    return int(_slot_of(obj).__get__(obj, type(obj)))


def set_call_plan(obj: object, address: int) -> None:
    """Store the address of obj's call plan (link/call_plan.py; 0: none) in the word the compiled
    function-call wrapper reads.  The caller keeps the plan's memory alive as long as obj."""
    address = operator.index(address)
    if address < 0:
        raise ValueError("a call-plan address is not negative")
    _slot_of(obj, _PLANS).__set__(obj, address)
