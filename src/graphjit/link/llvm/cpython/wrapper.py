"""The CPython wrapper of a native entry, emitted in IR: METH_FASTCALL, argument checks, output allocation.

``<prefix><name>(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames)``
(METH_FASTCALL | METH_KEYWORDS) checks and unboxes every argument
into its layout (numba's array struct, or the native scalar), calls the native entry with a runtime struct
whose allocator makes numpy arrays (``PyArray_Empty``; the owners are kept in per-call slots), and returns one
array or a tuple.  Arguments the fast path does not take (wrong count, an ndarray subclass, another dtype or
ndim, a non-native byte order, unaligned data, a dim whose length differs from its declared static length, a
list, a numpy
scalar...), and any keyword argument, go to the slow path: when ``self._fallback`` (FALLBACK_ATTRIBUTE) is a
callable, the wrapper returns ``self._fallback(*args, **kwargs)``; when it is None, it raises
``runtime.SlowPath`` and the caller filters the arguments through the Type (producing the real error message if
they are wrong) and calls again.  ``self`` is the builtin's ``__self__`` (a NativeHandle), or a Function: the
wrapper's signature is exactly CPython's ``vectorcallfunc``, so its address is also a Function's vectorcall
(compile/vectorcall.py), whose ``_fallback`` is its Python call path.  A nonzero status from the native entry
becomes the exception its error record describes (layouts: gj_error), worded in Python by errors.native_error
(the owner describes it).

With ``release_gil=True`` the native call runs without the GIL; the allocator then takes it back around
``PyArray_Empty`` with ``PyGILState_Ensure``/``Release`` (rt->flags bit 0 tells it to).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_PYTHON, GJ_OK
from graphjit.link.llvm.ir.context import LIKELY, UNLIKELY, LowerContext, set_weights
from graphjit.link.llvm.ir.layouts import I8, I8P, I32, I64, I64P, PYOBJ_PP
from graphjit.link.llvm.ir.modules import exported_name
from graphjit.link.llvm.ir.output_reuse import OUTPUT_REUSE_MIN_BYTES, recycle_function
from graphjit.link.llvm.jit.runtime import ensure_runtime
from graphjit.link.llvm.cpython.unbox import any_of, field_ptr, load_field, overlap, unbox_helper
# the load side (a warm process imports these without llvmlite): the argument specs and the builtin's maker
from graphjit.link.llvm.cpython.argspec import ArgSpec

__all__ = ["build_python_wrapper", "emit_native_call"]

FALLBACK_ATTRIBUTE = "_fallback"     # the wrapper's slow path calls self._fallback(*args, **kwargs) unless None
ALLOCATOR_OWNER = "pywrap"           # the wrappers of a module share "pywrap.alloc" and its recycled outputs


class Wrapper:
    """State of one wrapper function being emitted."""

    def __init__(self, module: ir.Module, name: str, n_slots: int) -> None:
        fnty = ir.FunctionType(I8P, [I8P, PYOBJ_PP, I64, PYOBJ_PP])
        self.fn = ir.Function(module, fnty, exported_name(module, name))
        self.name = name
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.ctx = LowerContext(self.b)
        self.n_slots = n_slots
        self.slow_fn = _slow_path_function(module, name)
        self.on_exit: Callable[[], None] | None = None     # emitted before every early return (fncall: unlock)
        self.share_exit = False          # slow paths after on_exit is set branch to one exit block (see slow())
        self._slow_exit: tuple[ir.Block, ir.PhiInstr] | None = None
        # as a Function's vectorcall (compile/vectorcall.py) nargs may carry PY_VECTORCALL_ARGUMENTS_OFFSET
        self.nargs = self.b.and_(self.fn.args[2], I64((1 << 63) - 1), name="nargs")

    def py(self, name: str, ret: ir.Type, args: Sequence[ir.Value], var_arg: bool = False) -> ir.Value:
        """Call a CPython API function."""
        fnty = ir.FunctionType(ret, [a.type for a in args][:2 if var_arg else None], var_arg=var_arg)
        return self.b.call(self.ctx.declare(name, fnty), list(args))

    def sym(self, name: str) -> ir.Value:
        """The address of a runtime data symbol as a PyObject*."""
        return self.b.bitcast(self.ctx.declare_global(name), I8P)

    def check(self, ok: ir.Value, index: int) -> None:
        """Continue if ok, else take the slow path for argument index."""
        good = self.b.append_basic_block(f"arg{index}.ok")
        bad = self.b.append_basic_block(f"arg{index}.slow")
        set_weights(self.b.cbranch(ok, good, bad), LIKELY)
        self.b.position_at_end(bad)
        self.slow(index)
        self.b.position_at_end(good)

    def slow(self, index: int) -> None:
        """Return what the slow path returns for argument index (the current block ends).

        With an on_exit (fncall: unlock, release the held inputs) and share_exit, every slow path branches to one
        exit block that runs it once: emitted at each of a wrapper's dozens of checks it was most of fncall's IR.
        Without share_exit (a small graph, whose glue is optimised with its kernels) each check has its own copy:
        LLVM's code for the fast path is then 2-3% faster (a stateful call: ~157 -> ~160 ns with one exit)."""
        if self.on_exit is None or not self.share_exit:
            if self.on_exit is not None:
                self.on_exit()
            self.b.ret(self._call_slow(I32(index)))
            return
        if self._slow_exit is None:
            here = self.b.block
            block = self.fn.append_basic_block("slow_exit")
            self.b.position_at_end(block)
            phi = self.b.phi(I32, name="slow_index")
            self.on_exit()
            self.b.ret(self._call_slow(phi))
            self._slow_exit = (block, phi)
            self.b.position_at_end(here)
        block, phi = self._slow_exit
        phi.add_incoming(I32(index), self.b.block)
        self.b.branch(block)

    def _call_slow(self, index: ir.Value) -> ir.Value:
        self_, args, _, kwnames = self.fn.args
        return self.b.call(self.slow_fn, [self_, args, self.nargs, kwnames, index])


