"""Loop nests of fused elementwise groups: broadcast shape checks, a contiguous kernel LLVM vectorises, a
strided path (stride-0 broadcasting, negative strides), threads; reductions build on these
(loops/reduce.py).

A group is a list of operands (array structs, or scalars hoisted out of the loop) and a ``compute`` callback
emitting the fused scalar body from one compute value per operand.  The contiguous kernel is an internal
function ``i32 (i64 start, i64 end, T* noalias in..., [scalars...], sink*)`` so that LLVM sees unaliased
pointers and vectorises it (math calls carry their libmvec variants); it returns 0 or a message index + 1.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.llvm.ir.casts import cast_value, compute_type, zero_value
from graphjit.scalar import math as smath
from graphjit.scalar.basic import Opcode, ScalarOp

from graphjit.link.llvm.ir import complex_math, layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_VALUE
from graphjit.link.llvm.ir.context import TRUE, LowerContext, branch
from graphjit.link.llvm.loops.loop_shape import (Operand, all_full_contiguous, conjunction, constant_trip, proven_full,
                                                 same_constant, short_trip)
from graphjit.link.llvm.ir.arith import product
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.ir.threads import call_parallel
from graphjit.link.llvm.loops.kernel_context import KernelContext
from graphjit.link.llvm.scalar.lower import lower_scalar
from graphjit.link.llvm.loops import vector_body

from graphjit.link.llvm.ir.graph_context import (GraphContext)  # the graph's context; driver/native_entry.py builds on this module

Compute = Callable[[LowerContext, list], ir.Value]                # the fused scalar body: values -> value
Accumulate = Callable[[LowerContext, ir.Value, ir.Value], ir.Value]  # (acc, value) -> new acc

PARALLEL_MIN_ITEMS = 1 << 17          # below: serial (GOMP_parallel's fixed cost is ~10 us)
_CHUNK_ALIGN = 64


@dataclass
class Reduce:
    """The reduction a fused loop ends in: CAReduce's scalar op, axes, and dtypes."""

    op: ScalarOp
    axes: tuple
    value_dtype: str
    acc_dtype: str
    out_dtype: str
    node: Apply | None = None

    @property
    def extremum(self) -> bool:
        """max or min: no identity, the accumulator starts at the far end of the dtype's range."""
        return self.op is smath.maximum or self.op is smath.minimum

    def identity(self) -> ir.Constant:
        """The neutral element in the accumulator's compute type."""
        ty, kind = compute_type(self.acc_dtype), np.dtype(self.acc_dtype).kind
        if kind == "c":             # add/mul, max/min (fusion.lowerable_careduce)
            part = ty.elements[0]
            if self.extremum:       # lexicographic order (complex_math.extremum): both parts at the far end
                far = float("inf") if self.op is smath.minimum else float("-inf")
                return ir.Constant(ty, [ir.Constant(part, far), ir.Constant(part, far)])
            return ir.Constant(ty, [ir.Constant(part, float(self.op.identity)), ir.Constant(part, 0.0)])
        if not self.extremum:
            ident = self.op.identity
            return ir.Constant(ty, float(ident) if kind == "f" else int(bool(ident)) if kind == "b" else ident)
        big = self.op is smath.minimum
        if kind == "f":
            return ir.Constant(ty, float("inf") if big else float("-inf"))
        if kind == "b":
            return ir.Constant(ty, 1 if big else 0)
        info = np.iinfo(self.acc_dtype)
        value = int(info.max if big else info.min)
        return ir.Constant(ty, value if value < (1 << (ty.width - 1)) else value - (1 << ty.width))

    def combine(self, ctx: LowerContext, acc: ir.Value, v: ir.Value) -> ir.Value:
        """acc (op) v, float add/mul marked reassoc so LLVM vectorises with several accumulators."""
        v = cast_value(ctx.builder, v, self.value_dtype, self.acc_dtype)
        spec = self.op.llvm
        if np.dtype(self.acc_dtype).kind == "f" and isinstance(spec, Opcode) and self.op.associative:
            return _fast_binop(ctx.builder, spec.float, acc, v)
        return lower_scalar(self.op, ctx, [acc, v], [self.acc_dtype] * 2, self.acc_dtype)


