"""The contiguous elementwise kernel emitted already vectorised: ``<W x T>`` loads, the fused body on vectors,
one vector store per iteration; the last (end - start) mod W elements go through the same loop body once more,
copied into vectors on the stack (one call of a helper shared by the kernels of a signature).

Such a kernel needs no loop vectoriser: a large graph's bulk parts compile it with a short pass list
(jit/bulk.py, VECTOR_PASSES), about a third of the O3 pipeline's cost per kernel.  W is what LLVM's vectoriser
takes on the host: the widest vector register over the widest element type read or stored.  Math calls go to
the same libmvec variants the vectoriser would call (ir/context.py call_math), float64 exp to the same inline
exp, so results are the scalar kernel's.

Whether a group's body lowers on vectors is found by trying: the body is emitted through a VectorBuilder (scalar
constants splatted, casts to scalar types widened); a body that makes blocks, reports a scalar error, calls a
function with no vector form or mixes types the builder rejects raises, its partial code is removed, and the
kernel is built scalar as before.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.casts import compute_type
from graphjit.link.llvm.ir.context import VECTOR_REGISTER_BYTES, ScalarOnly, SplatConstant, compact, splat
from graphjit.link.llvm.ir.layouts import I8P, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.jit import compiler as _compiler

from graphjit.link.llvm.loops.loop_shape import Operand
from graphjit.link.llvm.loops.kernel_context import KernelContext

_BINOPS = ("add", "sub", "mul", "sdiv", "udiv", "srem", "urem", "fadd", "fsub", "fmul", "fdiv", "frem",
           "and_", "or_", "xor", "shl", "lshr", "ashr")
_COMPARES = ("icmp_signed", "icmp_unsigned", "fcmp_ordered", "fcmp_unordered")
_MEMCPY = "llvm.memcpy.p0.p0.i64"
_CASTS = ("trunc", "zext", "sext", "fptrunc", "fpext", "fptosi", "fptoui", "uitofp", "sitofp")


def _lanes_of(values: Sequence[Any]) -> int:
    """The lane count of the first vector among values (0: none is a vector)."""
    for v in values:
        if isinstance(getattr(v, "type", None), ir.VectorType):
            return v.type.count
    return 0


class VectorBuilder(ir.IRBuilder):
    """An IRBuilder for a body written for scalars and given vectors: a scalar operand beside a vector is
    splatted, a cast to a scalar type casts to the vector of it; new blocks (a branching body) are refused."""

    def _unify(self, values: Sequence[Any]) -> list:
        lanes = _lanes_of(values)
        if not lanes:
            return list(values)
        return [splat(self, v, lanes) if isinstance(v, ir.Value) and not isinstance(v.type, ir.VectorType)
                else compact(v) for v in values]

    def call(self, fn: ir.Value, args: Sequence[ir.Value], *a: Any, **kw: Any) -> ir.Value:
        """call, its vector constant arguments printed as splats."""
        return super().call(fn, [compact(v) for v in args], *a, **kw)

    def append_basic_block(self, name: str = "") -> ir.Block:
        """Refused: a body that branches stays scalar."""
        raise ScalarOnly("the body makes blocks")

    def phi(self, typ: ir.Type, name: str = "", flags: Sequence[str] = ()) -> ir.PhiInstr:
        """Refused: a body with a loop stays scalar."""
        raise ScalarOnly("the body makes phis")

    def select(self, cond: ir.Value, lhs: ir.Value, rhs: ir.Value, name: str = "",
               flags: Sequence[str] = ()) -> ir.Value:
        """select, its operands splatted to the vector's lanes."""
        cond, lhs, rhs = self._unify([cond, lhs, rhs])
        return super().select(cond, lhs, rhs, name=name, flags=flags)


def _binop(name: str) -> Callable:
    base = getattr(ir.IRBuilder, name)

    def method(self: VectorBuilder, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()):
        lhs, rhs = self._unify([lhs, rhs])
        return base(self, lhs, rhs, name=name, flags=flags)
    method.__doc__ = f"{name}, a scalar operand splatted beside a vector."
    return method


def _compare(name: str) -> Callable:
    base = getattr(ir.IRBuilder, name)

    def method(self: VectorBuilder, cmpop: str, lhs: ir.Value, rhs: ir.Value, name: str = "", **kw: Any):
        lhs, rhs = self._unify([lhs, rhs])
        return base(self, cmpop, lhs, rhs, name=name, **kw)
    method.__doc__ = f"{name}, a scalar operand splatted beside a vector."
    return method


def _cast(name: str) -> Callable:
    base = getattr(ir.IRBuilder, name)

    def method(self: VectorBuilder, value: ir.Value, typ: ir.Type, name: str = ""):
        if isinstance(value.type, ir.VectorType) and not isinstance(typ, ir.VectorType):
            typ = ir.VectorType(typ, value.type.count)
        return base(self, value, typ, name=name)
    method.__doc__ = f"{name}, to the vector of a scalar type for a vector value."
    return method


