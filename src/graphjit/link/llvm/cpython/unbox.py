"""Checking and unboxing an ndarray argument in IR: CPython object fields, and one helper per argument kind.

The CPython wrapper (cpython/wrapper.py) calls ``glue.unbox.<dtype>.<ndim>.<static lengths>[w](obj, struct*)``
once per array argument: it answers false when obj is not an exact, aligned, native-order ndarray of that
dtype and ndim (each declared static length matched, writeable when asked), else fills numba's array struct
from it.  A declared length costs one compare, folded into the answer.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext, glue_function
from graphjit.link.llvm.ir.layouts import I8, I8P, I32, I64, I64P


def field_ptr(b: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
    """Typed pointer to the field at byte offset of a PyObject*."""
    return b.bitcast(b.gep(obj, [I64(offset)], inbounds=True), ty.as_pointer())


def load_field(b: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type, name: str = "") -> ir.Value:
    """The field at byte offset of a PyObject*, as ty."""
    return b.load(field_ptr(b, obj, offset, ty), name=name)


def any_of(b: ir.IRBuilder, conds: list[ir.Value]) -> ir.Value:
    """i1: some of conds (at least one)."""
    out = conds[0]
    for c in conds[1:]:
        out = b.or_(out, c)
    return out


def all_of(b: ir.IRBuilder, conds: list[ir.Value]) -> ir.Value:
    """i1: all of conds (at least one)."""
    out = conds[0]
    for c in conds[1:]:
        out = b.and_(out, c)
    return out


def unbox_helper(module: ir.Module, spec: Any) -> ir.Function:
    """``i1 glue.unbox.<dtype>.<ndim>.<static lengths><w>(PyObject* obj, struct* out)``: fills out, or false
    when obj is not an aligned native-order ndarray of that dtype, ndim (static lengths matched, writeable)."""
    def build(fn: ir.Function) -> None:
        obj, struct = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = LowerContext(b)
        no = ir.Constant(ir.IntType(1), 0)
        tp = load_field(b, obj, L.PYOBJECT_TYPE_OFFSET, I8P, "type")
        with b.if_then(b.icmp_unsigned("!=", tp, b.bitcast(ctx.declare_global("gj_PyArray_Type"), I8P)),
                       likely=False):
            b.ret(no)
        off = L.PYARRAY_OFFSETS
        descr = load_field(b, obj, off["descr"], I8P)
        tnum = load_field(b, descr, L.DESCR_TYPE_NUM_OFFSET, I32)
        ok = b.icmp_signed("==", load_field(b, obj, off["nd"], I32), I32(spec.ndim))
        ok = b.and_(ok, any_of(b, [b.icmp_signed("==", tnum, I32(n)) for n in L.type_nums(spec.dtype)]))
        byteorder = load_field(b, descr, L.DESCR_BYTEORDER_OFFSET, I8)
        ok = b.and_(ok, b.icmp_unsigned("!=", byteorder, I8(ord(">"))))
        need = L.NPY_ARRAY_ALIGNED | (L.NPY_ARRAY_WRITEABLE if spec.writeable else 0)
        flags = load_field(b, obj, off["flags"], I32)
        ok = b.and_(ok, b.icmp_unsigned("==", b.and_(flags, I32(need)), I32(need)))
        with b.if_then(b.not_(ok), likely=False):
            b.ret(no)
        b.ret(_fill_array_struct(b, obj, struct, spec))

    lengths = "x".join("_" if n is None else str(n) for n in spec.shape)
    name = f"unbox.{spec.dtype}.{spec.ndim}.{lengths}{'w' if spec.writeable else ''}"
    fnty = ir.FunctionType(ir.IntType(1), [I8P, spec.layout().as_pointer()])
    return glue_function(module, name, fnty, build)


def _fill_array_struct(b: ir.IRBuilder, obj: ir.Value, struct: ir.Value, spec: Any) -> ir.Value:
    """Fill struct from the ndarray obj; i1: every dimension with a declared length has that length."""
    off = L.PYARRAY_OFFSETS
    dims = load_field(b, obj, off["dimensions"], I64P)
    strides = load_field(b, obj, off["strides"], I64P)
    shape = [b.load(b.gep(dims, [I64(d)], inbounds=True)) for d in range(spec.ndim)]
    nitems = I64(1)
    for n in shape:
        nitems = b.mul(nitems, n)
    data = b.bitcast(load_field(b, obj, off["data"], I8P), L.llvm_scalar_type(spec.dtype).as_pointer())
    values = [ir.Constant(I8P, None), obj, nitems, I64(L.itemsize(spec.dtype)), data]
    for i, v in enumerate(values):
        b.store(v, b.gep(struct, [I32(0), I32(i)], inbounds=True))
    for d in range(spec.ndim):
        b.store(shape[d], b.gep(struct, [I32(0), I32(5), I32(d)], inbounds=True))
        stride = b.load(b.gep(strides, [I64(d)], inbounds=True))
        b.store(stride, b.gep(struct, [I32(0), I32(6), I32(d)], inbounds=True))
    fixed = [b.icmp_signed("==", shape[d], I64(n)) for d, n in enumerate(spec.shape) if n is not None]
    return all_of(b, fixed) if fixed else ir.Constant(ir.IntType(1), 1)


def overlap(b: ir.IRBuilder, x: ir.Value, y: ir.Value, ndim_x: int, ndim_y: int) -> ir.Value:
    """i1: the memory of the filled array structs x and y (any strides) has a byte in common."""
    return extents_meet(b, _struct_extent(b, x, ndim_x), _struct_extent(b, y, ndim_y))


def extents_meet(b: ir.IRBuilder, x: tuple, y: tuple) -> ir.Value:
    """i1: two byte extents (byte_extent's) share a byte (an empty array shares none)."""
    (lo_x, hi_x, empty_x), (lo_y, hi_y, empty_y) = x, y
    meet = b.and_(b.icmp_unsigned("<", lo_x, hi_y), b.icmp_unsigned("<", lo_y, hi_x))
    return b.and_(meet, b.not_(b.or_(empty_x, empty_y)))


def byte_extent(b: ir.IRBuilder, data: ir.Value, itemsize: ir.Value, lengths: list, strides: list
                ) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(first byte, one past the last byte, no element) of a strided array (negative strides too)."""
    lo = b.ptrtoint(data, I64)
    hi = b.add(lo, itemsize)
    empty = ir.Constant(ir.IntType(1), 0)
    for n, stride in zip(lengths, strides):
        span = b.mul(b.sub(n, I64(1)), stride)
        neg = b.icmp_signed("<", span, I64(0))
        lo = b.add(lo, b.select(neg, span, I64(0)))
        hi = b.add(hi, b.select(neg, I64(0), span))
        empty = b.or_(empty, b.icmp_signed("==", n, I64(0)))
    return lo, hi, empty


def _struct_extent(b: ir.IRBuilder, struct: ir.Value, ndim: int) -> tuple[ir.Value, ir.Value, ir.Value]:
    """byte_extent of the array a struct pointer describes."""
    def field(i: int, *more: int) -> ir.Value:
        return b.load(b.gep(struct, [I32(0), I32(i), *[I32(m) for m in more]], inbounds=True))

    return byte_extent(b, field(4), field(3), [field(5, d) for d in range(ndim)],
                       [field(6, d) for d in range(ndim)])
