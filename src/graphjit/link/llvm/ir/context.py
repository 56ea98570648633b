"""LowerContext: the IR-building helpers ops and the linker lower through (loops, array access, calls, errors).

Arrays are handled as pointers to numba's array struct (layouts.array_struct); struct values also work for the
field readers.  A native entry receives the runtime struct (layouts.runtime_struct) as its first argument; the
context keeps it to report errors (``error_if``/``return_error``) and to allocate outputs (``allocate_array``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

from llvmlite import ir
from llvmlite.ir.instructions import CallInstrAttributes

from graphjit.link.llvm.jit import binding as _binding, compiler as _compiler
from graphjit.config import config
from graphjit.graph.basic import Apply

from graphjit.link.llvm.ir import fastmath, layouts
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.ir.modules import exported_name

_INTRINSIC_MATH = frozenset({"sqrt", "fabs", "exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos",
                             "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "pow", "floor", "ceil",
                             "trunc", "rint", "round", "copysign", "minnum", "maxnum", "fma"})
_LIBMVEC = frozenset({"acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cos", "cosh", "erf", "erfc",
                      "exp", "exp10", "exp2", "expm1", "log", "log10", "log1p", "log2", "sin", "sinh", "tan",
                      "tanh", "atan2", "hypot", "pow"})
VECTOR_REGISTER_BYTES = {"b": 16, "c": 32, "d": 32, "e": 64}     # of each x86 VFABI ISA letter
_VARIANTS_ATTR = "_gj_vector_variants"
# intrinsics LLVM lowers on vectors without library calls (the others go to their libmvec variants)
_NATIVE_VECTOR_MATH = frozenset({"sqrt", "fabs", "floor", "ceil", "trunc", "rint", "round", "copysign", "minnum",
                                 "maxnum", "fma"})


class ScalarOnly(Exception):
    """Raised while emitting a body on vectors that has no vector form (loops/vector_body.py catches it: the
    kernel is then built scalar).  Never reaches a user."""


class SplatConstant(ir.Constant):
    """A vector constant of one value in every lane, printed ``splat (T v)``: a body's constants in vector
    kernels would otherwise print each lane (most of their IR text, which is printed and hashed per compile)."""

    def __init__(self, typ: ir.VectorType, element: ir.Constant) -> None:
        super().__init__(typ, element.constant)
        self.element = element

    def _get_reference(self) -> str:
        return f"splat ({self.element})"


def compact(v: ir.Value) -> ir.Value:
    """v, or the SplatConstant of it when it is a vector constant of one value in every lane."""
    if type(v) is not ir.Constant or not isinstance(v.type, ir.VectorType) or not isinstance(v.constant, list):
        return v
    first = v.constant[0]
    if not isinstance(first, ir.Constant) or first.constant is ir.Undefined or first.constant is None:
        return v
    ref = first.get_reference()
    if any(c.get_reference() != ref for c in v.constant[1:]):
        return v
    return SplatConstant(v.type, first)


def splat(b: ir.IRBuilder, v: ir.Value, lanes: int) -> ir.Value:
    """v (a scalar) in every lane of a vector."""
    vty = ir.VectorType(v.type, lanes)
    if isinstance(v, ir.Constant):
        return SplatConstant(vty, v)
    zero = SplatConstant(vty, ir.Constant(v.type, 0))
    one = b.insert_element(zero, v, I32(0))
    return b.shuffle_vector(one, zero, SplatConstant(ir.VectorType(I32, lanes), I32(0)))


class _CallAttributes(CallInstrAttributes):
    """Call-site attributes that also take LLVM string attributes written as '"key"="value"'."""

    def add(self, name: str) -> None:
        if name.startswith('"'):
            set.add(self, name)
        else:
            super().add(name)


def _mangle(ty: ir.Type) -> str:
    """The overload suffix of an LLVM intrinsic for a type (f64, f32, i64, v4f64)."""
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_mangle(ty.element)}"
    raise TypeError(f"no intrinsic mangling for {ty}")


def libmvec_variants(name: str, elem: ir.Type, nargs: int) -> Iterator[tuple[int, str]]:
    """(lanes, name) of each libmvec function computing libm's name on vectors of elem the host has, in the
    order of its vector ISAs (none if the vector library is not libmvec or name/elem has no variant)."""
    compiler = _compiler.get_compiler()
    if not compiler.vector_library.startswith("libmvec") or name not in _LIBMVEC:
        return
    if not isinstance(elem, (ir.FloatType, ir.DoubleType)):
        return
    suffix, width = ("f", 4) if isinstance(elem, ir.FloatType) else ("", 8)
    for isa in compiler.vector_isas:
        lanes = VECTOR_REGISTER_BYTES[isa] // width
        vname = f"_ZGV{isa}N{lanes}{'v' * nargs}_{name}{suffix}"
        if _binding.address_of_symbol(vname):
            yield lanes, vname


def vector_variant(name: str, elem: ir.Type, lanes: int, nargs: int) -> str | None:
    """The libmvec function computing libm's name on lanes elements of elem, as the vectoriser picks it (the
    first ISA of the host whose register holds them), or None."""
    return next((vname for vf, vname in libmvec_variants(name, elem, nargs) if vf == lanes), None)


def finish_module(module: ir.Module) -> None:
    """Keep the vector-math declarations alive (llvm.compiler.used); idempotent, called by compile()."""
    variants: dict[str, ir.Function] = getattr(module, _VARIANTS_ATTR, {})
    if not variants or "llvm.compiler.used" in module.globals:
        return
    fns = [variants[k] for k in sorted(variants)]
    arr_ty = ir.ArrayType(I8P, len(fns))
    used = ir.GlobalVariable(module, arr_ty, "llvm.compiler.used")
    used.linkage = "appending"
    used.section = "llvm.metadata"
    used.initializer = ir.Constant(arr_ty, [f.bitcast(I8P) for f in fns])


def define_native_entry(module: ir.Module, name: str, arg_layouts: Sequence[ir.Type],
                        out_layouts: Sequence[ir.Type]) -> tuple[ir.Function, LowerContext]:
    """Define ``i32 <prefix><name>(rt*, in*..., out*...)`` and a context positioned in its entry block."""
    fnty = layouts.native_entry_type(list(arg_layouts), list(out_layouts))
    fn = ir.Function(module, fnty, exported_name(module, name))
    for arg in fn.args[1:]:
        arg.add_attribute("noalias")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    return fn, LowerContext(builder, rt=fn.args[0])


def error_setter(module: ir.Module, rt_type: ir.Type) -> ir.Function:
    """``void gj.set_error(rt*, i32 code, i32 msg, i32 node, i64 a, i64 b, i64 c)`` of this module (cold)."""
    fn = module.globals.get("gj.set_error")
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [rt_type, I32, I32, I32, I64, I64, I64]),
                     "gj.set_error")
    fn.linkage = "internal"
    fn.attributes.add("cold")
    fn.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    err = b.gep(fn.args[0], [I32(0), I32(layouts.RT_ERROR)], inbounds=True)
    fields = [layouts.ERR_CODE, layouts.ERR_MSG, layouts.ERR_NODE, layouts.ERR_A, layouts.ERR_B, layouts.ERR_C]
    for index, value in zip(fields, fn.args[1:]):
        b.store(value, b.gep(err, [I32(0), I32(index)], inbounds=True))
    b.ret_void()
    return fn


GLUE_PREFIX = "glue."


def glue_function(module: ir.Module, name: str, fnty: ir.FunctionType,
                  build: Callable[[ir.Function], None]) -> ir.Function:
    """The internal function ``glue.<name>`` of module, built once by build(fn) and shared by every call site.

    Per-node glue that depends only on types (a SumToShape reduction, a matrix product's BLAS dispatch)
    lives here instead of being repeated inline at each node: the entry of a large graph stays small, and
    its size is most of the compile time.  They are compiled with the entry (light passes, see ir/modules.py).
    """
    full = GLUE_PREFIX + name
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, fnty, full)
        fn.linkage = "internal"
        build(fn)
    return fn


def _loop_id(module: ir.Module, interleave: int | None, unroll: bool | str, vectorize: bool) -> ir.MDValue:
    """A loop ID (self-referential metadata node) carrying an interleave count and/or "do not unroll/vectorise"
    (unroll="full": unroll completely, which the kernels' pipeline does only when asked)."""
    hints = []
    if not vectorize:
        hints.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.enable"),
                                          ir.IntType(1)(0)]))
    if interleave is not None:
        hints.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"),
                                          I32(interleave)]))
    if unroll == "full":
        hints.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.full")]))
    elif not unroll:
        hints.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")]))
    loop_id = module.add_metadata(hints)
    loop_id.operands = (loop_id,) + tuple(loop_id.operands)
    return loop_id


