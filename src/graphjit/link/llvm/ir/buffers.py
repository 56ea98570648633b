"""Intermediate buffers reused across calls: one cached ndarray per allocation site of a temporary.

Every temporary the native entry allocates (``rt->slots[s]`` with ``s`` past the outputs) has a module global
``bufcache.<s>`` holding the ndarray of an earlier call, or NULL.  When the caller's slots own numpy arrays
(``rt->flags & RT_FLAG_PY_SLOTS``: the CPython wrapper; numba's caller keeps NRT meminfos there instead):

* **take**: ``obj = atomic xchg(bufcache.s, NULL)``; if obj has the requested shape it becomes the temporary
  (slot s owns it, the array struct is filled from it, no allocation, no page faults); otherwise obj goes to a
  spare slot the wrapper releases, and ``rt->alloc`` makes a fresh array.  Two threads in the same function
  never share a buffer: the exchange hands it to one of them, the other allocates.
* **give back** (after the outputs are in place, on success only): a temporary whose reference count is 1
  (only its slot holds it: not returned to the caller, not the base of a returned view, not kept by a Python
  ``perform``) is exchanged into ``bufcache.s``; whatever the exchange returns (NULL, or another thread's
  buffer) goes back into slot s for the wrapper to release.  Anything else keeps its slot and is released.

Outputs are never cached: they are fresh arrays every call (Theano's rule for non-borrowed outputs).
``<prefix>drop_buffers()`` (``f.native.release_buffers()``) empties the cache; it must run with the GIL held.
"""

from __future__ import annotations

from typing import Any, Sequence

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LIKELY, LowerContext, exit_if_failed, glue_function, set_weights
from graphjit.link.llvm.ir.layouts import I8P, I32, I64, I64P
from graphjit.link.llvm.ir.modules import exported_name
from graphjit.link.llvm.ir.output_reuse import drop_out_cache

_NULL = ir.Constant(I8P, None)
_ORDER = "seq_cst"


def cache_global(module: ir.Module, slot: int) -> ir.GlobalVariable:
    """The module global ``bufcache.<slot>`` caching the buffer of a temporary's site (made once)."""
    name = f"bufcache.{slot}"
    g = module.globals.get(name)
    if g is None:
        g = ir.GlobalVariable(module, I8P, name)
        g.linkage = "internal"
        g.initializer = _NULL
    return g


def py_slots(ctx: LowerContext) -> ir.Value:
    """i1: the caller's rt->slots own numpy arrays (the CPython wrapper), so buffers may be cached."""
    b = ctx.builder
    flags = b.load(b.gep(ctx.rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True))
    return b.icmp_unsigned("!=", b.and_(flags, I64(L.RT_FLAG_PY_SLOTS)), I64(0))


