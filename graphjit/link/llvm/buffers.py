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
``GJMOD_drop_buffers()`` (``f.native.release_buffers()``) empties the cache; it must run with the GIL held.
"""

from __future__ import annotations

from typing import Any, Sequence

from llvmlite import ir

from . import layouts as L
from .layouts import I8P, I32, I64, I64P

_NULL = ir.Constant(I8P, None)
_ORDER = "seq_cst"


def _cache_global(module: ir.Module, slot: int) -> ir.GlobalVariable:
    name = f"bufcache.{slot}"
    g = module.globals.get(name)
    if g is None:
        g = ir.GlobalVariable(module, I8P, name)
        g.linkage = "internal"
        g.initializer = _NULL
    return g


def py_slots(ctx: Any) -> ir.Value:
    """i1: the caller's rt->slots own numpy arrays (the CPython wrapper), so buffers may be cached."""
    b = ctx.builder
    flags = b.load(b.gep(ctx.rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True))
    return b.icmp_unsigned("!=", b.and_(flags, I64(L.RT_FLAG_PY_SLOTS)), I64(0))


def _slot_ptr(ctx: Any, slot: int) -> ir.Value:
    b = ctx.builder
    slots = b.load(b.gep(ctx.rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
    return b.gep(slots, [I32(slot)], inbounds=True)


def _field(b: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
    return b.load(b.bitcast(b.gep(obj, [I64(offset)], inbounds=True), ty.as_pointer()))


def _same_shape(b: ir.IRBuilder, obj: ir.Value, shape: Sequence[ir.Value]) -> ir.Value:
    """i1: the (non-NULL, C-contiguous, site-typed) cached ndarray obj has exactly this shape."""
    ok = ir.Constant(ir.IntType(1), 1)
    if shape:
        dims = _field(b, obj, L.PYARRAY_OFFSETS["dimensions"], I64P)
        for d, n in enumerate(shape):
            ok = b.and_(ok, b.icmp_signed("==", b.load(b.gep(dims, [I64(d)], inbounds=True)), n))
    return ok


def _fill_from(ctx: Any, obj: ir.Value, out: ir.Value, dtype: str, shape: Sequence[ir.Value]) -> None:
    """Fill the array struct at out: {NULL, obj, nitems, itemsize, data, shape, C strides}."""
    b = ctx.builder
    isz = L.itemsize(dtype)
    nitems = I64(1)
    for n in shape:
        nitems = b.mul(nitems, n)
    data = b.bitcast(_field(b, obj, L.PYARRAY_OFFSETS["data"], I8P), L.llvm_scalar_type(dtype).as_pointer())
    for i, v in enumerate([_NULL, obj, nitems, I64(isz), data]):
        b.store(v, b.gep(out, [I32(0), I32(i)], inbounds=True))
    stride = I64(isz)
    for d in reversed(range(len(shape))):
        b.store(shape[d], b.gep(out, [I32(0), I32(5), I32(d)], inbounds=True))
        b.store(stride, b.gep(out, [I32(0), I32(6), I32(d)], inbounds=True))
        stride = b.mul(stride, shape[d])


def take_or_allocate(ctx: Any, slot: int, spare: int, out: ir.Value, dtype: str,
                     shape: Sequence[ir.Value], allocate: Any) -> None:
    """Fill out with the cached buffer of this site if it has this shape, else allocate (see the module doc).

    allocate() emits the ordinary rt->alloc call into slot (it may return from the entry on failure).
    """
    b = ctx.builder
    cache = _cache_global(ctx.module, slot)
    take = b.append_basic_block(f"buf{slot}.take")
    check = b.append_basic_block(f"buf{slot}.check")
    reuse = b.append_basic_block(f"buf{slot}.reuse")
    miss = b.append_basic_block(f"buf{slot}.miss")
    fresh = b.append_basic_block(f"buf{slot}.fresh")
    done = b.append_basic_block(f"buf{slot}.done")
    b.cbranch(py_slots(ctx), take, fresh)
    b.position_at_end(take)
    obj = b.atomic_rmw("xchg", cache, _NULL, _ORDER)
    b.cbranch(b.icmp_unsigned("!=", obj, _NULL), check, fresh)
    b.position_at_end(check)
    b.cbranch(_same_shape(b, obj, shape), reuse, miss).set_weights([1 << 20, 1])
    b.position_at_end(reuse)
    b.store(obj, _slot_ptr(ctx, slot))
    _fill_from(ctx, obj, out, dtype, shape)
    b.branch(done)
    b.position_at_end(miss)
    b.store(obj, _slot_ptr(ctx, spare))           # the wrong-shaped buffer: the wrapper releases it
    b.branch(fresh)
    b.position_at_end(fresh)
    allocate()
    b.branch(done)
    b.position_at_end(done)


def give_back(ctx: Any, slots: Sequence[int]) -> None:
    """At the end of a successful call: cache every temporary only its slot refers to (see the module doc)."""
    if not slots:
        return
    b = ctx.builder
    with b.if_then(py_slots(ctx), likely=True):
        for slot in slots:
            ptr = _slot_ptr(ctx, slot)
            obj = b.load(ptr)
            nonnull = b.icmp_unsigned("!=", obj, _NULL)
            with b.if_then(nonnull):
                sole = b.icmp_signed("==", _field(b, obj, 0, I64), I64(1))     # ob_refcnt
                with b.if_then(sole):
                    b.store(b.atomic_rmw("xchg", _cache_global(ctx.module, slot), obj, _ORDER), ptr)


def emit_drop_function(module: ir.Module, slots: Sequence[int]) -> ir.Function:
    """``void GJMOD_drop_buffers()``: empty every cache global, releasing its array (call with the GIL)."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "GJMOD_drop_buffers")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    decref_ty = ir.FunctionType(ir.VoidType(), [I8P])
    decref = module.globals.get("Py_DecRef") or ir.Function(module, decref_ty, "Py_DecRef")
    for slot in slots:
        b.call(decref, [b.atomic_rmw("xchg", _cache_global(module, slot), _NULL, _ORDER)])
    b.ret_void()
    return fn