def _fast_binop(b: ir.IRBuilder, opname: str, x: ir.Value, y: ir.Value) -> ir.Value:
    instr = ir.instructions.Instruction(b.block, x.type, opname, (x, y), name="", flags=("reassoc", "nsz"))
    b._insert(instr)
    return instr


# ---------------------------------------------------------------- memory <-> compute values

def load_value(b: ir.IRBuilder, ptr: ir.Value, dtype: str) -> ir.Value:
    """Load one element (bool: i8 in memory, i1 computed; complex: its two parts, which LLVM's vectoriser
    sees as an interleaved pair where it would not vectorise one aggregate load)."""
    if dtype.startswith("complex"):
        re = b.load(b.gep(ptr, [I32(0), I32(0)], inbounds=True))
        return complex_math.pack(b, re, b.load(b.gep(ptr, [I32(0), I32(1)], inbounds=True)))
    v = b.load(ptr)
    return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0)) if dtype == "bool" else v


def store_value(b: ir.IRBuilder, ptr: ir.Value, v: ir.Value, dtype: str) -> None:
    """Store one compute value."""
    if dtype.startswith("complex"):
        for k in range(2):
            b.store(b.extract_value(v, k), b.gep(ptr, [I32(0), I32(k)], inbounds=True))
        return
    b.store(b.zext(v, L.I8) if dtype == "bool" else v, ptr)


# ---------------------------------------------------------------- the contiguous kernel

def build_kernel(gctx: GraphContext, name: str, operands: Sequence[Operand],
                 compute: Compute, sink_dtype: str,
                 reduce: Reduce | None, accumulate: Accumulate | None = None,
                 streams: int = 1, trip: int | None = None) -> ir.Function:
    """``i32 name(i64 start, i64 end, T* in..., scalars..., sink*)`` over flat indices [start, end).

    trip: every call's range has this length (end - start, a compile-time constant: constant_trip): the kernel
    loops over [start, start + trip), fully unrolled, and ignores end.

    With accumulate, sink[i] = accumulate(ctx, sink[i], value) instead of value (a column-wise reduction).
    streams (reductions): read the range as that many equal parts side by side (_reduction_body).
    Kernels of identical bodies are built once per module, whatever their streams: the first one built serves
    (see _share_key; gctx.kernels holds them), since a kernel less to compile outweighs the streams' gain.
    """
    share = _share_key(name, operands, compute, sink_dtype, reduce, accumulate)
    share = share + (trip,) if share is not None else None
    shared = getattr(gctx, "kernels", None)
    if share is not None and shared is not None and share in shared:
        return shared[share]
    n_messages = len(gctx.messages)
    fn = _build_kernel(gctx, name, operands, compute, sink_dtype, reduce, accumulate, streams, trip)
    fn.gj_may_fail = len(gctx.messages) != n_messages       # else it always returns 0 (no status check)
    if share is not None and shared is not None and not fn.gj_may_fail:
        shared[share] = fn              # a kernel naming its node in a message stays that node's own
    return fn


def _share_key(name: str, operands: Sequence[Operand], compute: Callable, sink_dtype: str,
               reduce: Reduce | None, accumulate: Callable | None) -> tuple | None:
    """What a kernel's body is a function of, when its compute says (compute.key): identical groups share it."""
    key = getattr(compute, "key", None)
    if key is None or (accumulate is not None and getattr(accumulate, "key", None) is None):
        return None
    red = (reduce.op, reduce.value_dtype, reduce.acc_dtype, reduce.out_dtype) if reduce else None
    return (name.rsplit(".", 1)[-1], key, tuple((o.dtype, o.is_array) for o in operands), sink_dtype, red,
            getattr(accumulate, "key", None))