def _slow_path_function(module: ir.Module, name: str) -> ir.Function:
    """Internal cold ``PyObject* slow(self, args, nargs, kwnames, i32 arg)``: ``self._fallback(...)``, or SlowPath."""
    fn = ir.Function(module, ir.FunctionType(I8P, [I8P, PYOBJ_PP, I64, PYOBJ_PP, I32]), f"{name}.slow_path")
    fn.linkage = "internal"
    fn.attributes.add("cold")
    fn.attributes.add("noinline")
    owner, args, nargs, kwnames, index = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = LowerContext(b)
    null = ir.Constant(I8P, None)
    getattr_ty = ir.FunctionType(I8P, [I8P, I8P])
    attr = cstring(module, f"{name}.fallback_attr", FALLBACK_ATTRIBUTE.encode() + b"\x00")
    fallback = b.call(ctx.declare("PyObject_GetAttrString", getattr_ty), [owner, attr], name="fallback")
    with b.if_then(b.icmp_unsigned("==", fallback, null), likely=False):
        b.ret(null)
    decref = ctx.declare("Py_DecRef", ir.FunctionType(ir.VoidType(), [I8P]))
    none = b.bitcast(ctx.declare_global("_Py_NoneStruct"), I8P)
    with b.if_then(b.icmp_unsigned("!=", fallback, none)):
        vectorcall = ir.FunctionType(I8P, [I8P, PYOBJ_PP, I64, PYOBJ_PP])
        result = b.call(ctx.declare("PyObject_Vectorcall", vectorcall), [fallback, args, nargs, kwnames])
        b.call(decref, [fallback])
        b.ret(result)
    b.call(decref, [fallback])
    text = b"graphjit fast path: argument %d not accepted\x00"
    msg = cstring(module, f"{name}.slow_msg", text)
    fmt = ir.FunctionType(I8P, [I8P, I8P], var_arg=True)
    b.call(ctx.declare("PyErr_Format", fmt), [b.bitcast(ctx.declare_global("gj_SlowPath"), I8P), msg, index])
    b.ret(null)
    return fn