LIKELY = (1 << 20, 1)           # branch weights: the first successor is the usual one
UNLIKELY = (1, 1 << 20)         # ... the second is


def set_weights(branch: ir.Instruction, weights: tuple[int, int]) -> None:
    """Attach branch weights, one metadata node per module and weights (llvmlite's set_weights rebuilds and
    hashes the node at every branch: ~10 ms of a large graph's IR build)."""
    module = branch.module
    cache = module.__dict__.setdefault("_gj_branch_weights", {})
    node = cache.get(weights)
    if node is None:
        node = cache[weights] = module.add_metadata([ir.MetaDataString(module, "branch_weights"),
                                                     *(I32(w) for w in weights)])
    branch.set_metadata("prof", node)


TRUE = ir.Constant(ir.IntType(1), 1)


@contextlib.contextmanager
def at_block_end(b: ir.IRBuilder, block: ir.Block) -> Iterator[None]:
    """Build at the end of block (before its terminator), then at the end of the current block again: what
    ``b.goto_block(block)`` does, in O(1).  goto_block finds the terminator with list.index, a scan of the
    block; a large graph's entry allocates thousands of stack slots in its first block, which made building
    it quadratic (W9, N = 10000: ~5 s of 29)."""
    old = b.block
    n = len(block.instructions)
    if block.is_terminated and getattr(b, "_anchor", None) is not None:
        b.position_at_end(block)
        b._anchor = n - 1               # llvmlite's insertion index: before the terminator (always the last)
    elif block.is_terminated:
        b.position_before(block.terminator)
    else:
        b.position_at_end(block)
    try:
        yield
    finally:
        b.position_at_end(old)