def _build_kernel(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Compute,
                  sink_dtype: str, reduce: Reduce | None,
                  accumulate: Accumulate | None, streams: int, trip: int | None = None) -> ir.Function:
    arrays = [op for op in operands if op.is_array]
    scalars = [op for op in operands if not op.is_array]
    sink_ty = compute_type(reduce.acc_dtype) if reduce else L.llvm_scalar_type(sink_dtype)
    args = [I64, I64] + [L.llvm_scalar_type(o.dtype).as_pointer() for o in arrays] + \
        [compute_type(o.dtype) for o in scalars] + [sink_ty.as_pointer()]
    fn, new = kernel_function(gctx.module, name, ir.FunctionType(I32, args))
    if not new:
        raise ValueError(f"kernel {name} built twice")
    # called from the entry and from its thread body: inlined, its vectorised loop would be compiled twice
    fn.attributes.add("noinline")
    for a in fn.args[2:2 + len(arrays)] + (fn.args[-1],):
        a.add_attribute("noalias")
    kctx = KernelContext(ir.IRBuilder(fn.append_basic_block("entry")), gctx)
    start, end, sink = fn.args[0], fn.args[1], fn.args[-1]
    if trip is not None:
        end = kctx.builder.add(start, I64(trip), flags=["nsw"])
    ptrs = iter(fn.args[2:2 + len(arrays)])
    svals = iter(fn.args[2 + len(arrays):-1])
    bound = [(next(ptrs), None) if o.is_array else (None, next(svals)) for o in operands]

    def value_at(i: ir.Value) -> ir.Value:
        b = kctx.builder
        return compute(kctx, [load_value(b, b.gep(p, [i], inbounds=True), o.dtype) if p is not None else s
                              for (p, s), o in zip(bound, operands)])

    if reduce:
        if _bare_float_extremum(operands, compute, reduce):
            _vector_extremum(kctx, start, end, bound[0][0], reduce, sink)
        else:
            _reduction_body(kctx, start, end, value_at, reduce, sink, 1 if trip is not None else streams,
                            unroll="full" if trip is not None else True)
    elif (trip is None and getattr(gctx, "n_groups", 0) >= vector_body.MIN_GROUPS
          and _vector_elementwise(kctx, start, end, operands, bound, compute, sink, sink_dtype, accumulate, value_at)):
        fn.gj_vector = True                 # compiled without the loop vectoriser (jit/bulk.py)
    else:
        # elementwise loops are bound by memory or by the math calls: two interleaved vectors keep the loop
        # fed and compile in about half the time of LLVM's default four; one element needs no loop at all
        with (contextlib.nullcontext(start) if trip == 1 else
              kctx.for_range(end, start=start, name="k", interleave=2 if trip is None else None,
                             unroll="full" if trip is not None else True)) as i:
            b = kctx.builder
            v, ptr = value_at(i), b.gep(sink, [i], inbounds=True)
            if accumulate is not None:
                v = accumulate(kctx, load_value(b, ptr, sink_dtype), v)
            store_value(b, ptr, v, sink_dtype)
    kctx.builder.ret(I32(0))
    return fn


def _vector_elementwise(kctx: KernelContext, start: ir.Value, end: ir.Value, operands: Sequence[Operand],
                        bound: list, compute: Compute, sink: ir.Value, sink_dtype: str,
                        accumulate: Accumulate | None, value_at: Callable[[ir.Value], ir.Value]) -> bool:
    """The elementwise loop already vectorised (loops/vector_body.py), then its scalar remainder; False
    (nothing emitted) when the body does not lower on vectors (complex values never do: {re, im} structs)."""
    if any(np.dtype(d).kind == "c" for d in (sink_dtype, *(o.dtype for o in operands))):
        return False
    vend = vector_body.emit_vector_loop(kctx, start, end, operands, bound, compute, sink, sink_dtype, accumulate)
    if vend is None:
        return False
    if vend is end:                         # the partial last vector was handled too: no remainder
        return True
    with kctx.for_range(end, start=vend, name="k", vectorize=False, unroll=False) as i:
        b = kctx.builder
        v, ptr = value_at(i), b.gep(sink, [i], inbounds=True)
        if accumulate is not None:
            v = accumulate(kctx, load_value(b, ptr, sink_dtype), v)
        store_value(b, ptr, v, sink_dtype)
    return True


