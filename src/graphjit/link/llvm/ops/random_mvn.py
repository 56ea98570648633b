"""Native ``multivariate_normal(mean, cov, method="cholesky")``: numpy's draws, factor and product, bit for bit.

numpy draws ``standard_normal(size + (k,))``, factors ``L = linalg.cholesky(cov)`` (LAPACK ``dpotrf('L')`` of its
own OpenBLAS on a Fortran-order copy, the upper triangle zeroed) and returns ``mean + x @ L.T``: matmul calls
that OpenBLAS's ``dgemv`` for one row (``vector @ matrix``) and ``dgemm`` for several (row-major ``NoTrans, Trans``
is column-major ``('T', 'N')`` with the operands swapped), a product for k = 1.  The lowering calls the same
routines of numpy's library (jit/blas_library.py finds it) with the same arguments, so the sums round alike;
without that library the draw keeps perform.  A batch draws one vector per element in C order (perform's one
numpy call per element), which is every normal first, then each element's factor and product.  The factors
are computed before the draws (a failed one raises numpy's "Matrix is not positive definite").
"""

from __future__ import annotations

from typing import Optional, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.tensor.random_multivariate import MultivariateNormalRV

from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64, I8, I8P
from graphjit.link.llvm.jit import binding
from graphjit.link.llvm.jit.blas_library import numpy_routines
from graphjit.link.llvm.jit.symbols import provide
from graphjit.link.llvm.loops.rows import byte_ptr, load_as, store_as
from graphjit.link.llvm.ops.random import npr_function, note_long_draw, split_inputs
from graphjit.link.llvm.ops.random_loops import check_broadcast, each_element
from graphjit.link.llvm.ops.random_multivariate import batch_shape, can_lower_batched
from graphjit.link.llvm.ops.random_state import acquire, bitgen_pointer, drop_copy, generator_for, release
from graphjit.link.llvm.registry import lowerings

DBL = ir.DoubleType()
DP, LP = DBL.as_pointer(), I64.as_pointer()
ROUTINES = {"dpotrf": [I8P, LP, DP, LP, LP],
            "dgemm": [I8P, I8P, LP, LP, LP, DP, DP, LP, DP, LP, DP, DP, LP],
            "dgemv": [I8P, LP, LP, DP, DP, LP, DP, LP, DP, DP, LP]}
_FOUND: dict[str, Optional[dict[str, int]]] = {}


def _symbol(name: str) -> str:
    return f"gj_np_mvn_{name}"


def numpy_lapack() -> Optional[dict[str, int]]:
    """numpy's ILP64 dpotrf, dgemm and dgemv, published for compiled code (None: not numpy's OpenBLAS)."""
    if "found" not in _FOUND:
        found = numpy_routines(list(ROUTINES))
        for name, address in (found or {}).items():
            if not binding.address_of_symbol(_symbol(name)):
                binding.add_symbol(_symbol(name), address)
        _FOUND["found"] = found
    return _FOUND["found"]


for _name in ROUTINES:                  # for cache hits in a new process
    provide(_symbol(_name), lambda _n=_name: (numpy_lapack() or {}).get(_n, 0))


def can_lower_mvn(node: Apply) -> bool:
    """numpy's bundled OpenBLAS in this process (its rounding); real dtypes, batch axes no more than the sample's."""
    return can_lower_batched(node) and numpy_lapack() is not None


