"""Large outputs recycled: a fresh array object over the buffer of an earlier call's output, once released.

Outputs are fresh arrays every call (Theano's rule), and a fresh large buffer costs page faults: numpy's
allocator gives each 80 MB output new pages, which the kernel zeroes on first touch (filling one took
13.4 ms here, refilling a reused one 5.7 ms).  So an output of at least OUTPUT_REUSE_MIN_BYTES is a view of
a *backing* array the module keeps per output slot (``<wrapper>.outcache``): when the backing's reference
count is 1 (only the cache holds it: every earlier result and anything derived from it is gone) and its
shape and dtype fit, the new output views it again; otherwise a new backing replaces it.  The caller gets an
array no live value shares memory with, exactly as before; only ``flags.owndata`` (False) and ``.base``
tell the difference.  ``f.native.release_buffers()`` (<prefix>drop_buffers) releases the backings.

Runs inside the wrapper's allocator, which holds the GIL (it takes it back when the entry released it).
"""

from __future__ import annotations

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I8P, I32, I64, I64P

OUTPUT_REUSE_MIN_BYTES = 1 << 20        # below: a fresh array is as cheap as a view and faults few pages
_NULL = ir.Constant(I8P, None)
_NPY_ARRAY_CARRAY = 0x0001 | L.NPY_ARRAY_ALIGNED | L.NPY_ARRAY_WRITEABLE


def out_cache(module: ir.Module, name: str, n_out: int) -> ir.GlobalVariable:
    """The module's ``[n_out x i8*]`` of backing arrays, one per output slot (NULL when none)."""
    gname = f"{name}.outcache"
    g = module.globals.get(gname)
    if g is None:
        ty = ir.ArrayType(I8P, max(n_out, 1))
        g = ir.GlobalVariable(module, ty, gname)
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, None)
    return g


def _field(b: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
    return b.load(b.bitcast(b.gep(obj, [I64(offset)], inbounds=True), ty.as_pointer()))


def _fits(ctx: LowerContext, old: ir.Value, descr: ir.Value, ndim: ir.Value, shape: ir.Value) -> ir.Value:
    """i1: old (non-NULL) is held by the cache alone and has this dtype, ndim and shape."""
    b = ctx.builder
    ok = ctx.alloca(ir.IntType(1), name="fits")
    b.store(ir.Constant(ir.IntType(1), 0), ok)
    sole = b.icmp_signed("==", _field(b, old, 0, I64), I64(1))                     # ob_refcnt
    same = b.and_(b.icmp_unsigned("==", _field(b, old, L.PYARRAY_OFFSETS["descr"], I8P), descr),
                  b.icmp_signed("==", _field(b, old, L.PYARRAY_OFFSETS["nd"], I32), ndim))
    with b.if_then(b.and_(sole, same)):
        dims = _field(b, old, L.PYARRAY_OFFSETS["dimensions"], I64P)
        b.store(ir.Constant(ir.IntType(1), 1), ok)
        with ctx.for_range(b.sext(ndim, I64), name="fit") as d:
            equal = b.icmp_signed("==", b.load(b.gep(dims, [d], inbounds=True)),
                                  b.load(b.gep(shape, [d], inbounds=True)))
            b.store(b.and_(b.load(ok), equal), ok)
    return b.load(ok)


def recycle_function(module: ir.Module, name: str, n_out: int) -> ir.Function:
    """Internal ``i8* <name>.recycle(i32 slot, i32 type_num, i32 ndim, i64* shape)`` (see recycled_output).

    Its own function, so the allocator's path for ordinary arrays (every small output) stays short.
    """
    fname = f"{name}.recycle"
    fn = module.globals.get(fname)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(I8P, [I32, I32, I32, I64P]), fname)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
        ctx.builder.ret(recycled_output(ctx, out_cache(module, name, n_out), *fn.args))
    return fn


def recycled_output(ctx: LowerContext, cache: ir.GlobalVariable, slot: ir.Value, tnum: ir.Value,
                    ndim: ir.Value, shape: ir.Value) -> ir.Value:
    """PyObject* (new reference): a C-contiguous array viewing slot's backing (renewed if needed), or NULL."""
    b = ctx.builder
    py = lambda name, ret, args: ctx.call_external(name, ir.FunctionType(ret, [a.type for a in args]), args)  # noqa: E731
    cell = b.gep(cache, [I32(0), slot], inbounds=True)
    old = b.atomic_rmw("xchg", cell, _NULL, "seq_cst")
    descr = py("gj_PyArray_DescrFromType", I8P, [tnum])      # builtin dtypes: one descriptor object each
    backing = ctx.alloca(I8P, name="backing")
    b.store(_NULL, backing)
    with b.if_then(b.icmp_unsigned("!=", old, _NULL)):
        with b.if_else(_fits(ctx, old, descr, ndim, shape)) as (keep, drop):
            with keep:
                b.store(old, backing)
            with drop:
                py("Py_DecRef", ir.VoidType(), [old])
    result = ctx.alloca(I8P, name="recycled")
    b.store(_NULL, result)
    with b.if_then(b.icmp_unsigned("!=", descr, _NULL), likely=True):
        with b.if_then(b.icmp_unsigned("==", b.load(backing), _NULL)):
            py("Py_IncRef", ir.VoidType(), [descr])             # PyArray_Empty steals one reference
            b.store(py("gj_PyArray_Empty", I8P, [ndim, shape, descr, I32(0)]), backing)
        base = b.load(backing)
        with b.if_else(b.icmp_unsigned("==", base, _NULL)) as (failed, made):
            with failed:
                py("Py_DecRef", ir.VoidType(), [descr])
            with made:
                array_type = b.bitcast(ctx.declare_global("gj_PyArray_Type"), I8P)
                data = _field(b, base, L.PYARRAY_OFFSETS["data"], I8P)
                view = py("gj_PyArray_NewFromDescr", I8P,                     # steals descr
                          [array_type, descr, ndim, shape, ir.Constant(I64P, None), data, I32(_NPY_ARRAY_CARRAY),
                           _NULL])
                with b.if_else(b.icmp_unsigned("==", view, _NULL)) as (no_view, viewed):
                    with no_view:
                        py("Py_DecRef", ir.VoidType(), [base])
                    with viewed:
                        py("Py_IncRef", ir.VoidType(), [base])             # SetBaseObject steals one
                        status = py("gj_PyArray_SetBaseObject", I32, [view, base])
                        with b.if_else(b.icmp_signed("<", status, I32(0))) as (bad, good):
                            with bad:
                                py("Py_DecRef", ir.VoidType(), [view])
                                py("Py_DecRef", ir.VoidType(), [base])
                            with good:
                                prev = b.atomic_rmw("xchg", cell, base, "seq_cst")     # the cache's reference
                                with b.if_then(b.icmp_unsigned("!=", prev, _NULL)):
                                    py("Py_DecRef", ir.VoidType(), [prev])
                                b.store(view, result)
    return b.load(result)


def drop_out_cache(b: ir.IRBuilder, module: ir.Module, cache: ir.GlobalVariable) -> None:
    """Release every backing array of cache (<prefix>drop_buffers)."""
    decref = module.globals.get("Py_DecRef") or ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P]),
                                                              "Py_DecRef")
    for k in range(cache.type.pointee.count):
        cell = b.gep(cache, [I32(0), I32(k)], inbounds=True)
        b.call(decref, [b.atomic_rmw("xchg", cell, _NULL, "seq_cst")])