def _reduction_body(kctx: KernelContext, start: ir.Value, end: ir.Value, value_at: Callable[[ir.Value], ir.Value],
                    reduce: Reduce, sink: ir.Value, streams: int, unroll: bool | str = True) -> None:
    """sink = the reduction of value_at(i) over [start, end).

    One stream: LLVM's default interleaving gives the vectorised loop its several accumulators (what makes it
    as fast as numpy's sum).  streams > 1: the range is read as that many equal parts side by side, each into
    its own accumulator (interleave 1), then the remainder; a long reduction then keeps several memory streams
    in flight (W4's sum of 1e7 float64 from DRAM: 1.64 -> 1.46 ms with four on Zen 5).
    """
    b = kctx.builder
    accs = [kctx.alloca(compute_type(reduce.acc_dtype), name=f"acc{k}") for k in range(streams)]
    for acc in accs:
        b.store(reduce.identity(), acc)
    part = b.sdiv(b.sub(end, start), I64(streams)) if streams > 1 else b.sub(end, start)
    offsets = [b.mul(part, I64(k)) for k in range(1, streams)]
    with kctx.for_range(b.add(start, part), start=start, name="k", interleave=1 if streams > 1 else None,
                        unroll=unroll) as i:
        for acc, at in zip(accs, [i] + [b.add(i, off) for off in offsets]):
            b.store(reduce.combine(kctx, b.load(acc), value_at(at)), acc)
    if streams > 1:
        with kctx.for_range(end, start=b.add(start, b.mul(part, I64(streams))), name="t", vectorize=False) as i:
            b.store(reduce.combine(kctx, b.load(accs[0]), value_at(i)), accs[0])
    merge = replace(reduce, value_dtype=reduce.acc_dtype)
    total = b.load(accs[0])
    for acc in accs[1:]:
        total = merge.combine(kctx, total, b.load(acc))
    b.store(total, sink)


def _bare_float_extremum(operands: Sequence[Operand], compute: Callable, reduce: Reduce) -> bool:
    """max/min of one float array itself (no fused body, no cast): _vector_extremum's case."""
    return (reduce.extremum and len(operands) == 1 and operands[0].is_array
            and operands[0].dtype == reduce.acc_dtype in ("float32", "float64")
            and getattr(compute, "key", None) == ((), 0))


_EXTREMUM_VECTORS = 4


def _vector_extremum(kctx: KernelContext, start: ir.Value, end: ir.Value, ptr: ir.Value, reduce: Reduce,
                     sink: ir.Value) -> None:
    """sink = max/min of ptr[start:end] in explicit vectors, NaN if any element is NaN (numpy's).

    Each vector accumulator keeps a compare-and-select (one ``vmaxpd``/``vminpd``: a NaN never wins it) and
    an any-NaN mask beside it.  LLVM's vectoriser cannot do this itself: it takes a float max/min recurrence
    only as the NaN-propagating ``llvm.maximum`` (several instructions on the accumulator's chain; x.max()
    of 1e5 float64 in cache was 1.8x slower than numpy's) or with the whole function declared NaN-free.
    """
    b = kctx.builder
    ty = compute_type(reduce.acc_dtype)
    width = 64 // L.itemsize(reduce.acc_dtype)
    vty, mty = ir.VectorType(ty, width), ir.VectorType(ir.IntType(1), width)
    pred = ">" if reduce.op is smath.maximum else "<"
    ident = reduce.identity()
    accs = [kctx.alloca(vty, name=f"ext{k}") for k in range(_EXTREMUM_VECTORS)]
    nans = [kctx.alloca(mty, name=f"nan{k}") for k in range(_EXTREMUM_VECTORS)]
    for acc, nan in zip(accs, nans):
        b.store(ir.Constant(vty, [ident.constant] * width), acc)
        b.store(ir.Constant(mty, [0] * width), nan)

    def keep(acc: ir.Value, v: ir.Value) -> ir.Value:
        return b.select(b.fcmp_ordered(pred, v, acc), v, acc)

    step = _EXTREMUM_VECTORS * width
    stop = b.add(start, b.mul(b.sdiv(b.sub(end, start), I64(step)), I64(step)))
    with kctx.for_range(stop, start=start, step=I64(step), name="x", vectorize=False, unroll=False) as i:
        for k, (acc, nan) in enumerate(zip(accs, nans)):
            p = b.bitcast(b.gep(ptr, [b.add(i, I64(k * width))], inbounds=True), vty.as_pointer())
            v = b.load(p, align=L.itemsize(reduce.acc_dtype))
            b.store(b.or_(b.load(nan), b.fcmp_unordered("uno", v, v)), nan)
            b.store(keep(b.load(acc), v), acc)
    vec, mask = b.load(accs[0]), b.load(nans[0])
    for acc, nan in zip(accs[1:], nans[1:]):
        vec, mask = keep(vec, b.load(acc)), b.or_(mask, b.load(nan))
    scalar = kctx.alloca(ty, name="ext")
    flag = kctx.alloca(ir.IntType(1), name="extnan")
    b.store(kctx.call_intrinsic("vector.reduce.f" + ("max" if pred == ">" else "min"), [vec], overload=[vty],
                                return_type=ty), scalar)
    b.store(kctx.call_intrinsic("vector.reduce.or", [mask], overload=[mty], return_type=ir.IntType(1)), flag)
    with kctx.for_range(end, start=stop, name="xt", vectorize=False) as i:
        v = load_value(b, b.gep(ptr, [i], inbounds=True), reduce.acc_dtype)
        b.store(b.or_(b.load(flag), b.fcmp_unordered("uno", v, v)), flag)
        b.store(keep(b.load(scalar), v), scalar)
    b.store(b.select(b.load(flag), ir.Constant(ty, float("nan")), b.load(scalar)), sink)