def cstring(module: ir.Module, name: str, data: bytes) -> ir.Value:
    """A private NUL-terminated constant string, as i8*."""
    ty = ir.ArrayType(I8, len(data))
    g = ir.GlobalVariable(module, ty, name)
    g.linkage = "private"
    g.global_constant = True
    g.unnamed_addr = True
    g.initializer = ir.Constant(ty, bytearray(data))
    return g.gep([I32(0), I32(0)])


# ---------------------------------------------------------------- unboxing

def unbox_array(w: Wrapper, obj: ir.Value, spec: ArgSpec, index: int) -> ir.Value:
    """Check obj is an exact ndarray matching spec and fill an array struct; returns its pointer.

    One call of ``glue.unbox.<spec>`` per argument (a large graph's wrapper checks many arrays; a small
    graph's module is optimised whole, and the helper is inlined again)."""
    struct = w.ctx.alloca(spec.layout(), name=f"arg{index}")
    w.check(w.b.call(unbox_helper(w.fn.module, spec), [obj, struct]), index)
    return struct


def _unbox_scalar(w: Wrapper, obj: ir.Value, spec: ArgSpec, index: int) -> ir.Value:
    """Accept an exact Python float/int (bool: True/False) for a scalar of spec.dtype; returns a pointer."""
    b = w.b
    ty = spec.layout()
    slot = w.ctx.alloca(ty, name=f"arg{index}")
    if spec.dtype == "bool":
        is_true = b.icmp_unsigned("==", obj, w.sym("_Py_TrueStruct"))
        w.check(b.or_(is_true, b.icmp_unsigned("==", obj, w.sym("_Py_FalseStruct"))), index)
        b.store(b.zext(is_true, I8), slot)
        return slot
    tp = load_field(b, obj, L.PYOBJECT_TYPE_OFFSET, I8P)
    is_int = b.icmp_unsigned("==", tp, w.sym("PyLong_Type"))
    if not L.is_float(spec.dtype):
        w.check(is_int, index)
        value = w.py("PyLong_AsLongLong", I64, [obj])
        _check_conversion(w, b.icmp_signed("==", value, I64(-1)), index)
        if ty.width < 64 or not L.is_signed(spec.dtype):
            w.check(int_fits(b, value, ty, L.is_signed(spec.dtype)), index)
        b.store(b.trunc(value, ty) if ty.width < 64 else value, slot)
        return slot
    dbl = ir.DoubleType()
    with b.if_else(b.icmp_unsigned("==", tp, w.sym("PyFloat_Type"))) as (then, other):
        with then:
            b.store(_conv_float(b, load_field(b, obj, L.PYFLOAT_VALUE_OFFSET, dbl), ty), slot)
        with other:
            w.check(is_int, index)
            value = w.py("PyLong_AsDouble", dbl, [obj])
            _check_conversion(w, b.fcmp_ordered("==", value, dbl(-1.0)), index)
            b.store(_conv_float(b, value, ty), slot)
    return slot


def unbox_object(w: Wrapper, obj: ir.Value, spec: ArgSpec, index: int) -> ir.Value:
    """Any object: a slot holding the borrowed PyObject*."""
    slot = w.ctx.alloca(I8P, name=f"arg{index}")
    w.b.store(obj, slot)
    return slot


def _conv_float(b: ir.IRBuilder, value: ir.Value, ty: ir.Type) -> ir.Value:
    return b.fptrunc(value, ty) if isinstance(ty, ir.FloatType) else value


def int_fits(b: ir.IRBuilder, value: ir.Value, ty: ir.IntType, signed: bool) -> ir.Value:
    """i1: does the i64 value (a Python int read with PyLong_AsLongLong) fit the integer type?"""
    if not signed:
        nonneg = b.icmp_signed(">=", value, I64(0))
        if ty.width == 64:
            return nonneg
        return b.and_(nonneg, b.icmp_signed("<", value, I64(1 << ty.width)))
    if ty.width == 64:
        return ir.Constant(ir.IntType(1), 1)
    return b.icmp_signed("==", b.sext(b.trunc(value, ty), I64), value)


