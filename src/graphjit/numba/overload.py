"""graphjit -> numba: a compiled Function called from ``@numba.njit`` code through its native entry.

A Function is typed by numba as a ``GraphjitFunctionType`` (one interned type per compiled module and
argument layout). Calling it inside njit code emits a direct call to the native entry
``i32 entry(gj_runtime*, in*..., out*...)`` (``graphjit/link/llvm/ir/layouts.py``): numba's arrays already have
the entry's layout, so they are passed by pointer to a stack copy of the struct, with no data copy. Outputs
are allocated through ``rt->alloc`` by a small allocator (compiled once by graphjit) that makes NRT meminfo
arrays, so numba owns what the Function returns. Errors recorded by the entry become numba exceptions.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np
from llvmlite import ir

from graphjit.link.llvm.jit import binding as _binding
from graphjit.compile.compiled_function import Function
from graphjit.link.llvm.jit import forking
from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.errors import EXCEPTIONS
from graphjit.link.llvm.jit.compiler import get_compiler
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.ir.modules import exported_name, new_module, symbol_prefix
from graphjit.link.llvm.jit.symbols import provide
from graphjit.tensor.random import RandomGeneratorType, RandomVariable

from numba import types
from numba.core import cgutils, errors, typing
from numba.core.imputils import lower_builtin, lower_constant
from numba.extending import NativeValue, models, register_model, typeof_impl, unbox
from numba.np.numpy_support import as_dtype, from_dtype



class GraphjitFunctionType(types.Callable):
    """The numba type of one compiled graphjit Function (its module, specs and output packing)."""

    def __init__(self, key: tuple, native: Any, unpack_single: bool, reason: str | None, label: str,
                 arg_names: tuple = (), generators: tuple = (), n_user_out: int | None = None) -> None:
        self._key = key
        self.native = native                # NativeInfo (keeps the compiled library alive), None if unusable
        self.unpack_single = unpack_single
        self.arg_names = arg_names          # how error messages name each argument
        self.reason = reason                # why numba cannot call it (None when it can)
        # the storage cells (one-element lists) of the shared generators the draws advance in place: the call
        # reads the generator each holds at that moment (set_value and RandomStream.seed replace it)
        self.generators = generators
        self.n_args = len(arg_names)
        self.n_user_out = len(native.out_specs) if n_user_out is None and native is not None else (n_user_out or 0)
        super().__init__(name=f"graphjit.Function({label})")

    @property
    def key(self) -> tuple:
        """Identity for numba's type interning."""
        return self._key

    def get_call_type(self, context: Any, args: Sequence[types.Type], kws: dict) -> typing.Signature:
        """Check the argument types against the Function's inputs; the return type mirrors its outputs."""
        if self.reason is not None:
            raise errors.TypingError(f"{self.name} cannot be called from numba: {self.reason}")
        if kws:
            raise errors.TypingError(f"{self.name}: keyword arguments are not supported in numba code")
        specs = self.native.in_specs[:self.n_args]
        if len(args) != len(specs):
            raise errors.TypingError(f"{self.name} takes {len(specs)} arguments, got {len(args)}")
        for k, (arg, spec) in enumerate(zip(args, specs)):
            problem = _arg_problem(arg, spec)
            if problem:
                raise errors.TypingError(f"{self.name}, argument {k}: {problem}")
        outs = [types.Array(from_dtype(np.dtype(s.dtype)), s.ndim, "C") for s in self.native.out_specs[:self.n_user_out]]
        ret = outs[0] if self.unpack_single else types.Tuple(outs) if outs else types.none
        return typing.signature(ret, *args)

    def get_call_signatures(self) -> tuple[list, bool]:
        """No fixed signature list: any argument types are checked by get_call_type."""
        return [], True

    def get_impl_key(self, sig: typing.Signature) -> GraphjitFunctionType:
        """Lowering is registered per type instance (it holds the entry's address)."""
        return self