_EXIT_ATTR = "_gj_exit"
_FIELD_PATHS: dict[tuple[int, int | None], list[ir.Constant]] = {}     # LowerContext.field's gep indices


def _exit_phi(b: ir.IRBuilder) -> ir.PhiInstr:
    """The status phi of the function being built's one failure exit (``fail: ret i32 phi``), made once."""
    fn = b.function
    phi = fn.__dict__.get(_EXIT_ATTR)
    if phi is None:
        exit_builder = ir.IRBuilder(fn.append_basic_block("fail"))
        phi = exit_builder.phi(I32, name="status")
        exit_builder.ret(phi)
        setattr(fn, _EXIT_ATTR, phi)
    return phi


def exit_with(b: ir.IRBuilder, status: ir.Value) -> None:
    """Return status (i32) from the function being built through its failure exit (the block is terminated).

    One exit block per function, a phi of the statuses, instead of a ``ret`` block per failing call: a large
    graph's entry had ~600 of them (two lines each, and an epilogue each in the machine code).
    """
    phi = _exit_phi(b)
    phi.add_incoming(status, b.block)
    b.branch(phi.parent)


def exit_if_failed(b: ir.IRBuilder, status: ir.Value, name: str = "ok") -> None:
    """If status (i32) is nonzero, return it from the function being built (through its failure exit);
    continue in a fresh block named name."""
    phi = _exit_phi(b)
    ok = b.append_basic_block(name)
    set_weights(b.cbranch(b.icmp_signed("!=", status, I32(0)), phi.parent, ok), UNLIKELY)
    phi.add_incoming(status, b.block)
    b.position_at_end(ok)


