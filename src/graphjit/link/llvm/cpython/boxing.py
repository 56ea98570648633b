"""Type -> native boundary: each Type class's layout, registered here keyed by the class (registry.layouts).

A native tensor crosses as numba's array struct (checked and filled by the IR wrapper, cpython/wrapper.py); every other
value (ScalarType at the graph boundary, Generic, EnumType, user Types such as the seeds' double) crosses as a
``PyObject*``, filtered by its Type in Python before the call (the Function's slow path).  Inside loops a
ScalarType value is the native scalar (``scalar_layout``).

A Type class without a registered layout uses the hooks a user's Type may define (``llvm_layout``,
``llvm_unbox``, ``llvm_box``, ``llvm_cleanup``, ``llvm_version``: graph/type.py), else crosses as a PyObject*.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from graphjit.graph.params import EnumType
from graphjit.graph.type import Generic, Type
from graphjit.scalar.basic import ScalarType
from graphjit.tensor.type import TensorType

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.cpython.wrapper import unbox_array, unbox_object
from graphjit.link.llvm.cpython.argspec import ArgSpec
from graphjit.link.llvm.registry import layouts

NATIVE_DTYPES = L.NATIVE_DTYPES


def tensor_spec(dtype: str, shape: tuple) -> ArgSpec:
    """An ndarray argument (array struct, with shape's static lengths) or, for dtypes without a native layout,
    a PyObject*."""
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
    """Emit the checks and extraction of argument `index` in an IR wrapper (entry.Wrapper)."""
    return (unbox_array if spec.kind == "array" else unbox_object)(wrapper, obj, spec, index)


def box(ctx: LowerContext, value: ir.Value, spec: ArgSpec) -> ir.Value:
    """The PyObject* of a lowered value: an array struct's parent ndarray, or the object in its slot."""
    return ctx.field(value, "parent") if spec.kind == "array" else ctx.builder.load(value)


class TypeLayout:
    """How values of one Type live in IR and cross the native entry (numba's data model, one per Type class).

    The default is a PyObject*: the wrapper passes the object, filtered by the Type in Python.
    """

    def __init__(self, type_: Type) -> None:
        self.type = type_

    def arg_spec(self) -> ArgSpec:
        """How a graph input/output of this Type crosses the native entry."""
        return ArgSpec.object()

    def layout(self, ctx: LowerContext | None = None) -> ir.Type:
        """The LLVM type of a value of this Type."""
        return L.I8P

    def unbox(self, wrapper: Any, obj: ir.Value, index: int) -> ir.Value:
        """Emit the checks and extraction of argument `index` (a PyObject*) in an IR wrapper."""
        return unbox(wrapper, obj, self.arg_spec(), index)

    def box(self, ctx: LowerContext, value: ir.Value) -> ir.Value:
        """The PyObject* holding a lowered value."""
        return box(ctx, value, self.arg_spec())

    def cleanup(self, ctx: LowerContext, value: ir.Value) -> None:
        """Release what unbox took (nothing: arguments are borrowed, outputs are owned by the wrapper's slots)."""


@layouts.register(Generic)
class ObjectLayout(TypeLayout):
    """Any Python object: a PyObject* passed through unchanged."""


@layouts.register(TensorType)
class TensorLayout(TypeLayout):
    """numba's array struct {meminfo, parent, nitems, itemsize, data, shape[N], strides[N]} (complex: a
    PyObject*)."""

    def arg_spec(self) -> ArgSpec:
        """An array struct with the Type's static lengths."""
        return tensor_spec(self.type.dtype, self.type.shape)

    def layout(self, ctx: LowerContext | None = None) -> ir.Type:
        """The array struct (i8*, a PyObject*, for complex)."""
        return layout(self.arg_spec())


@layouts.register(ScalarType)
class ScalarLayout(TypeLayout):
    """The native scalar in loops; a PyObject* filtered by the Type at a native entry."""

    def layout(self, ctx: LowerContext | None = None) -> ir.Type:
        """The dtype's scalar (bool: i8 in memory)."""
        return scalar_layout(self.type.dtype)


@layouts.register(EnumType)
class EnumLayout(TypeLayout):
    """An integer constant when lowered; a PyObject* at a native entry."""

    def layout(self, ctx: LowerContext | None = None) -> ir.Type:
        """i64."""
        return L.I64


class HookLayout(TypeLayout):
    """A user's Type without a registered layout: its own ``llvm_*`` methods (graph/type.py documents them)."""

    def layout(self, ctx: LowerContext | None = None) -> ir.Type:
        """The Type's llvm_layout(ctx)."""
        return self.type.llvm_layout(ctx)

    def unbox(self, wrapper: Any, obj: ir.Value, index: int) -> ir.Value:
        """The Type's llvm_unbox, if it has one."""
        hook = getattr(self.type, "llvm_unbox", None)
        return hook(wrapper, obj, index) if hook is not None else super().unbox(wrapper, obj, index)

    def box(self, ctx: LowerContext, value: ir.Value) -> ir.Value:
        """The Type's llvm_box, if it has one."""
        hook = getattr(self.type, "llvm_box", None)
        return hook(ctx, value) if hook is not None else super().box(ctx, value)

    def cleanup(self, ctx: LowerContext, value: ir.Value) -> None:
        """The Type's llvm_cleanup, if it has one."""
        hook = getattr(self.type, "llvm_cleanup", None)
        if hook is not None:
            hook(ctx, value)


def type_layout(type_: Type) -> TypeLayout:
    """The layout of a Type: its class's registered one, else its own hooks, else a PyObject*."""
    entry = layouts.lookup(type(type_))
    if entry is not None:
        return entry.impl(type_)
    if getattr(type_, "llvm_layout", None) is not None:
        return HookLayout(type_)
    return ObjectLayout(type_)