def _field(b: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
    return b.load(b.bitcast(b.gep(obj, [I64(offset)], inbounds=True), ty.as_pointer()))


def _take_helper(module: ir.Module, rt_type: ir.Type) -> ir.Function:
    """``i1 glue.buf.take(rt*, i8** cache, i32 slot, i32 spare, i8* out, i32 ndim, i64* shape,
    i64 itemsize)``.

    One function per module (an entry has a site per temporary): true when the cached ndarray of this
    site had exactly this shape and now fills the array struct at out (slot owns it); false otherwise (a
    wrong-shaped buffer went to the spare slot): the caller allocates.
    """
    i1 = ir.IntType(1)
    fnty = ir.FunctionType(i1, [rt_type, I8P.as_pointer(), I32, I32, I8P, I32, I64P, I64])
    return glue_function(module, "buf.take", fnty, _build_take)


def _build_take(fn: ir.Function) -> None:
    i1 = ir.IntType(1)
    rt, cache, slot, spare, out, ndim, shape, itemsize = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    take, check, reuse, miss, no = (fn.append_basic_block(n) for n in ("take", "check", "reuse", "miss", "no"))
    flags = b.load(b.gep(rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True))
    b.cbranch(b.icmp_unsigned("!=", b.and_(flags, I64(L.RT_FLAG_PY_SLOTS)), I64(0)), take, no)
    b.position_at_end(take)
    obj = b.atomic_rmw("xchg", cache, _NULL, _ORDER)
    b.cbranch(b.icmp_unsigned("!=", obj, _NULL), check, no)
    b.position_at_end(check)
    dims = _field(b, obj, L.PYARRAY_OFFSETS["dimensions"], I64P)
    n = b.sext(ndim, I64)
    slots = b.load(b.gep(rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
    ctx = LowerContext(b)
    same, nitems, stride = ctx.alloca(i1), ctx.alloca(I64), ctx.alloca(I64)
    b.store(ir.Constant(i1, 1), same)
    b.store(I64(1), nitems)
    with ctx.for_range(n, name="dims") as d:
        want = b.load(b.gep(shape, [d], inbounds=True))
        have = b.load(b.gep(dims, [d], inbounds=True))
        b.store(b.and_(b.load(same), b.icmp_signed("==", want, have)), same)
        b.store(b.mul(b.load(nitems), want), nitems)
    set_weights(b.cbranch(b.load(same), reuse, miss), LIKELY)
    b.position_at_end(reuse)
    b.store(obj, b.gep(slots, [slot], inbounds=True))
    data = _field(b, obj, L.PYARRAY_OFFSETS["data"], I8P)
    words = b.bitcast(out, I64P)                   # {meminfo, parent, nitems, itemsize, data, shape, strides}
    for k, v in enumerate([I64(0), b.ptrtoint(obj, I64), b.load(nitems), itemsize, b.ptrtoint(data, I64)]):
        b.store(v, b.gep(words, [I64(k)], inbounds=True))
    b.store(itemsize, stride)
    with ctx.for_range(n, name="strides") as r:    # C order: the last dimension first
        j = b.sub(b.sub(n, I64(1)), r)
        extent = b.load(b.gep(shape, [j], inbounds=True))
        b.store(extent, b.gep(words, [b.add(I64(5), j)], inbounds=True))
        b.store(b.load(stride), b.gep(words, [b.add(b.add(I64(5), n), j)], inbounds=True))
        b.store(b.mul(b.load(stride), extent), stride)
    b.ret(ir.Constant(i1, 1))
    b.position_at_end(miss)
    b.store(obj, b.gep(slots, [spare], inbounds=True))   # the wrong-shaped buffer: the wrapper releases it
    b.ret(ir.Constant(i1, 0))
    b.position_at_end(no)
    b.ret(ir.Constant(i1, 0))


def obtain_helper(module: ir.Module, rt_type: ir.Type) -> ir.Function:
    """``i32 glue.buf.obtain(rt*, i8** cache, i32 slot, i32 spare, i8* out, i32 ndim, i64* shape,
    i64 itemsize, i32 type_num)``: buf.take, else rt->alloc; 0 or the allocation's error status.

    One call per temporary in the entry instead of the take call, its test and an inline allocation.
    """
    take = _take_helper(module, rt_type)

    def build(fn: ir.Function) -> None:
        rt, cache, slot, spare, out, ndim, shape, itemsize, type_num = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        with b.if_then(b.call(take, [rt, cache, slot, spare, out, ndim, shape, itemsize]), likely=True):
            b.ret(I32(0))
        alloc = b.load(b.gep(rt, [I32(0), I32(L.RT_ALLOC)], inbounds=True))
        b.ret(b.call(alloc, [b.bitcast(rt, I8P), slot, out, type_num, ndim, shape]))

    return glue_function(module, "buf.obtain", ir.FunctionType(I32, list(take.function_type.args) + [I32]),
                         build)


def obtain_lengths_helper(module: ir.Module, rt_type: ir.Type, ndim: int) -> ir.Function:
    """``i32 glue.buf.obtain.<ndim>(rt*, i8** cache, i32 slot, i32 spare, i8* out, i64 itemsize,
    i32 type_num, i64 length...)``: buf.obtain with the lengths as arguments (no shape array in the entry)."""
    obtain = obtain_helper(module, rt_type)

    def build(fn: ir.Function) -> None:
        rt, cache, slot, spare, out, itemsize, type_num, *lengths = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        dims = b.alloca(ir.ArrayType(I64, max(ndim, 1)))
        for d, n in enumerate(lengths):
            b.store(n, b.gep(dims, [I32(0), I32(d)], inbounds=True))
        b.ret(b.call(obtain, [rt, cache, slot, spare, out, I32(ndim), b.gep(dims, [I32(0), I32(0)], inbounds=True),
                              itemsize, type_num]))

    args = [rt_type, I8P.as_pointer(), I32, I32, I8P, I64, I32] + [I64] * ndim
    return glue_function(module, f"buf.obtain.{ndim}", ir.FunctionType(I32, args), build)


def take_or_allocate(ctx: Any, slot: int, spare: int, out: ir.Value, dtype: str,
                     shape: Sequence[ir.Value]) -> None:
    """Fill out with the cached buffer of this site if it has this shape, else allocate (see the module doc);
    a failed allocation returns its status from the entry.  ctx: a GraphContext (its as_bytes)."""
    b = ctx.builder
    obtain = obtain_lengths_helper(ctx.module, ctx.rt.type, len(shape))
    status = b.call(obtain, [ctx.rt, cache_global(ctx.module, slot), I32(slot), I32(spare), ctx.as_bytes(out),
                             I64(L.itemsize(dtype)), I32(L.type_num(dtype)), *shape])
    exit_if_failed(b, status)


_UNROLLED = 4     # more cached slots than this are walked by a loop over constant tables (less IR)


def _each_cached(ctx: LowerContext, slots: Sequence[int], body: Any) -> None:
    """body(slot index, cache global pointer) for every cached slot (ctx.for_each: a loop when many)."""
    if len(slots) <= _UNROLLED:
        for slot in slots:
            body(I32(slot), cache_global(ctx.module, slot))
        return
    b = ctx.builder
    indices = _constant_table(ctx.module, "bufcache.slots", I32, [I32(s) for s in slots])
    caches = _constant_table(ctx.module, "bufcache.globals", I8P.as_pointer(),
                             [cache_global(ctx.module, s) for s in slots])
    ctx.for_each(0, len(slots), lambda k: body(b.load(b.gep(indices, [I64(0), k], inbounds=True)),
                                               b.load(b.gep(caches, [I64(0), k], inbounds=True))), unrolled=0)


def _constant_table(module: ir.Module, name: str, ty: ir.Type, values: list) -> ir.GlobalVariable:
    """A private constant array global of the module (made once)."""
    g = module.globals.get(name)
    if g is None:
        arr = ir.ArrayType(ty, len(values))
        g = ir.GlobalVariable(module, arr, name)
        g.linkage, g.global_constant, g.initializer = "private", True, ir.Constant(arr, values)
    return g


def give_back(ctx: LowerContext, slots: Sequence[int]) -> None:
    """At the end of a successful call: cache every temporary only its slot refers to (see the module doc)."""
    if not slots:
        return
    b = ctx.builder

    def give(slot: ir.Value, cache: ir.Value) -> None:
        ptr = b.gep(b.load(b.gep(ctx.rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True)), [slot], inbounds=True)
        obj = b.load(ptr)
        with b.if_then(b.icmp_unsigned("!=", obj, _NULL)):
            sole = b.icmp_signed("==", _field(b, obj, 0, I64), I64(1))     # ob_refcnt
            with b.if_then(sole):
                b.store(b.atomic_rmw("xchg", cache, obj, _ORDER), ptr)

    with b.if_then(py_slots(ctx), likely=True):
        _each_cached(ctx, slots, give)


def emit_drop_function(module: ir.Module, slots: Sequence[int]) -> ir.Function:
    """``void <prefix>drop_buffers()``: empty every cache global, releasing its array (call with the GIL).

    Emit it after the wrapper: it also releases the wrapper's recycled outputs (ir/output_reuse.py).
    """
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), exported_name(module, "drop_buffers"))
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = ctx.builder
    decref_ty = ir.FunctionType(ir.VoidType(), [I8P])
    decref = module.globals.get("Py_DecRef") or ir.Function(module, decref_ty, "Py_DecRef")
    _each_cached(ctx, slots, lambda slot, cache: b.call(decref, [b.atomic_rmw("xchg", cache, _NULL, _ORDER)]))
    outputs = module.globals.get("pywrap.outcache")
    if outputs is not None:
        drop_out_cache(b, module, outputs)
    b.ret_void()
    return fn