def kernel_args(gctx: GraphContext, operands: Sequence[Operand]) -> list[ir.Value]:
    """A kernel's arguments for operands: the arrays' data pointers, then the scalars."""
    arrays = [gctx.data(o.struct) for o in operands if o.is_array]
    return arrays + [o.scalar for o in operands if not o.is_array]


def check_status(gctx: GraphContext, status: ir.Value, node: Apply, kernel: ir.Function | None = None) -> None:
    """A nonzero kernel status is message index + 1 of a ValueError (nothing to check if kernel cannot fail)."""
    if kernel is not None and not getattr(kernel, "gj_may_fail", True):
        return
    b = gctx.builder
    bad = b.icmp_signed("!=", status, I32(0))
    gctx.error_if(bad, GJ_ERR_VALUE, msg=b.sub(status, I32(1)), node=gctx.node_index(node))


# ---------------------------------------------------------------- elementwise groups

def emit_elementwise(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable,
                     out: ir.Value, out_dtype: str, shape: Sequence[ir.Value], node: Apply,
                     parallel: bool) -> None:
    """out[...] = compute(operands[...]) over shape (out: a fresh C-contiguous struct of that shape)."""
    b = gctx.builder
    if not shape and not any(o.is_array for o in operands):
        # a 0-d group (shape arithmetic, mostly): computed in place, no kernel, loop or thread body
        store_value(b, gctx.data(out), compute(gctx, [o.scalar for o in operands]), out_dtype)
        return
    if len(shape) >= 2 and statically_broadcast(operands):
        # the whole-array path could only run when the broadcast dimension has length 1: rows do it all
        _row_elementwise(gctx, name, operands, compute, out, out_dtype, shape, node)
        return
    total = product(b, shape)
    trip = constant_trip(total)
    kernel = build_kernel(gctx, f"{name}.contig" if trip is None else f"{name}.fixed", operands, compute, out_dtype,
                          None, trip=trip)

    def contig() -> None:
        args = kernel_args(gctx, operands) + [gctx.data(out)]
        status = _run_kernel(gctx, name, kernel, args, total, parallel and trip is None)
        check_status(gctx, status, node, kernel)

    def strided() -> None:
        if len(shape) >= 2:
            _row_elementwise(gctx, name, operands, compute, out, out_dtype, shape, node,
                             kernel if trip is None else None)
        else:
            strided_elementwise(gctx, operands, compute, out, out_dtype, shape)

    branch(b, all_full_contiguous(gctx, operands, shape), contig, strided)


def statically_broadcast(operands: Sequence[Operand]) -> bool:
    """True if an array operand has length 1 (statically) in a dimension where another one may not."""
    arrays = [o for o in operands if o.is_array]
    return any(o.static_shape[d] == 1 and any(p.static_shape[d] != 1 for p in arrays)
               for o in arrays for d in range(len(o.static_shape)))