def _arg_problem(arg: types.Type, spec: Any) -> str | None:
    """Why a numba argument type does not fit an ArgSpec of the native entry (None if it does)."""
    want = np.dtype(spec.dtype)
    if isinstance(arg, types.Array):
        if arg.ndim != spec.ndim or as_dtype(arg.dtype) != want:
            return f"expected a {spec.ndim}-d array of {want}, got {arg}"
        return None
    if spec.ndim == 0 and isinstance(arg, (types.Number, types.Boolean)):
        src = as_dtype(arg)
        if np.can_cast(src, want, "safe") or (src.kind in "iub" and want.kind == "f"):
            return None
        return f"a {arg} cannot be passed as a {want} scalar without loss (cast it first)"
    return f"expected {'a scalar or ' if spec.ndim == 0 else ''}a {spec.ndim}-d array of {want}, got {arg}"


register_model(GraphjitFunctionType)(models.OpaqueModel)


@unbox(GraphjitFunctionType)
def _unbox_function(typ: GraphjitFunctionType, obj: Any, c: Any) -> NativeValue:
    """A Function passed as an argument carries no runtime data: its type holds everything."""
    return NativeValue(c.context.get_dummy_value())


@lower_constant(GraphjitFunctionType)
def _constant_function(context: Any, builder: Any, ty: GraphjitFunctionType, pyval: Any) -> Any:
    """A Function captured as a global: likewise a dummy value."""
    return context.get_dummy_value()


_TYPES: dict[tuple, GraphjitFunctionType] = {}
_TYPES_LOCK = threading.Lock()


def function_type(fn: Any) -> GraphjitFunctionType:
    """The numba type of a compiled Function (interned; lowering registered on first creation)."""
    native = fn.native
    reason = _unsupported_reason(fn)
    explicit = [spec for spec in fn.maker.inputs if not spec.implicit]
    arg_names = tuple(_arg_name(k, spec.variable) for k, spec in enumerate(explicit))
    generators = tuple(spec.value.storage for spec in fn.maker.inputs if spec.implicit)
    n_user_out = len(fn.maker.fgraph.outputs) - len(fn.maker.fgraph.update_mapping)
    if reason is None:
        key = ("graphjit", native.cache_key, native.entry_address, fn.unpack_single, arg_names,
               tuple(id(cell) for cell in generators))
    else:
        key = ("graphjit-unsupported", id(fn), reason)
        native = None
    with _TYPES_LOCK:
        ty = _TYPES.get(key)
        if ty is None:
            ty = GraphjitFunctionType(key, native, fn.unpack_single, reason, fn.name or "", arg_names,
                                      generators, n_user_out)
            if native is not None:
                lower_builtin(ty, types.VarArg(types.Any))(_lowering_of(ty))
            _TYPES[key] = ty
    return ty


def _arg_name(k: int, var: Any) -> str:
    return f"argument {k} ({var.name!r})" if var.name else f"argument {k}"


def _unsupported_reason(fn: Any) -> str | None:
    """Why numba cannot call fn directly (None when it can)."""
    native = fn.native
    if native is None:
        return f"it was not compiled by the LLVM linker (mode {fn.maker.mode}); use mode='FAST_RUN'"
    if native.fallback_nodes:
        return (f"its graph calls back into Python for {len(native.fallback_nodes)} node(s) without a "
                f"lowering ({native.fallback_nodes[0]})")
    if any(spec.implicit for spec in fn.maker.inputs) and not _only_inplace_generators(fn):
        kind = "updates shared variables" if fn.maker.fgraph.update_mapping else "reads shared variables"
        return (f"it {kind}; pass their values as explicit inputs (numba code cannot hold graphjit state; only "
                "random generators that its draws advance in place can be shared)")
    n_explicit = sum(not spec.implicit for spec in fn.maker.inputs)
    n_user_out = len(fn.maker.fgraph.outputs) - len(fn.maker.fgraph.update_mapping)
    if any(s.kind != "array" for s in native.in_specs[:n_explicit] + native.out_specs[:n_user_out]):
        return "it has non-tensor inputs or outputs"
    if any(o.borrow for o in fn.maker.outputs):
        return "it has borrowed outputs (Out(borrow=True))"
    return None


