"""Type -> native boundary: the layouts and (un)boxing the Types' llvm_* methods delegate to.

A native tensor crosses as numba's array struct (checked and filled by the IR wrapper, entry.py); every other
value (ScalarType at the graph boundary, Generic, EnumType, user Types such as the seeds' double) crosses as a
``PyObject*``, filtered by its Type in Python before the call (the Function's slow path).  Inside loops a
ScalarType value is the native scalar (``scalar_layout``).
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from . import layouts as L
from .entry import ArgSpec, _unbox_array, _unbox_object

NATIVE_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
                 "float64")


def tensor_spec(dtype: str, shape: tuple) -> ArgSpec:
    """An ndarray argument (array struct, with shape's static lengths) or, for dtypes without a native layout
    (complex), a PyObject*."""
    if dtype in NATIVE_DTYPES:
        return ArgSpec.array(dtype, len(shape), shape=shape)
    return ArgSpec.object()


def layout(spec: ArgSpec) -> ir.Type:
    """The LLVM type a native entry receives a pointer to."""
    return spec.layout()


def scalar_layout(dtype: str) -> ir.Type:
    """The native scalar of a dtype (bool is i8 in memory)."""
    return L.llvm_scalar_type(dtype)


def unbox(wrapper: Any, obj: ir.Value, spec: ArgSpec, index: int) -> ir.Value:
    """Emit the checks and extraction of argument `index` in an IR wrapper (entry._Wrapper)."""
    return (_unbox_array if spec.kind == "array" else _unbox_object)(wrapper, obj, spec, index)


def box(ctx: Any, value: ir.Value, spec: ArgSpec) -> ir.Value:
    """The PyObject* of a lowered value: an array struct's parent ndarray, or the object in its slot."""
    return ctx.field(value, "parent") if spec.kind == "array" else ctx.builder.load(value)