for _name in _BINOPS:
    setattr(VectorBuilder, _name, _binop(_name))
for _name in _COMPARES:
    setattr(VectorBuilder, _name, _compare(_name))
for _name in _CASTS:
    setattr(VectorBuilder, _name, _cast(_name))


def host_lanes(dtypes: Sequence[str]) -> int:
    """W for a loop reading and writing these dtypes: the widest vector register over the widest element."""
    return _register_bytes() // max(L.itemsize(d) for d in dtypes)


def _register_bytes() -> int:
    return max((VECTOR_REGISTER_BYTES.get(isa, 16) for isa in _compiler.get_compiler().vector_isas), default=16)


# graphs of at least this many fused groups (about jit/bulk.py's SPLIT_MIN_KERNELS: the graphs whose kernels go
# to bulk parts) get vector kernels; smaller graphs keep the loop vectoriser's (one O3 module: W3's MLP step was
# 4-9% slower with vector kernels, pinned, 2 samples each)
MIN_GROUPS = 24
# the last, partial vector through the kernel itself on stack copies (_vector_tail); False: a scalar loop after
# the vector loop (the body emitted twice: tests cover it)
VECTOR_TAIL = True


def emit_vector_loop(kctx: KernelContext, start: ir.Value, end: ir.Value, operands: Sequence[Operand],
                     bound: Sequence[tuple], compute: Callable, sink: ir.Value, sink_dtype: str,
                     accumulate: Callable | None) -> ir.Value | None:
    """Emit the vector loop and return where a scalar remainder loop must start (end itself when the partial
    last vector is handled here); None (nothing emitted: kctx.vector_refused says why) when the body does not
    lower on vectors."""
    lanes = host_lanes([o.dtype for o in operands if o.is_array] + [sink_dtype])
    if lanes < 2:
        return None
    b = kctx.builder
    fn, entry_block = b.function, b.block
    n_blocks = len(fn.blocks)
    kept = {id(i) for block in fn.blocks for i in block.instructions}
    terminators = [(block, block.terminator) for block in fn.blocks]
    try:
        n = b.sub(end, start)
        vend = b.add(start, b.sub(n, b.srem(n, I64(lanes))), name="vend")
        scalars = {k: splat(b, s, lanes) for k, (p, s) in enumerate(bound) if p is None}

        def body(i: ir.Value) -> None:
            vb = VectorBuilder(b.block)
            kctx.builder, kctx.lanes = vb, lanes
            try:
                _body(kctx, vb, _Access(vb, i, lanes), operands, bound, scalars, compute, sink, sink_dtype,
                      accumulate)
            finally:
                kctx.builder, kctx.lanes = b, 0
            b.position_at_end(vb.block)

        with kctx.for_range(vend, start=start, step=I64(lanes), name="v", vectorize=False) as i:
            body(i)
        if VECTOR_TAIL:
            _vector_tail(kctx, end, vend, lanes, sum(p is not None for p, _ in bound), accumulate is not None)
            vend = end
    except (ScalarOnly, TypeError, ValueError, AttributeError, IndexError) as exc:
        del fn.blocks[n_blocks:]
        for block, terminator in terminators:
            block.instructions[:] = [ins for ins in block.instructions if id(ins) in kept]
            block.terminator = terminator
        b.position_at_end(entry_block)
        kctx.vector_refused = f"{type(exc).__name__}: {exc}"
        return None
    return vend


def _vector_tail(kctx: KernelContext, end: ir.Value, vend: ir.Value, lanes: int, n_arrays: int,
                 accumulate: bool) -> None:
    """The last, partial vector [vend, end), if any, by the module's tail helper of this kernel's signature
    (_tail_helper): one call, so the kernel's own code and IR text stay the vector loop's."""
    b = kctx.builder
    fn = b.function
    helper = _tail_helper(b.module, fn.function_type, lanes, n_arrays, accumulate)
    with b.if_then(b.icmp_signed("<", vend, end), likely=False):
        b.call(helper, [fn, vend, end] + list(fn.args[2:]))