def is_true(cond: ir.Value) -> bool:
    """True if cond is the i1 constant true (a condition known when the IR is built)."""
    return isinstance(cond, ir.Constant) and cond.type == TRUE.type and cond.constant in (1, True)


def branch(b: ir.IRBuilder, cond: ir.Value, then: Callable[[], None], otherwise: Callable[[], None],
           likely: bool = True) -> None:
    """then() where cond holds, otherwise() elsewhere; only then() when cond is the constant true.

    Known facts (a buffer this entry allocated is C-contiguous) make layout checks constant: the general
    path is then not emitted at all (it is most of a large graph's glue).
    """
    if is_true(cond):
        then()
        return
    with b.if_else(cond, likely=likely) as (yes, no):
        with yes:
            then()
        with no:
            otherwise()


class LowerContext:
    """An ir.IRBuilder plus the helpers lowering needs; rt is the runtime struct pointer of the native entry."""

    array_struct = staticmethod(layouts.array_struct)
    llvm_scalar_type = staticmethod(layouts.llvm_scalar_type)
    current_node: Apply | None = None      # the node being lowered (the graph and kernel contexts set it)
    lanes = 0                              # > 0 while a scalar body is emitted on vectors of lanes (a kernel's)

    def __init__(self, builder: ir.IRBuilder, rt: ir.Value | None = None) -> None:
        self.builder = builder
        self.rt = rt

    def scalar_error_if(self, cond: ir.Value, exc: str, text: str) -> None:
        """If cond (i1), raise exc(text) for current_node: a scalar lowering's error (contexts lowering nodes
        implement it: lowering.GraphContext, loops.KernelContext)."""
        raise NotImplementedError(f"{type(self).__name__} reports no scalar errors")

    @property
    def module(self) -> ir.Module:
        """The module being built."""
        return self.builder.module

    @property
    def function(self) -> ir.Function:
        """The function being built."""
        return self.builder.function

    def alloca(self, ty: ir.Type, name: str = "") -> ir.AllocaInstr:
        """A stack slot in the function's entry block (so mem2reg promotes it)."""
        entry = self.builder.function.entry_basic_block
        with at_block_end(self.builder, entry):
            if entry.instructions:
                self.builder.position_before(entry.instructions[0])     # found at index 0: O(1)
            return self.builder.alloca(ty, name=name)

    # ---------------------------------------------------------------- loops
    @contextlib.contextmanager
    def for_range(self, stop: ir.Value, start: ir.Value | None = None, step: ir.Value | None = None,
                  name: str = "i", interleave: int | None = None, unroll: bool | str = True,
                  vectorize: bool = True) -> Iterator[ir.Value]:
        """Counted loop ``for i in range(start, stop, step)`` (step > 0) yielding the i64 index (a phi).

        interleave: the vectoriser's interleave count for this loop (``llvm.loop.interleave.count``);
        unroll=False: ``llvm.loop.unroll.disable`` (a short constant-trip loop whose full unrolling would
        multiply a large vectorised body, and its compile time, for no measurable gain), unroll="full":
        ``llvm.loop.unroll.full`` (a short loop of a constant trip count); vectorize=False:
        ``llvm.loop.vectorize.enable`` false (a short tail or a strided fallback not worth the vector code).
        """
        b = self.builder
        start = I64(0) if start is None else start
        step = I64(1) if step is None else step
        pre = b.block
        cond = b.append_basic_block(f"{name}.cond")
        body = b.append_basic_block(f"{name}.body")
        end = b.append_basic_block(f"{name}.end")
        b.branch(cond)
        b.position_at_end(cond)
        index = b.phi(I64, name=name)
        index.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", index, stop), body, end)
        b.position_at_end(body)
        yield index
        nxt = b.add(index, step, name=f"{name}.next", flags=["nsw"])
        index.add_incoming(nxt, b.block)
        latch = b.branch(cond)
        if interleave is not None or unroll is not True or not vectorize:
            latch.set_metadata("llvm.loop", _loop_id(self.module, interleave, unroll, vectorize))
        b.position_at_end(end)

    def for_each(self, first: int, stop: int, body: Callable[[ir.Value], None], unrolled: int = 4) -> None:
        """body(i64 index) for index in [first, stop) (constants): unrolled when few, else one loop.

        Per-item code in a large graph's glue (hundreds of slots or buffers) is cheaper to compile as a loop.
        """
        if stop - first <= unrolled:
            for k in range(first, stop):
                body(I64(k))
            return
        with self.for_range(I64(stop), start=I64(first), name="each") as k:
            body(k)

    @contextlib.contextmanager
    def loop_nest(self, shape: Sequence[ir.Value], name: str = "i") -> Iterator[list[ir.Value]]:
        """Nested counted loops over shape (outermost first) yielding the list of indices."""
        with contextlib.ExitStack() as stack:
            indices = [stack.enter_context(self.for_range(n, name=f"{name}{d}")) for d, n in enumerate(shape)]
            yield indices

    # ---------------------------------------------------------------- arrays
    def known_contiguous(self, arr: ir.Value) -> bool:
        """True if arr is statically known to be C-contiguous (GraphContext: a buffer the entry allocated)."""
        return False

    def field(self, arr: ir.Value, name: str, dim: int | None = None) -> ir.Value:
        """Load a field of an array struct (pointer or value); dim selects an entry of shape/strides."""
        idx = layouts.FIELD_INDEX[name]
        if isinstance(arr.type, ir.PointerType):
            path = _FIELD_PATHS.get((idx, dim))
            if path is None:        # shared constants: made and printed once (a large graph reads ~3,000 fields)
                path = _FIELD_PATHS[(idx, dim)] = [I32(0), I32(idx)] + ([I32(dim)] if dim is not None else [])
            return self.builder.load(self.builder.gep(arr, path, inbounds=True), name=f"{name}{dim or ''}")
        value = self.builder.extract_value(arr, idx)
        return value if dim is None else self.builder.extract_value(value, dim)

    def data(self, arr: ir.Value) -> ir.Value:
        """The T* data pointer."""
        return self.field(arr, "data")

    def data_bytes(self, arr: ir.Value) -> ir.Value:
        """The data pointer as i8*."""
        return self.builder.bitcast(self.data(arr), I8P)

    def shape(self, arr: ir.Value, dim: int) -> ir.Value:
        """shape[dim] as i64."""
        return self.field(arr, "shape", dim)

    def stride(self, arr: ir.Value, dim: int) -> ir.Value:
        """strides[dim] in bytes as i64."""
        return self.field(arr, "strides", dim)

    def shapes(self, arr: ir.Value, ndim: int) -> list[ir.Value]:
        """All of shape as i64 values."""
        return [self.shape(arr, d) for d in range(ndim)]

    def element_ptr(self, arr: ir.Value, indices: Sequence[ir.Value]) -> ir.Value:
        """T* to element [indices] of a strided array: data + sum(index * stride) bytes."""
        b = self.builder
        data = self.data(arr)
        offset = None
        for d, index in enumerate(indices):
            term = b.mul(index, self.stride(arr, d), flags=["nsw"])
            offset = term if offset is None else b.add(offset, term, flags=["nsw"])
        if offset is None:
            return data
        raw = b.gep(b.bitcast(data, I8P), [offset], inbounds=True)
        return b.bitcast(raw, data.type)

    def load_element(self, arr: ir.Value, indices: Sequence[ir.Value]) -> ir.Value:
        """Load element [indices]."""
        return self.builder.load(self.element_ptr(arr, indices))

    def store_element(self, arr: ir.Value, indices: Sequence[ir.Value], value: ir.Value) -> None:
        """Store value at element [indices]."""
        self.builder.store(value, self.element_ptr(arr, indices))

    # ---------------------------------------------------------------- calls
    def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        """The function `name` of this module, declared on first use (type-checked on reuse)."""
        existing = self.module.globals.get(name)
        if existing is None:
            return ir.Function(self.module, fnty, name)
        if existing.function_type != fnty:
            raise TypeError(f"{name} already declared as {existing.function_type}, not {fnty}")
        return existing

    def declare_global(self, name: str, ty: ir.Type = layouts.I8) -> ir.GlobalVariable:
        """An external global (e.g. a runtime symbol such as gj_PyArray_Type), declared once."""
        existing = self.module.globals.get(name)
        if existing is None:
            existing = ir.GlobalVariable(self.module, ty, name)
            existing.linkage = "external"
        return existing

    def call_external(self, name: str, fnty: ir.FunctionType, args: Sequence[ir.Value],
                      attrs: Sequence[str] = ()) -> ir.Value:
        """Call an external function declared once per module.

        A vector argument to a function that is not an LLVM intrinsic or a libmvec variant is a scalar
        body given vectors (loops/vector_body.py): ScalarOnly, before a declaration typed by it exists."""
        if not name.startswith(("llvm.", "_ZGV")) and any(isinstance(a.type, ir.VectorType) for a in args):
            raise ScalarOnly(f"{name} takes scalars")
        return self.builder.call(self.declare(name, fnty), list(args), attrs=tuple(attrs))

    def call_intrinsic(self, name: str, args: Sequence[ir.Value], overload: Sequence[ir.Type] | None = None,
                       return_type: ir.Type | None = None) -> ir.Value:
        """Call ``llvm.<name>`` overloaded on overload (default: the first argument's type)."""
        if self.lanes:              # a scalar body on vectors: its scalar operands splatted
            args = [a if isinstance(a.type, ir.VectorType) else splat(self.builder, a, self.lanes) for a in args]
        overload = [args[0].type] if overload is None else list(overload)
        full = "llvm." + name + "".join("." + _mangle(t) for t in overload)
        ret = args[0].type if return_type is None else return_type
        return self.call_external(full, ir.FunctionType(ret, [a.type for a in args]), args)

    def call_math(self, name: str, args: Sequence[ir.Value]) -> ir.Value:
        """A libm function on float32/float64 (an LLVM intrinsic when one exists), vectorisable with libmvec.

        float64 exp is graphjit's own inline exp (ir/fastmath.py) unless the flag inline_exp is off.
        """
        ty = args[0].type
        if isinstance(ty, ir.VectorType):
            return self._call_vector_math(name, args)
        if name == "exp" and isinstance(ty, ir.DoubleType) and config.inline_exp:
            return fastmath.call_exp(self.builder, args[0])
        if name in _INTRINSIC_MATH:
            call = self.call_intrinsic(name, args)
        else:
            libm = name + ("f" if isinstance(ty, ir.FloatType) else "")
            call = self.call_external(libm, ir.FunctionType(ty, [a.type for a in args]), args,
                                      attrs=("nounwind", "readnone"))
        self._attach_vector_variants(call, name, ty, len(args))
        return call

    def _call_vector_math(self, name: str, args: Sequence[ir.Value]) -> ir.Value:
        """call_math on vectors: the inline exp, an intrinsic LLVM lowers on vectors, or the libmvec variant the
        loop vectoriser would call (ScalarOnly when there is none)."""
        ty = args[0].type
        args = [a if isinstance(a.type, ir.VectorType) else splat(self.builder, a, ty.count) for a in args]
        if name == "exp" and isinstance(ty.element, ir.DoubleType) and config.inline_exp:
            return fastmath.call_exp(self.builder, args[0])
        if name in _NATIVE_VECTOR_MATH:
            return self.call_intrinsic(name, args)
        vname = vector_variant(name, ty.element, ty.count, len(args))
        if vname is None:
            raise ScalarOnly(f"no vector {name} of {ty}")
        return self.call_external(vname, ir.FunctionType(ty, [ty] * len(args)), args,
                                  attrs=("nounwind", "readnone"))

    def _attach_vector_variants(self, call: ir.CallInstr, name: str, ty: ir.Type, nargs: int) -> None:
        variants = getattr(self.module, _VARIANTS_ATTR, None)
        if variants is None:
            variants = {}
            setattr(self.module, _VARIANTS_ATTR, variants)
        mappings = []
        for vf, vname in libmvec_variants(name, ty, nargs):
            vty = ir.VectorType(ty, vf)
            variants[vname] = self.declare(vname, ir.FunctionType(vty, [vty] * nargs))
            mappings.append(f"_ZGV_LLVM_N{vf}{'v' * nargs}_{call.callee.name}({vname})")
        if mappings:
            attrs = _CallAttributes(list(call.attributes))
            attrs.add(f'"vector-function-abi-variant"="{",".join(mappings)}"')
            call.attributes = attrs

    # ---------------------------------------------------------------- errors (see layouts: gj_error)
    def return_error(self, code: int | ir.Value, msg: int | ir.Value = 0, node: int | ir.Value = -1,
                     args: Sequence[ir.Value | int] = ()) -> None:
        """Fill rt->error {code, msg, node, a, b, c} and return code from the native entry.

        The stores live in one cold helper per module (an entry has hundreds of error sites: a call each
        keeps the entry small, which is most of the compile time of a large graph).
        """
        b = self.builder
        code = I32(code) if isinstance(code, int) else code
        msg = I32(msg) if isinstance(msg, int) else msg
        extra = [I64(a) if isinstance(a, int) else b.sext(a, I64) if a.type != I64 else a for a in args]
        extra += [I64(0)] * (3 - len(extra))
        node = I32(node) if isinstance(node, int) else node
        b.call(error_setter(self.module, self.rt.type), [self.rt, code, msg, node] + extra)
        exit_with(b, code)

    def error_if(self, cond: ir.Value, code: int, msg: int | ir.Value = 0, node: int | ir.Value = -1,
                 args: Sequence[ir.Value | int] = ()) -> None:
        """If cond (i1), report the error and return from the native entry; continue in a fresh block."""
        b = self.builder
        fail = b.append_basic_block("error")
        ok = b.append_basic_block("ok")
        set_weights(b.cbranch(cond, fail, ok), UNLIKELY)
        b.position_at_end(fail)
        self.return_error(code, msg, node, args)
        b.position_at_end(ok)

    # ---------------------------------------------------------------- allocation (see layouts: alloc)
    def allocate_array(self, slot: int, out: ir.Value, dtype: object, shape: Sequence[ir.Value]) -> None:
        """Allocate a C-contiguous array of shape into the struct at `out` via rt->alloc; failures return."""
        b = self.builder
        ndim = len(shape)
        dims = self.alloca(ir.ArrayType(I64, max(ndim, 1)), name=f"shape_slot{slot}")
        for d, n in enumerate(shape):
            b.store(n, b.gep(dims, [I32(0), I32(d)], inbounds=True))
        alloc = b.load(b.gep(self.rt, [I32(0), I32(layouts.RT_ALLOC)], inbounds=True))
        status = b.call(alloc, [b.bitcast(self.rt, I8P), I32(slot), b.bitcast(out, I8P),
                                I32(layouts.type_num(dtype)), I32(ndim),
                                b.gep(dims, [I32(0), I32(0)], inbounds=True)])
        exit_if_failed(b, status, "alloc_ok")