class _Calls:
    """The three routines and the constant arguments (pointers to i64 / double / char slots) of one lowering."""

    def __init__(self, ctx: GraphContext, k: ir.Value) -> None:
        self.ctx = ctx
        numpy_lapack()
        self.fn = {n: ctx.declare(_symbol(n), ir.FunctionType(ir.VoidType(), args)) for n, args in ROUTINES.items()}
        self.k, self.one, self.info, self.rows = (self._slot(I64, v) for v in (k, I64(1), I64(0), I64(0)))
        self.alpha, self.beta = self._slot(DBL, DBL(1.0)), self._slot(DBL, DBL(0.0))
        self.chars = {c: self._slot(I8, I8(ord(c))) for c in "LTN"}

    def _slot(self, ty: ir.Type, value: ir.Value) -> ir.Value:
        slot = self.ctx.alloca(ty)
        self.ctx.builder.store(value, slot)
        return slot

    def potrf(self, a: ir.Value) -> ir.Value:
        self.ctx.builder.call(self.fn["dpotrf"], [self.chars["L"], self.k, a, self.k, self.info])
        return self.ctx.builder.load(self.info)

    def gemv(self, factor: ir.Value, x: ir.Value, y: ir.Value) -> None:
        """y = L x (numpy: cblas_dgemv(ColMajor, Trans, k, k, 1, L, k, x, 1, 0, y, 1))."""
        self.ctx.builder.call(self.fn["dgemv"], [self.chars["T"], self.k, self.k, self.alpha, factor, self.k, x,
                                                 self.one, self.beta, y, self.one])

    def gemm(self, factor: ir.Value, x: ir.Value, y: ir.Value, m: ir.Value) -> None:
        """y = x L^T for m rows (numpy: cblas_dgemm(RowMajor, NoTrans, Trans, m, k, k, 1, x, k, L, k, 0, y, k))."""
        b = self.ctx.builder
        b.store(m, self.rows)
        b.call(self.fn["dgemm"], [self.chars["T"], self.chars["N"], self.k, self.rows, self.k, self.alpha, factor,
                                  self.k, x, self.k, self.beta, y, self.k])


def _factor(ctx: GraphContext, node: Apply, calls: _Calls, cov: ir.Value, dtype: str, rs: ir.Value, cs: ir.Value,
            k: ir.Value, work: ir.Value, factor: ir.Value) -> None:
    """numpy's cholesky of the k x k matrix at byte pointer cov: the C-order lower factor into factor."""
    b = ctx.builder
    with ctx.for_range(k, name="fi") as i:
        with ctx.for_range(k, name="fj") as j:
            src = b.gep(cov, [b.add(b.mul(i, rs), b.mul(j, cs))])
            b.store(load_as(ctx, src, dtype, "float64"), b.gep(work, [b.add(i, b.mul(j, k))]))   # Fortran order
    with b.if_then(b.icmp_signed(">", k, I64(0))):
        ctx.raise_if(b.icmp_signed("!=", calls.potrf(work), I64(0)), node, "ValueError",
                     f"{node.op}: Matrix is not positive definite")
    with ctx.for_range(k, name="li") as i:
        with ctx.for_range(k, name="lj") as j:
            value = b.select(b.icmp_signed(">=", i, j), b.load(b.gep(work, [b.add(i, b.mul(j, k))])), DBL(0.0))
            b.store(value, b.gep(factor, [b.add(b.mul(i, k), j)]))


def _product(ctx: GraphContext, calls: _Calls, factor: ir.Value, x: ir.Value, y: ir.Value, m: ir.Value,
             k: ir.Value) -> None:
    """numpy's x @ L.T for m rows: a product (k = 1), dgemv (one row), dgemm (several)."""
    b = ctx.builder
    single = b.icmp_signed("==", k, I64(1))
    with b.if_else(single) as (scalar, blas):
        with scalar:
            with ctx.for_range(m, name="mul") as i:
                b.store(b.fmul(b.load(b.gep(x, [i])), b.load(factor)), b.gep(y, [i]))
        with blas:
            with b.if_else(b.icmp_signed("==", m, I64(1))) as (row, rows):
                with row:
                    calls.gemv(factor, x, y)
                with rows:
                    with b.if_then(b.icmp_signed(">", b.mul(m, k), I64(0))):
                        calls.gemm(factor, x, y, m)


def _check_shapes(ctx: GraphContext, node: Apply, mean: ir.Value, cov: ir.Value, nbm: int, nbc: int) -> ir.Value:
    b = ctx.builder
    k, rows, cols = ctx.shape(mean, nbm), ctx.shape(cov, nbc), ctx.shape(cov, nbc + 1)
    ctx.raise_if(b.icmp_signed("!=", rows, cols), node, "ValueError",
                 f"{node.op}: cov must be 2 dimensional and square")
    ctx.raise_if(b.icmp_signed("!=", k, rows), node, "ValueError", f"{node.op}: mean and cov must have same length")
    return k