def _tail_helper(module: ir.Module, kernel_ty: ir.FunctionType, lanes: int, n_arrays: int,
                 accumulate: bool) -> ir.Function:
    """``void tail(kernel*, i64 vend, i64 end, T* in..., scalars..., sink*)``, one per signature and module:
    the elements [vend, end) copied into vectors on the stack (the lanes past end hold 1, which no body traps
    on), the kernel called on them for one full vector (its loop body: no second copy of it), the result's
    elements copied back.  Copies, not masked loads and stores: a mask on every iteration of the loop made W1's
    kernel 2x slower on Zen 5, and LLVM 22 widens a masked store of 8 bytes to 16 with a 16-lane mask whose
    upper lanes are not cleared (it wrote past the end of bool outputs)."""
    params = list(kernel_ty.args[2:])
    name = "vtail.{}.{}.{}".format(lanes, int(accumulate), ".".join(_type_name(t) for t in params))
    fn, new = kernel_function(module, name, ir.FunctionType(ir.VoidType(), [kernel_ty.as_pointer(), I64, I64]
                                                                        + params))
    if not new:
        return fn
    fn.attributes.add("cold")
    fn.attributes.add("noinline")
    kernel, vend, end, args = fn.args[0], fn.args[1], fn.args[2], list(fn.args[3:])
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    memcpy = module.globals.get(_MEMCPY) or ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64,
                                                                                             ir.IntType(1)]), _MEMCPY)
    rem = b.sub(end, vend)
    pointers = args[:n_arrays] + args[-1:]
    bufs = [b.alloca(ir.VectorType(p.type.pointee, lanes)) for p in pointers]

    def copy(dst: ir.Value, src: ir.Value, elem: ir.Type) -> None:
        b.call(memcpy, [b.bitcast(dst, I8P), b.bitcast(src, I8P), b.mul(rem, I64(_element_bytes(elem))),
                        ir.Constant(ir.IntType(1), 0)])

    for k, (p, buf) in enumerate(zip(pointers, bufs)):
        if k < n_arrays or accumulate:
            b.store(SplatConstant(buf.type.pointee, ir.Constant(p.type.pointee, 1)), buf)
            copy(buf, b.gep(p, [vend], inbounds=True), p.type.pointee)
    copies = [b.bitcast(buf, p.type) for buf, p in zip(bufs, pointers)]
    b.call(kernel, [I64(0), I64(lanes)] + copies[:-1] + args[n_arrays:-1] + copies[-1:])
    copy(b.gep(args[-1], [vend], inbounds=True), bufs[-1], args[-1].type.pointee)
    b.ret_void()
    return fn


def _type_name(ty: ir.Type) -> str:
    """A name-safe spelling of a kernel parameter's type (f64p: double*, i1: bool)."""
    if isinstance(ty, ir.PointerType):
        return _type_name(ty.pointee) + "p"
    return "f64" if isinstance(ty, ir.DoubleType) else "f32" if isinstance(ty, ir.FloatType) else f"i{ty.width}"


def _body(kctx: KernelContext, vb: VectorBuilder, mem: _Access, operands: Sequence[Operand], bound: Sequence[tuple],
          scalars: dict, compute: Callable, sink: ir.Value, sink_dtype: str, accumulate: Callable | None) -> None:
    """sink[i:i+W] = compute(operands[i:i+W]) (accumulated into sink's values with accumulate)."""
    values = [mem.load(p, o.dtype) if p is not None else scalars[k]
              for k, ((p, _), o) in enumerate(zip(bound, operands))]
    v = _as_vector(vb, compute(kctx, values), mem.lanes)
    if accumulate is not None:
        v = _as_vector(vb, accumulate(kctx, mem.load(sink, sink_dtype), v), mem.lanes)
    if v.type != ir.VectorType(compute_type(sink_dtype), mem.lanes):
        raise ScalarOnly(f"the body gives {v.type}")
    mem.store(sink, vb.zext(v, L.I8) if sink_dtype == "bool" else v)


class _Access:
    """Vector loads and stores of W elements at element i of typed pointers."""

    def __init__(self, b: ir.IRBuilder, i: ir.Value, lanes: int) -> None:
        self.b, self.i, self.lanes = b, i, lanes

    def _ptr(self, ptr: ir.Value) -> ir.Value:
        vty = ir.VectorType(ptr.type.pointee, self.lanes)
        return self.b.bitcast(self.b.gep(ptr, [self.i], inbounds=True), vty.as_pointer())

    def load(self, ptr: ir.Value, dtype: str) -> ir.Value:
        """W elements from ptr + i (bool: i1 lanes)."""
        v = self.b.load(self._ptr(ptr), align=_element_bytes(ptr.type.pointee))
        return self.b.icmp_unsigned("!=", v, ir.Constant(v.type, 0)) if dtype == "bool" else v

    def store(self, ptr: ir.Value, v: ir.Value) -> None:
        """W elements (in memory form) to ptr + i."""
        self.b.store(v, self._ptr(ptr), align=_element_bytes(ptr.type.pointee))


def _element_bytes(ty: ir.Type) -> int:
    return 8 if isinstance(ty, ir.DoubleType) else 4 if isinstance(ty, ir.FloatType) else max(1, ty.width // 8)


def _as_vector(b: ir.IRBuilder, v: Any, lanes: int) -> ir.Value:
    """The body's value as a vector of lanes (a body may return a constant: isnan of an integer)."""
    if isinstance(v, tuple):
        raise ScalarOnly("several outputs")
    if not isinstance(v.type, ir.VectorType):
        return splat(b, v, lanes)
    if v.type.count != lanes:
        raise ScalarOnly("lanes changed")
    return v