def _check_conversion(w: Wrapper, maybe_failed: ir.Value, index: int) -> None:
    """After PyLong_As*: if it returned -1 and set an error (overflow), clear it and take the slow path."""
    b = w.b
    with b.if_then(maybe_failed, likely=False):
        err = w.py("PyErr_Occurred", I8P, [])
        with b.if_then(b.icmp_unsigned("!=", err, ir.Constant(I8P, None))):
            w.py("PyErr_Clear", ir.VoidType(), [])
            w.slow(index)


# ---------------------------------------------------------------- the allocator given to the native entry

def _alloc_function(module: ir.Module, name: str, n_out: int) -> ir.Function:
    """Internal ``i32 alloc(rt, slot, out, type_num, ndim, shape)`` making a C-contiguous ndarray (layouts).

    A large output (slot < n_out) is a view of a recycled buffer (ir/output_reuse.py).
    """
    existing = module.globals.get(f"{name}.alloc")
    if existing is not None:
        return existing
    fn = ir.Function(module, L.alloc_fn_type(), f"{name}.alloc")
    fn.linkage = "internal"
    raw_rt, slot, out, tnum, ndim, shape = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = LowerContext(b)
    rt = b.bitcast(raw_rt, L.runtime_struct().as_pointer())
    flags = b.load(b.gep(rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True))
    nogil = b.icmp_unsigned("!=", b.and_(flags, I64(L.RT_FLAG_GIL_RELEASED)), I64(0))
    gil_state = ctx.alloca(I32, name="gil_state")
    with b.if_then(nogil, likely=False):
        b.store(ctx.call_external("PyGILState_Ensure", ir.FunctionType(I32, []), []), gil_state)
    result = ctx.alloca(I8P, name="array")

    def fresh() -> None:
        descr = ctx.call_external("gj_PyArray_DescrFromType", ir.FunctionType(I8P, [I32]), [tnum])
        empty_ty = ir.FunctionType(I8P, [I32, I64P, I8P, I32])
        with b.if_else(b.icmp_unsigned("==", descr, ir.Constant(I8P, None))) as (no_descr, has_descr):
            with no_descr:
                b.store(ir.Constant(I8P, None), result)
            with has_descr:
                b.store(ctx.call_external("gj_PyArray_Empty", empty_ty, [ndim, shape, descr, I32(0)]), result)

    if n_out:
        with b.if_else(_large_output(ctx, slot, n_out, ndim, shape)) as (large, ordinary):
            with large:
                b.store(b.call(recycle_function(module, name, n_out), [slot, tnum, ndim, shape]), result)
            with ordinary:
                fresh()
    else:
        fresh()
    arr = b.load(result)
    with b.if_then(nogil, likely=False):
        ctx.call_external("PyGILState_Release", ir.FunctionType(ir.VoidType(), [I32]), [b.load(gil_state)])
    with b.if_then(b.icmp_unsigned("==", arr, ir.Constant(I8P, None)), likely=False):
        err = b.gep(rt, [I32(0), I32(L.RT_ERROR), I32(L.ERR_CODE)], inbounds=True)
        b.store(I32(GJ_ERR_PYTHON), err)
        b.ret(I32(GJ_ERR_PYTHON))
    slots = b.load(b.gep(rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
    b.store(arr, b.gep(slots, [slot], inbounds=True))
    _fill_allocated(b, ctx, arr, out, ndim)
    b.ret(I32(GJ_OK))
    return fn


def _large_output(ctx: LowerContext, slot: ir.Value, n_out: int, ndim: ir.Value, shape: ir.Value) -> ir.Value:
    """i1: slot is an output of at least OUTPUT_REUSE_MIN_BYTES / 8 items (the threshold's only use)."""
    b = ctx.builder
    count = ctx.alloca(I64, name="count")
    b.store(I64(1), count)
    with ctx.for_range(b.sext(ndim, I64), name="sz") as d:
        b.store(b.mul(b.load(count), b.load(b.gep(shape, [d], inbounds=True))), count)
    big = b.icmp_signed(">=", b.load(count), I64(OUTPUT_REUSE_MIN_BYTES // 8))
    return b.and_(b.icmp_unsigned("<", slot, I32(n_out)), big)


def _fill_allocated(b: ir.IRBuilder, ctx: LowerContext, arr: ir.Value, out: ir.Value, ndim: ir.Value) -> None:
    """Write {NULL, arr, nitems, itemsize, data, shape[ndim], strides[ndim]} at out (generic in ndim)."""
    off = L.PYARRAY_OFFSETS
    descr = load_field(b, arr, off["descr"], I8P)
    dims = load_field(b, arr, off["dimensions"], I64P)
    strides = load_field(b, arr, off["strides"], I64P)
    out64 = b.bitcast(out, I64P)                    # every field of the array struct is 8 bytes
    nd = b.sext(ndim, I64)
    nitems = ctx.alloca(I64, name="nitems")
    b.store(I64(1), nitems)
    with ctx.for_range(nd, name="d") as d:
        n = b.load(b.gep(dims, [d], inbounds=True))
        b.store(n, b.gep(out64, [b.add(d, I64(5))], inbounds=True))
        stride = b.load(b.gep(strides, [d], inbounds=True))
        b.store(stride, b.gep(out64, [b.add(b.add(d, I64(5)), nd)], inbounds=True))
        b.store(b.mul(b.load(nitems), n), nitems)
    values = [ir.Constant(I64, 0), b.ptrtoint(arr, I64), b.load(nitems),
              load_field(b, descr, L.DESCR_ELSIZE_OFFSET, I64), load_field(b, arr, off["data"], I64)]
    for i, v in enumerate(values):
        b.store(v, b.gep(out64, [I64(i)], inbounds=True))


# ---------------------------------------------------------------- errors and results

def _raise_error_record(w: Wrapper, rt: ir.Value) -> None:
    """Raise the exception rt->error describes (unless one is set already); current block returns NULL.

    The wording is Python's (errors.native_error asks the wrapper's owner), so the module holds no message.
    """
    b = w.b
    err = b.gep(rt, [I32(0), I32(L.RT_ERROR)], inbounds=True)
    rec = [b.load(b.gep(err, [I32(0), I32(i)], inbounds=True)) for i in range(7)]
    fields = [rec[L.ERR_CODE], rec[L.ERR_MSG], rec[L.ERR_NODE], rec[L.ERR_A], rec[L.ERR_B], rec[L.ERR_C]]
    null = ir.Constant(I8P, None)
    with b.if_then(b.icmp_signed("!=", fields[0], I32(GJ_ERR_PYTHON))):
        hook = b.bitcast(w.ctx.declare_global("gj_native_error"), I8P)
        call_ty = ir.FunctionType(I8P, [I8P, I8P], var_arg=True)
        fmt = cstring(w.fn.module, f"{w.name}.error_args", b"OiiiLLL\x00")
        result = b.call(w.ctx.declare("PyObject_CallFunction", call_ty), [hook, fmt, w.fn.args[0], *fields])
        w.py("Py_DecRef", ir.VoidType(), [result])     # NULL (it raised) unless a broken owner returned
    b.ret(null)


def release_slots(w: Wrapper, slots: ir.Value, first: int, stop: int) -> None:
    """Py_DecRef (NULL-safe) the owners in slots[first:stop]."""
    def release(s: ir.Value) -> None:
        obj = w.b.load(w.b.gep(slots, [I64(0), s], inbounds=True))
        w.py("Py_DecRef", ir.VoidType(), [obj])

    w.ctx.for_each(first, stop, release)


def _build_result(w: Wrapper, slots: ir.Value, n_out: int) -> None:
    """Return None, the single output, or a tuple of outputs (references move from the slots)."""
    b = w.b
    null = ir.Constant(I8P, None)
    outs = [b.load(b.gep(slots, [I32(0), I32(s)], inbounds=True)) for s in range(n_out)]
    if n_out == 0:
        none = w.sym("_Py_NoneStruct")
        w.py("Py_IncRef", ir.VoidType(), [none])
        b.ret(none)
        return
    missing = any_of(b, [b.icmp_unsigned("==", o, null) for o in outs])
    with b.if_then(missing, likely=False):
        release_slots(w, slots, 0, n_out)
        msg = cstring(w.fn.module, f"{w.name}.unallocated", b"graphjit: native entry left an output unset\x00")
        exc = b.load(b.bitcast(w.ctx.declare_global("gj_PyExc_RuntimeError"), PYOBJ_PP))
        w.py("PyErr_SetString", ir.VoidType(), [exc, msg])
        b.ret(null)
    if n_out == 1:
        b.ret(outs[0])
        return
    tup = w.py("PyTuple_New", I8P, [I64(n_out)])
    with b.if_then(b.icmp_unsigned("==", tup, null), likely=False):
        release_slots(w, slots, 0, n_out)
        b.ret(null)
    for i, o in enumerate(outs):
        b.store(o, field_ptr(b, tup, L.PYTUPLE_ITEMS_OFFSET + 8 * i, I8P))
    b.ret(tup)


# ---------------------------------------------------------------- the wrapper

def build_python_wrapper(module: ir.Module, native_entry: ir.Function, arg_specs: Sequence[ArgSpec],
                         out_specs: Sequence[ArgSpec], *, release_gil: bool = False, n_temp_slots: int = 0,
                         name: str = "pywrap",
                         gil_min_items: int = 0, distinct: Sequence[tuple[int, int]] = ()) -> ir.Function:
    """Emit ``PyObject* <prefix><name>(self, args, nargs, kwnames)`` around native_entry; see the module doc.

    With release_gil and gil_min_items > 0 the GIL is released only when some array argument has at least
    that many elements (releasing costs more than a small kernel).  distinct: pairs (i, j) of array arguments
    whose memory must not overlap (i is overwritten by the entry): when they do, argument i takes the slow path.
    """
    ensure_runtime()
    n_in, n_out = len(arg_specs), len(out_specs)
    w = Wrapper(module, name, n_out + n_temp_slots)
    b = w.b
    no_kwargs = b.icmp_unsigned("==", w.fn.args[3], ir.Constant(PYOBJ_PP, None))
    w.check(b.and_(b.icmp_signed("==", w.nargs, I64(n_in)), no_kwargs), -1)
    objs = [b.load(b.gep(w.fn.args[1], [I64(i)], inbounds=True), name=f"arg{i}.obj") for i in range(n_in)]
    slots = emit_native_call(w, native_entry, objs, arg_specs, out_specs, release_gil=release_gil,
                             gil_min_items=gil_min_items, distinct=distinct)
    _build_result(w, slots, n_out)
    return w.fn


Unbox = Callable[["Wrapper", ir.Value, ArgSpec, int], ir.Value]
UNBOX: dict[str, Unbox] = {"array": unbox_array, "scalar": _unbox_scalar, "object": unbox_object}


def emit_native_call(w: Wrapper, native_entry: ir.Function, objs: Sequence[ir.Value], arg_specs: Sequence[ArgSpec],
                     out_specs: Sequence[ArgSpec], *, release_gil: bool = False, gil_min_items: int = 0,
                     distinct: Sequence[tuple[int, int]] = (), unbox: dict[int, Unbox] | None = None) -> ir.Value:
    """Unbox objs, call the native entry, raise its error; returns the slots, outputs first (new references).

    The builder is left where the entry succeeded, the temporaries' slots released.  unbox: per argument
    index, an unboxing function replacing its kind's.
    """
    b = w.b
    n_out = len(out_specs)
    in_ptrs = []
    for i, (obj, spec) in enumerate(zip(objs, arg_specs)):
        in_ptrs.append((unbox or {}).get(i, UNBOX[spec.kind])(w, obj, spec, i))
    for i, j in distinct:
        w.check(b.not_(overlap(b, in_ptrs[i], in_ptrs[j], arg_specs[i].ndim, arg_specs[j].ndim)), i)
    out_ptrs = [w.ctx.alloca(spec.layout(), name=f"out{j}") for j, spec in enumerate(out_specs)]
    slots = w.ctx.alloca(ir.ArrayType(I8P, max(w.n_slots, 1)), name="slots")
    w.ctx.for_each(0, w.n_slots, lambda s: w.b.store(ir.Constant(I8P, None), w.b.gep(slots, [I64(0), s])))
    rt = _init_runtime(w, slots, release_gil, n_out)
    if release_gil and gil_min_items > 0:
        big = _any_large(w, in_ptrs, arg_specs, gil_min_items)
        flags_ptr = b.gep(rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True)
        py = L.RT_FLAG_PY_SLOTS
        b.store(b.select(big, I64(L.RT_FLAG_GIL_RELEASED | py), I64(py)), flags_ptr)
        with b.if_else(big) as (nogil, gil):
            with nogil:
                released = _call_native(w, native_entry, [rt, *in_ptrs, *out_ptrs], True)
                nogil_block = b.block
            with gil:
                held = _call_native(w, native_entry, [rt, *in_ptrs, *out_ptrs], False)
                gil_block = b.block
        status = b.phi(I32, name="status")
        status.add_incoming(released, nogil_block)
        status.add_incoming(held, gil_block)
    else:
        status = _call_native(w, native_entry, [rt, *in_ptrs, *out_ptrs], release_gil)
    failed = b.append_basic_block("native_failed")
    done = b.append_basic_block("native_ok")
    set_weights(b.cbranch(b.icmp_signed("!=", status, I32(0)), failed, done), UNLIKELY)
    b.position_at_end(failed)
    release_slots(w, slots, 0, w.n_slots)
    if w.on_exit is not None:
        w.on_exit()
    _raise_error_record(w, rt)
    b.position_at_end(done)
    release_slots(w, slots, n_out, w.n_slots)
    return slots


def _any_large(w: Wrapper, in_ptrs: list, specs: Sequence[ArgSpec], threshold: int) -> ir.Value:
    """i1: some array argument has at least threshold elements."""
    b = w.b
    big = ir.Constant(ir.IntType(1), 0)
    for ptr, spec in zip(in_ptrs, specs):
        if spec.kind == "array" and spec.ndim > 0:
            nitems = b.load(b.gep(ptr, [I32(0), I32(L.FIELD_INDEX["nitems"])], inbounds=True))
            big = b.or_(big, b.icmp_signed(">=", nitems, I64(threshold)))
    return big


def _init_runtime(w: Wrapper, slots: ir.Value, release_gil: bool, n_out: int) -> ir.Value:
    b = w.b
    rt = w.ctx.alloca(L.runtime_struct(), name="rt")
    alloc = _alloc_function(w.fn.module, ALLOCATOR_OWNER, n_out)    # one per module (and one output cache)
    b.store(alloc, b.gep(rt, [I32(0), I32(L.RT_ALLOC)], inbounds=True))
    b.store(b.gep(slots, [I32(0), I32(0)], inbounds=True), b.gep(rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
    b.store(I64((L.RT_FLAG_GIL_RELEASED if release_gil else 0) | L.RT_FLAG_PY_SLOTS),
            b.gep(rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True))
    b.store(I32(GJ_OK), b.gep(rt, [I32(0), I32(L.RT_ERROR), I32(L.ERR_CODE)], inbounds=True))
    return rt


def _call_native(w: Wrapper, native_entry: ir.Function, args: list[ir.Value], release_gil: bool) -> ir.Value:
    b = w.b
    expected = [a.type for a in args]
    if list(native_entry.function_type.args) != expected:
        raise TypeError(f"native entry takes {native_entry.function_type}, the specs give {expected}")
    if not release_gil:
        return b.call(native_entry, args, name="status")
    tstate = w.py("PyEval_SaveThread", I8P, [])
    status = b.call(native_entry, args, name="status")
    w.py("PyEval_RestoreThread", ir.VoidType(), [tstate])
    return status