@lowerings.register(MultivariateNormalRV, applies=can_lower_mvn, objects=True)
def lower_mvn(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's Generator.multivariate_normal(mean, cov, size, method='cholesky'), per batch element."""
    b = ctx.builder
    size, (mean, cov), (mvar, cvar) = split_inputs(node, inputs)
    nbm, nbc = mvar.ndim - 1, cvar.ndim - 2
    k = _check_shapes(ctx, node, mean, cov, nbm, nbc)
    batch = batch_shape(ctx, node, size, [mean, cov], [nbm, nbc])
    check_broadcast(ctx, node, batch, [mean, cov], [nbm, nbc])
    m = I64(1)
    for n in batch:
        m = b.mul(m, n)
    batched = nbm > 0 or nbc > 0
    calls = _Calls(ctx, k)
    kk = b.mul(k, k)
    work = ctx.data(ctx.temp_array(node, "float64", [kk], "work"))
    factors = ctx.data(ctx.temp_array(node, "float64", [b.mul(m, kk) if batched else kk], "factor"))
    rs, cs = ctx.stride(cov, nbc), ctx.stride(cov, nbc + 1)
    if batched:
        counter = ctx.alloca(I64)
        b.store(I64(0), counter)
        with each_element(ctx, batch, [cov], [nbc], name="chol") as (pc,):
            i = b.load(counter)
            _factor(ctx, node, calls, pc, cvar.type.dtype, rs, cs, k, work, b.gep(factors, [b.mul(i, kk)]))
            b.store(b.add(i, I64(1)), counter)
    else:
        _factor(ctx, node, calls, byte_ptr(ctx, cov), cvar.type.dtype, rs, cs, k, work, factors)
    note_long_draw(ctx, node)
    out = ctx.allocate(node, 1, [*batch, k])
    total = b.mul(m, k)
    x = ctx.data(ctx.temp_array(node, "float64", [total], "z"))
    y = ctx.data(ctx.temp_array(node, "float64", [total], "y"))
    normal = npr_function(ctx, "random_standard_normal", DBL, [])
    new_slot, gen, copy = generator_for(ctx, node, inputs[0])
    bitgen = bitgen_pointer(ctx, gen)
    taken = acquire(ctx, gen)
    with ctx.for_range(total, name="z") as i:
        b.store(b.call(normal, [bitgen]), b.gep(x, [i]))
    release(ctx, gen, taken)
    drop_copy(ctx, copy)
    if batched:
        with ctx.for_range(m, name="prod") as i:
            at = b.mul(i, k)
            _product(ctx, calls, b.gep(factors, [b.mul(i, kk)]), b.gep(x, [at]), b.gep(y, [at]), I64(1), k)
    else:
        _product(ctx, calls, factors, x, y, m, k)
    out_dtype, mstride, ostride = node.outputs[1].type.dtype, ctx.stride(mean, nbm), ctx.stride(out, len(batch))
    counter = ctx.alloca(I64)
    b.store(I64(0), counter)
    with each_element(ctx, batch, [mean, out], [nbm, len(batch)], name="shift") as (pm, po):
        row = b.load(counter)
        with ctx.for_range(k, name="add") as j:
            mu = load_as(ctx, b.gep(pm, [b.mul(j, mstride)]), mvar.type.dtype, "float64")
            v = b.fadd(mu, b.load(b.gep(y, [b.add(b.mul(row, k), j)])))
            store_as(ctx, b.gep(po, [b.mul(j, ostride)]), cast_value(b, v, "float64", out_dtype), out_dtype)
        b.store(b.add(row, I64(1)), counter)
    return [new_slot, out]


__all__ = ["lower_mvn", "can_lower_mvn", "numpy_lapack"]