def _row_elementwise(gctx: GraphContext, name: str, operands: Sequence[Operand], compute: Callable, out: ir.Value,
                     out_dtype: str, shape: Sequence[ir.Value], node: Apply,
                     kernel: ir.Function | None = None) -> None:
    """Broadcast operands: one vectorised kernel call per row when every operand's last dimension is
    unit-stride or statically broadcast (read once per row as a scalar); else the strided nest.

    kernel: the group's whole-array kernel, which is also the row kernel when nothing is read per row."""
    b, inner = gctx.builder, len(shape) - 1
    per_row = [o.is_array and o.static_shape[inner] == 1 for o in operands]
    if any(per_row):
        row_ops = [Operand(o.dtype, o.static_shape, scalar=zero_value(o.dtype))
                   if r else o for o, r in zip(operands, per_row)]
        # rows of one element (an (n, 1) result: every operand read once per row) are stored without a loop
        # (LLVM's cost is per loop, W9: 19 of 214 kernels), static rows of a few elements unrolled
        kernel = build_kernel(gctx, f"{name}.row", row_ops, compute, out_dtype, None,
                              trip=short_trip(shape[inner]))
    elif kernel is None:
        kernel = build_kernel(gctx, f"{name}.contig", operands, compute, out_dtype, None)
    ok = conjunction(b, unit_rows(gctx, [o for o, r in zip(operands, per_row) if o.is_array and not r],
                                   shape) + [_unit_inner(gctx, out, out_dtype, inner)])

    def rows() -> None:
        bases, strides = strided_operands(gctx, operands, len(shape))
        bases.append(b.bitcast(gctx.data(out), I8P))
        strides.append([gctx.stride(out, d) for d in range(len(shape))])
        with strided_nest(gctx, shape[:inner], bases, [st[:inner] for st in strides]) as ptrs:
            args = row_args(gctx, operands, per_row, ptrs, out_dtype)
            status = b.call(kernel, [I64(0), shape[inner]] + args)
            check_status(gctx, status, node, kernel)

    branch(b, ok, rows, lambda: strided_elementwise(gctx, operands, compute, out, out_dtype, shape))


def _unit_inner(gctx: GraphContext, arr: ir.Value, dtype: str, inner: int) -> ir.Value:
    """i1: arr's last dimension is unit-stride (TRUE for a buffer the entry allocated)."""
    if gctx.known_contiguous(arr):
        return TRUE
    return gctx.builder.icmp_signed("==", gctx.stride(arr, inner), I64(L.itemsize(dtype)))


def unit_rows(gctx: GraphContext, operands: Sequence[Operand], shape: Sequence[ir.Value]) -> list[ir.Value]:
    """Conditions for reading operands row by row: a unit-stride last dimension of the loop's length."""
    b, inner, terms = gctx.builder, len(shape) - 1, []
    for o in operands:
        terms.append(_unit_inner(gctx, o.struct, o.dtype, inner))
        n = gctx.shape(o.struct, inner)
        if n is not shape[inner] and not same_constant(n, shape[inner]) and not proven_full(o, inner, shape):
            terms.append(b.icmp_signed("==", n, shape[inner]))
    return terms


def row_args(gctx: GraphContext, operands: Sequence[Operand], per_row: Sequence[bool], ptrs: Sequence[ir.Value],
              out_dtype: str) -> list:
    """The row kernel's arguments: typed row pointers, then the hoisted and per-row scalars, then the sink."""
    b, it = gctx.builder, iter(ptrs)
    arrays, scalars = [], []
    for o, r in zip(operands, per_row):
        if not o.is_array:
            scalars.append(o.scalar)
            continue
        typed = b.bitcast(next(it), L.llvm_scalar_type(o.dtype).as_pointer())
        (scalars if r else arrays).append(load_value(b, typed, o.dtype) if r else typed)
    sink = b.bitcast(next(it), L.llvm_scalar_type(out_dtype).as_pointer())
    return arrays + scalars + [sink]