def _only_inplace_generators(fn: Any) -> bool:
    """Every shared input is a random generator updated by an inplace draw of it (so the update is the same
    object, advanced: nothing to write back)."""
    fgraph = fn.maker.fgraph
    implicit = {k for k, spec in enumerate(fn.maker.inputs) if spec.implicit}
    updated = {}
    for out, k in fgraph.update_mapping.items():
        node = fgraph.outputs[out].owner
        ok = (node is not None and isinstance(node.op, RandomVariable) and node.op.inplace
              and node.inputs[0] is fgraph.inputs[k] and fgraph.outputs[out] is node.outputs[0])
        updated[k] = ok
    return all(isinstance(fgraph.inputs[k].type, RandomGeneratorType) and updated.get(k, False) for k in implicit)


@typeof_impl.register(Function)
def _typeof_function(val: Any, c: Any) -> GraphjitFunctionType:
    return function_type(val)


# ---------------------------------------------------------------- lowering of a call

def _lowering_of(fnty: GraphjitFunctionType) -> Any:
    """The lowering registered for one Function type (numba gives the impl the signature, not the callee)."""

    def lower(context: Any, builder: ir.IRBuilder, sig: typing.Signature, args: Sequence[ir.Value]) -> Any:
        return _lower_call(fnty, context, builder, sig, args)

    return lower


def _lower_call(fnty: GraphjitFunctionType, context: Any, builder: ir.IRBuilder, sig: typing.Signature,
                args: Sequence[ir.Value]) -> Any:
    """Emit one call of the native entry: arguments by pointer, NRT outputs, errors as numba exceptions."""
    native = fnty.native
    n_out, n_slots = len(native.out_specs), len(native.out_specs) + native.n_temp_slots
    in_ptrs = [_argument_pointer(context, builder, aty, val, spec, fnty.arg_names[k])
               for k, (aty, val, spec) in enumerate(zip(sig.args, args, native.in_specs))]
    in_ptrs += [_generator_slot(context, builder, cell) for cell in fnty.generators]
    out_tys = [types.Array(from_dtype(np.dtype(s.dtype)), s.ndim, "C") for s in native.out_specs[:fnty.n_user_out]]
    out_ptrs = [cgutils.alloca_once(builder, context.get_value_type(t)) for t in out_tys]
    out_ptrs += [cgutils.alloca_once(builder, I8P) for _ in native.out_specs[fnty.n_user_out:]]
    slots = cgutils.alloca_once(builder, ir.ArrayType(I8P, max(n_slots, 1)))
    builder.store(ir.Constant(slots.type.pointee, None), slots)
    rt = _runtime_struct(context, builder, slots)
    entry_ty = ir.FunctionType(I32, [I8P] * (1 + len(in_ptrs) + n_out))
    # a dynamic address (numba then refuses to cache this code: the address is this process's only)
    entry = builder.bitcast(context.add_dynamic_addr(builder, native.entry_address, info="graphjit entry"),
                            entry_ty.as_pointer())
    status = builder.call(entry, [builder.bitcast(p, I8P) for p in [rt, *in_ptrs, *out_ptrs]])
    with cgutils.if_unlikely(builder, builder.icmp_signed("!=", status, I32(L.GJ_OK))):
        _release_slots(context, builder, slots, 0, n_slots)
        _raise_error(context, builder, rt, native.messages)
    _release_slots(context, builder, slots, n_out, n_slots)
    _release_generators(builder, slots, fnty.n_user_out, n_out)
    outs = [builder.load(p) for p in out_ptrs[:fnty.n_user_out]]
    if fnty.unpack_single:
        return outs[0]
    if not outs:
        return context.get_dummy_value()
    return context.make_tuple(builder, sig.return_type, outs)


_LIST_ITEMS_OFFSET = 24       # CPython's PyListObject: PyObject_VAR_HEAD, then PyObject **ob_item


def _generator_slot(context: Any, builder: ir.IRBuilder, cell: list) -> ir.Value:
    """A slot holding the generator a shared variable's storage cell holds now (borrowed: the cell keeps it)."""
    lst = context.add_dynamic_addr(builder, id(cell), info="graphjit shared generator")
    items = builder.load(builder.bitcast(builder.gep(lst, [I64(_LIST_ITEMS_OFFSET)]), I8P.as_pointer().as_pointer()))
    return cgutils.alloca_once_value(builder, builder.load(items))


