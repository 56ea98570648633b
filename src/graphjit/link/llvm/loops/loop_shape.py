"""The shape of a fused loop: its operands, numpy's broadcast of their lengths with the checks nothing proves
needless (loops/lengths.py), the layout tests choosing its contiguous path, and constant trip counts.

loops/nest.py builds the loops on these (and re-exports them).
"""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_VALUE
from graphjit.link.llvm.ir.context import TRUE, LowerContext, is_true
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.loops import lengths

from graphjit.link.llvm.ir.graph_context import GraphContext

# a kernel whose range has a length known at compile time up to this many items gets that constant trip count and
# is unrolled completely (the kernels' pipeline unrolls nothing it is not asked to): small static shapes
UNROLL_MAX_ITEMS = 16


class Operand:
    """One input of a fused loop: an array struct pointer, or a value hoisted out of the loop.

    (A plain class: a dataclass costs ~0.3 ms to define, in every cold compile.)"""

    __slots__ = ("dtype", "static_shape", "struct", "scalar", "lengths")

    def __init__(self, dtype: str, static_shape: tuple, struct: ir.Value | None = None,
                 scalar: ir.Value | None = None, lengths: tuple | None = None) -> None:
        self.dtype = dtype
        self.static_shape = static_shape
        self.struct = struct
        self.scalar = scalar
        self.lengths = lengths      # the terms of its lengths (loops/lengths.py), when the graph proves any

    def __repr__(self) -> str:
        return f"Operand({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"

    @property
    def is_array(self) -> bool:
        """True if the operand is read per element."""
        return self.struct is not None


def c_contiguous(ctx: LowerContext, arr: ir.Value, ndim: int, dtype: str) -> ir.Value:
    """i1: is the array C-contiguous (any stride is fine on a length-1 dimension)? TRUE when known."""
    if ctx.known_contiguous(arr):
        return TRUE
    b = ctx.builder
    ok, expected = ir.Constant(ir.IntType(1), 1), I64(L.itemsize(dtype))
    for d in reversed(range(ndim)):
        n, s = ctx.shape(arr, d), ctx.stride(arr, d)
        good = b.or_(b.icmp_signed("==", n, I64(1)), b.icmp_signed("==", s, expected))
        ok = b.and_(ok, good)
        expected = b.mul(expected, n)
    return ok


def constant_trip(length: ir.Value) -> int | None:
    """length when it is a compile-time constant of at most UNROLL_MAX_ITEMS items (build_kernel's trip)."""
    if isinstance(length, ir.Constant) and 0 < int(length.constant) <= UNROLL_MAX_ITEMS:
        return int(length.constant)
    return None


SHORT_ROW = 8           # longest static row a row-by-row kernel is built for exactly (unrolled, no vector loop)


def short_trip(length: ir.Value) -> int | None:
    """length when it is a constant from 1 to SHORT_ROW (a row kernel's static row: one element needs no loop,
    a few are unrolled), else None.

    A vectorised kernel called on a row shorter than its vector width spends every call in its vector tail
    (~30 ns): a (100, 2) group's 100 rows cost 10x the same 200 elements run flat."""
    if isinstance(length, ir.Constant) and 1 <= int(length.constant) <= SHORT_ROW:
        return int(length.constant)
    return None


class LoopShape(list):
    """A loop's lengths (i64 values), with their terms (loops/lengths.py) when every array operand has them."""

    terms: tuple | None = None


def broadcast_shape(gctx: GraphContext, operands: Sequence[Operand], ndim: int, node: Apply) -> LoopShape:
    """The loop shape: numpy's broadcast of the array operands' lengths; ValueError when they clash.

    An operand whose length the graph proves compatible with the running length (loops/lengths.py: its term's
    members are the running term's) is not checked; a length proven constant is the loop's constant trip count.
    """
    b = gctx.builder
    msg = None
    arrays = [op for op in operands if op.is_array]
    proven = bool(arrays) and all(op.lengths is not None and len(op.lengths) == ndim for op in arrays)
    shape, terms = LoopShape(), []
    for d in range(ndim):
        n, term = None, 1                          # length 1 so far (nothing to check against)
        for op in arrays:
            if op.static_shape[d] == 1:
                continue
            c = gctx.shape(op.struct, d)
            t = op.lengths[d] if proven else None
            if n is None or c is n or same_constant(c, n) or (proven and lengths.covers(term, t)):
                n, term = (c, t) if n is None else (n, term)
                continue
            if proven and lengths.covers(t, term):
                n, term = c, t
                continue
            if msg is None:
                msg = gctx.message(node, "ValueError", "shape mismatch: operands could not be broadcast together "
                                   "(lengths %lld and %lld in dimension %lld)")
            bad = b.and_(b.and_(b.icmp_signed("!=", c, I64(1)), b.icmp_signed("!=", n, I64(1))),
                         b.icmp_signed("!=", c, n))
            gctx.error_if(bad, GJ_ERR_VALUE, msg=msg, node=gctx.node_index(node), args=[n, c, I64(d)])
            n = b.select(b.icmp_signed("!=", c, I64(1)), c, n)
            term = lengths.broadcast([term, t], ("loop", gctx.node_index(node), d)) if proven else None
        known = lengths.constant_length(term) if proven else None
        shape.append(I64(known) if known is not None else I64(1) if n is None else n)
        terms.append(term)
    shape.terms = tuple(terms) if proven else None
    return shape


def proven_lead(operands: Sequence[Operand], ndim: int) -> int | None:
    """The position among the array operands of one whose lengths provably are the loop's in every dimension
    (every other operand broadcasts with it by construction: loops/lengths.py), else None."""
    arrays = [o for o in operands if o.is_array]
    if not arrays or any(o.lengths is None or len(o.lengths) != ndim for o in arrays):
        return None
    for k, lead in enumerate(arrays):
        if all(lengths.covers(lead.lengths[d], o.lengths[d]) for o in arrays for d in range(ndim)):
            return k
    return None


def same_constant(a: ir.Value, b: ir.Value) -> bool:
    """Both are the same integer constant (two I64(8) are distinct objects)."""
    return isinstance(a, ir.Constant) and isinstance(b, ir.Constant) and a.constant == b.constant


def proven_full(op: Operand, d: int, shape: Sequence[ir.Value]) -> bool:
    """True if operand's length d is provably the loop's (the same term: no broadcasting in that dimension)."""
    terms = getattr(shape, "terms", None)
    return terms is not None and op.lengths is not None and op.lengths[d] == terms[d]


def all_full_contiguous(gctx: GraphContext, operands: Sequence[Operand], shape: Sequence[ir.Value]) -> ir.Value:
    """i1: every array operand is C-contiguous and has the full loop shape (no broadcasting).

    TRUE when that is known: operands the entry allocated, whose lengths are the loop's own values (or
    provably the loop's lengths).
    """
    b = gctx.builder
    terms = []
    for op in operands:
        if not op.is_array:
            continue
        terms.append(c_contiguous(gctx, op.struct, len(shape), op.dtype))
        terms += [b.icmp_signed("==", m, n) for d, (m, n) in enumerate(zip(gctx.shapes(op.struct, len(shape)), shape))
                  if m is not n and not same_constant(m, n) and not proven_full(op, d, shape)]
    return conjunction(b, terms)


def conjunction(b: ir.IRBuilder, terms: Sequence[ir.Value]) -> ir.Value:
    """i1: all terms hold (constant-true terms emit nothing; TRUE when no term is left)."""
    ok = TRUE
    for t in terms:
        if not is_true(t):
            ok = t if is_true(ok) else b.and_(ok, t)
    return ok