def _run_kernel(gctx: GraphContext, name: str, kernel: ir.Function, args: list, total: ir.Value,
                parallel: bool) -> ir.Value:
    """Call kernel over [0, total), on several threads (GOMP_parallel) above PARALLEL_MIN_ITEMS."""
    b = gctx.builder
    if not parallel:
        return b.call(kernel, [I64(0), total] + args)
    may_fail = getattr(kernel, "gj_may_fail", True)
    status = gctx.alloca(I32, name=f"{name}.status") if may_fail else None
    with b.if_else(b.icmp_signed(">=", total, I64(PARALLEL_MIN_ITEMS))) as (big, small):
        with big:
            result = call_parallel(gctx, name, kernel, args, total)
            if may_fail:
                b.store(result, status)
        with small:
            result = b.call(kernel, [I64(0), total] + args)
            if may_fail:
                b.store(result, status)
    return b.load(status) if may_fail else I32(0)


@contextlib.contextmanager
def strided_nest(gctx: GraphContext, shape: Sequence[ir.Value], bases: list[ir.Value],
                  strides: list[list[ir.Value]]) -> Iterator[list[ir.Value]]:
    """Nested loops over shape advancing byte pointers bases[k] by strides[k][d]; yields the pointers."""
    with contextlib.ExitStack() as stack:
        ptrs = bases
        for d, n in enumerate(shape):
            i = stack.enter_context(gctx.for_range(n, name=f"s{d}"))
            b = gctx.builder
            ptrs = [b.gep(p, [b.mul(i, st[d])]) for p, st in zip(ptrs, strides)]
        yield ptrs


def _broadcast_strides(gctx: GraphContext, op: Operand, ndim: int) -> list[ir.Value]:
    b = gctx.builder
    out = []
    for d in range(ndim):
        if op.static_shape[d] == 1:
            out.append(I64(0))
            continue
        n, s = gctx.shape(op.struct, d), gctx.stride(op.struct, d)
        out.append(b.select(b.icmp_signed("==", n, I64(1)), I64(0), s))
    return out


def strided_operands(gctx: GraphContext, operands: Sequence[Operand], ndim: int) -> tuple[list, list]:
    """(byte base pointers, broadcast strides over ndim) of the array operands."""
    arrays = [o for o in operands if o.is_array]
    bases = [gctx.builder.bitcast(gctx.data(o.struct), I8P) for o in arrays]
    return bases, [_broadcast_strides(gctx, o, ndim) for o in arrays]


def values_at(gctx: GraphContext, operands: Sequence[Operand], ptrs: Sequence[ir.Value]) -> list[ir.Value]:
    """The operands' values at the given element pointers (scalars as they are)."""
    b, it, values = gctx.builder, iter(ptrs), []
    for o in operands:
        if o.is_array:
            typed = b.bitcast(next(it), L.llvm_scalar_type(o.dtype).as_pointer())
            values.append(load_value(b, typed, o.dtype))
        else:
            values.append(o.scalar)
    return values


def strided_elementwise(gctx: GraphContext, operands: Sequence[Operand], compute: Callable, out: ir.Value,
                         out_dtype: str, shape: Sequence[ir.Value]) -> None:
    """out[...] = compute(operands[...]) over shape through strided pointers (any layout)."""
    ndim = len(shape)
    bases, strides = strided_operands(gctx, operands, ndim)
    bases.append(gctx.builder.bitcast(gctx.data(out), I8P))
    strides.append([gctx.stride(out, d) for d in range(ndim)])
    with strided_nest(gctx, shape, bases, strides) as ptrs:
        b = gctx.builder
        v = compute(gctx, values_at(gctx, operands, ptrs[:-1]))
        store_value(b, b.bitcast(ptrs[-1], L.llvm_scalar_type(out_dtype).as_pointer()), v, out_dtype)


def copy_array(gctx: GraphContext, src: ir.Value, dst: ir.Value, dtype: str, shape: Sequence[ir.Value]) -> None:
    """dst[...] = src[...] (any strides; dst fresh)."""
    op = Operand(dtype, (None,) * len(shape), struct=src)
    strided_elementwise(gctx, [op], lambda ctx, vals: vals[0], dst, dtype, shape)