def _release_generators(builder: ir.IRBuilder, slots: ir.Value, first: int, stop: int) -> None:
    """The entry returned each advanced generator as a new reference in its slot: drop it (numba holds the GIL)."""
    if first >= stop:
        return
    decref = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [I8P]), "Py_DecRef")
    for s in range(first, stop):
        obj = builder.load(builder.gep(slots, [I32(0), I32(s)], inbounds=True))
        with builder.if_then(cgutils.is_not_null(builder, obj)):
            builder.call(decref, [obj])


def _argument_pointer(context: Any, builder: ir.IRBuilder, aty: types.Type, val: ir.Value, spec: Any,
                      name: str) -> ir.Value:
    """A pointer to the argument in the entry's layout: numba's own array struct, or a 0-d array over a scalar."""
    if isinstance(aty, types.Array):
        ptr = cgutils.alloca_once_value(builder, val)
        _check_static_shape(context, builder, ptr, spec, name)
        return ptr
    want = from_dtype(np.dtype(spec.dtype))
    scalar = context.cast(builder, val, aty, want)
    cell = cgutils.alloca_once(builder, L.llvm_scalar_type(spec.dtype))
    builder.store(context.data_model_manager[want].as_data(builder, scalar), cell)
    struct_ty = L.array_struct_literal(spec.dtype, 0)   # in numba's module: no named types
    fields = [ir.Constant(I8P, None), ir.Constant(I8P, None), I64(1), I64(L.itemsize(spec.dtype)), cell,
              ir.Constant(struct_ty.elements[5], None), ir.Constant(struct_ty.elements[6], None)]
    value = ir.Constant(struct_ty, ir.Undefined)
    for i, f in enumerate(fields):
        value = builder.insert_value(value, f, i)
    return cgutils.alloca_once_value(builder, value)


def _check_static_shape(context: Any, builder: ir.IRBuilder, ptr: ir.Value, spec: Any, name: str) -> None:
    """Each dim with a declared static length must have it (the entry relies on it): else a TypeError, as
    the Function raises outside numba."""
    for d, n in enumerate(spec.shape):
        if n is None:
            continue
        got = builder.load(builder.gep(ptr, [I32(0), I32(L.FIELD_INDEX["shape"]), I32(d)], inbounds=True))
        with cgutils.if_unlikely(builder, builder.icmp_signed("!=", got, I64(n))):
            context.call_conv.return_user_exc(
                builder, TypeError, (f"graphjit Function, {name}: expected length {n} in dimension {d} "
                                     "(declared by its type)",))


def _runtime_struct(context: Any, builder: ir.IRBuilder, slots: ir.Value) -> ir.Value:
    """A gj_runtime on the stack whose allocator makes NRT arrays; flags 0, error code GJ_OK."""
    rt = cgutils.alloca_once(builder, L.runtime_struct_literal())
    alloc = builder.bitcast(context.add_dynamic_addr(builder, numba_allocator_address(), info="graphjit alloc"),
                            L.alloc_fn_type().as_pointer())
    builder.store(alloc, builder.gep(rt, [I32(0), I32(L.RT_ALLOC)], inbounds=True))
    first = builder.gep(slots, [I32(0), I32(0)], inbounds=True)
    builder.store(first, builder.gep(rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
    builder.store(I64(0), builder.gep(rt, [I32(0), I32(L.RT_FLAGS)], inbounds=True))
    builder.store(I32(L.GJ_OK), builder.gep(rt, [I32(0), I32(L.RT_ERROR), I32(L.ERR_CODE)], inbounds=True))
    return rt


def _release_slots(context: Any, builder: ir.IRBuilder, slots: ir.Value, first: int, stop: int) -> None:
    """Drop the NRT references held in slots[first:stop] (NULL-safe)."""
    for s in range(first, stop):
        mi = builder.load(builder.gep(slots, [I32(0), I32(s)], inbounds=True))
        with builder.if_then(cgutils.is_not_null(builder, mi)):
            context.nrt.decref(builder, types.MemInfoPointer(types.voidptr), mi)


def _raise_error(context: Any, builder: ir.IRBuilder, rt: ir.Value, messages: Sequence[str]) -> None:
    """Raise the exception the error record names, with its message-table text (values shown as '?')."""
    err = builder.gep(rt, [I32(0), I32(L.RT_ERROR)], inbounds=True)
    code = builder.load(builder.gep(err, [I32(0), I32(L.ERR_CODE)], inbounds=True))
    msg = builder.load(builder.gep(err, [I32(0), I32(L.ERR_MSG)], inbounds=True))
    fn = builder.function
    default = fn.append_basic_block("gj.error.generic")
    cases = []
    for exc_code, exc in [*EXCEPTIONS.items(), (L.GJ_ERR_PYTHON, MemoryError)]:
        per_code = fn.append_basic_block(f"gj.error.code{exc_code}")
        cases.append((exc_code, exc, per_code))
    switch = builder.switch(code, default)
    for exc_code, exc, block in cases:
        switch.add_case(I32(exc_code), block)
        builder.position_at_end(block)
        _raise_message(context, builder, exc, msg, messages)
    builder.position_at_end(default)
    context.call_conv.return_user_exc(builder, RuntimeError, ("graphjit Function: native error",))


def _raise_message(context: Any, builder: ir.IRBuilder, exc: type, msg: ir.Value, messages: Sequence[str]) -> None:
    """Switch on the message index; each case raises exc with that (static) message."""
    fn = builder.function
    fallback = fn.append_basic_block("gj.error.nomsg")
    switch = builder.switch(msg, fallback)
    for i, text in enumerate(messages):
        block = fn.append_basic_block(f"gj.error.msg{i}")
        switch.add_case(I32(i), block)
        builder.position_at_end(block)
        clean = text.replace("%lld", "?").replace("%%", "%")
        context.call_conv.return_user_exc(builder, exc, (f"graphjit Function: {clean}",))
    builder.position_at_end(fallback)
    context.call_conv.return_user_exc(builder, exc, ("graphjit Function: error in the native entry",))


# ---------------------------------------------------------------- the NRT allocator (compiled once by graphjit)

_ALLOCATOR: list = []                 # [address, the NativeLibrary that holds it]
_ALLOCATOR_LOCK = threading.Lock()
forking.register(lambda: _ALLOCATOR_LOCK, forking.RANK_COMPILER - 1)     # held around a compile
_ITEMSIZE_BY_TYPE_NUM = [np.dtype(c).itemsize if c else 0 for c in
                         ["?", "b", "B", "h", "H", "i", "I", "l", "L", "q", "Q", "f", "d"]]


def numba_allocator_address() -> int:
    """Address of ``i32 alloc(rt, slot, out, type_num, ndim, shape)`` making C-contiguous NRT arrays."""
    if not _ALLOCATOR:
        with _ALLOCATOR_LOCK:
            if not _ALLOCATOR:
                publish_nrt()
                lib = get_compiler().compile(_allocator_module())
                # the library is kept with the address: its code lives as long as the NativeLibrary
                _ALLOCATOR.extend([lib.get_address("numba_alloc"), lib])
    return _ALLOCATOR[0]


_NRT_HELPERS = ("MemInfo_alloc_safe_aligned", "MemInfo_data", "MemInfo_release")


def publish_nrt() -> None:
    """Publish numba's NRT allocation entry points under gj_ names (the IR holds no addresses)."""
    from numba.core.runtime import _nrt_python
    for name in _NRT_HELPERS:
        _binding.add_symbol("gj_NRT_" + name, _nrt_python.c_helpers[name])


for _name in _NRT_HELPERS:
    provide("gj_NRT_" + _name, publish_nrt)     # re-published on cache hits that skip lowering (jit/symbols.py)


def _allocator_module() -> ir.Module:
    """The module of <prefix>numba_alloc (see layouts.alloc_fn_type): NRT meminfo, C strides, slot = meminfo
    (a meminfo already in the slot is released first)."""
    module = new_module(symbol_prefix("graphjit_numba_alloc"), name="graphjit_numba_alloc")
    fn = ir.Function(module, L.alloc_fn_type(), exported_name(module, "numba_alloc"))
    raw_rt, slot, out, tnum, ndim, shape = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    table_ty = ir.ArrayType(I64, len(_ITEMSIZE_BY_TYPE_NUM))
    table = ir.GlobalVariable(module, table_ty, "itemsizes")
    table.linkage, table.global_constant = "private", True
    table.initializer = ir.Constant(table_ty, _ITEMSIZE_BY_TYPE_NUM)
    known = b.icmp_unsigned("<", tnum, I32(len(_ITEMSIZE_BY_TYPE_NUM)))
    index = b.select(known, tnum, I32(0))
    size = b.select(known, b.load(b.gep(table, [I32(0), index], inbounds=True)), I64(1))
    out64 = b.bitcast(out, L.I64P)
    nd = b.sext(ndim, I64)
    nitems = _shape_and_strides(b, out64, shape, nd, size)
    alloc_ty = ir.FunctionType(I8P, [I64, I32])
    alloc = ir.Function(module, alloc_ty, "gj_NRT_MemInfo_alloc_safe_aligned")
    mi = b.call(alloc, [b.mul(nitems, size), I32(64)])
    rt = b.bitcast(raw_rt, L.runtime_struct().as_pointer())
    with b.if_then(b.icmp_unsigned("==", mi, ir.Constant(I8P, None)), likely=False):
        b.store(I32(L.GJ_ERR_MEMORY), b.gep(rt, [I32(0), I32(L.RT_ERROR), I32(L.ERR_CODE)], inbounds=True))
        b.store(I32(-1), b.gep(rt, [I32(0), I32(L.RT_ERROR), I32(L.ERR_MSG)], inbounds=True))
        b.ret(I32(L.GJ_ERR_MEMORY))
    data = b.call(ir.Function(module, ir.FunctionType(I8P, [I8P]), "gj_NRT_MemInfo_data"), [mi])
    slots = b.load(b.gep(rt, [I32(0), I32(L.RT_SLOTS)], inbounds=True))
    cell = b.gep(slots, [slot], inbounds=True)
    old = b.load(cell)
    # a slot allocated again holds the buffer that became too small (a scan's scratch growing mid-call): the
    # slot owned it and nothing else refers to it
    with b.if_then(b.icmp_unsigned("!=", old, ir.Constant(I8P, None)), likely=False):
        b.call(ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P]), "gj_NRT_MemInfo_release"), [old])
    b.store(mi, cell)
    for i, v in enumerate([b.ptrtoint(mi, I64), I64(0), nitems, size, b.ptrtoint(data, I64)]):
        b.store(v, b.gep(out64, [I64(i)], inbounds=True))
    b.ret(I32(L.GJ_OK))
    return module


def _shape_and_strides(b: ir.IRBuilder, out64: ir.Value, shape: ir.Value, nd: ir.Value, size: ir.Value) -> ir.Value:
    """Write shape[d] and C-order strides into the struct at out64 (fields 5.. and 5+nd..); returns nitems."""
    entry = b.block
    loop = b.append_basic_block("dims")
    done = b.append_basic_block("dims.done")
    b.cbranch(b.icmp_signed(">", nd, I64(0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(I64, "i")
    stride = b.phi(I64, "stride")
    d = b.sub(b.sub(nd, I64(1)), i)
    n = b.load(b.gep(shape, [d], inbounds=True))
    b.store(n, b.gep(out64, [b.add(d, I64(5))], inbounds=True))
    b.store(stride, b.gep(out64, [b.add(b.add(d, I64(5)), nd)], inbounds=True))
    next_i, next_stride = b.add(i, I64(1)), b.mul(stride, n)
    i.add_incoming(I64(0), entry)
    i.add_incoming(next_i, loop)
    stride.add_incoming(size, entry)
    stride.add_incoming(next_stride, loop)
    b.cbranch(b.icmp_signed("<", next_i, nd), loop, done)
    b.position_at_end(done)
    total = b.phi(I64, "total")
    total.add_incoming(size, entry)
    total.add_incoming(next_stride, loop)
    return b.udiv(total, size)
