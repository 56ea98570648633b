"""Per-matrix LAPACK kernels of the linear-algebra lowerings: one internal glue function per (op, dtype,
settings), called once per matrix of a batch by the entry (ops/linalg.py).

LAPACK is column-major; the outputs are C-contiguous.  A C-contiguous n x n buffer read column-major is the
transpose, which most kernels use instead of transposing: a Cholesky factor is computed in the output with the
other ``uplo``, an inverse of a^T in place is the transpose of the inverse, a right-hand side copied row-major
is solved from the right (``?trsm`` side 'R').  Inputs of any strides are first copied into the output or a
planned scratch buffer (the entry allocates it once per call, and the buffer is reused across calls), so
LAPACK never writes into an input.  A kernel returns LAPACK's ``info`` (0: success, > 0: singular / not
positive definite / no convergence); with ``nan`` it has then filled its results with NaN.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Sequence

from llvmlite import ir

from graphjit.link.llvm.ir.casts import compute_type
from graphjit.link.llvm.ir.context import LowerContext, glue_function
from graphjit.link.llvm.ir.layouts import I8, I8P, I32, I64
from graphjit.link.llvm.jit.lapack_library import routine
from graphjit.link.llvm.loops.rows import advance, load_as, nest, store_as

_PREFIX = {"float64": "d", "float32": "s", "complex128": "z", "complex64": "c"}
_REAL = {"complex128": "float64", "complex64": "float32"}
# the complex names of the real routines with the same arguments (the Hermitian / unitary ones)
_COMPLEX_NAME = {"orgqr": "ungqr"}


class Kernel(LowerContext):
    """A LowerContext inside one kernel, with LAPACK argument slots and matrix loops; dtype float32/float64
    or complex64/complex128 (``real`` is the dtype of its parts: eigenvalues, singular values, rwork)."""

    def __init__(self, fn: ir.Function, dtype: str) -> None:
        super().__init__(ir.IRBuilder(fn.append_basic_block("entry")))
        self.dtype, self.ty = dtype, compute_type(dtype)
        self.complex = dtype in _REAL
        self.real = _REAL.get(dtype, dtype)
        self.real_ty = compute_type(self.real)
        self.isz = I64({"float32": 4, "float64": 8, "complex64": 8, "complex128": 16}[dtype])
        self.rsz = I64(4 if self.real == "float32" else 8)

    def const(self, v: float, im: float = 0.0) -> ir.Constant:
        """The constant v (+ im j) of the kernel's dtype."""
        if self.complex:
            return ir.Constant(self.ty, [ir.Constant(self.real_ty, v), ir.Constant(self.real_ty, im)])
        return ir.Constant(self.ty, v)

    def is_zero(self, v: ir.Value) -> ir.Value:
        """v == 0 (both parts for a complex v)."""
        b = self.builder
        if not self.complex:
            return b.fcmp_ordered("==", v, ir.Constant(self.ty, 0.0))
        zero = ir.Constant(self.real_ty, 0.0)
        return b.and_(b.fcmp_ordered("==", b.extract_value(v, 0), zero),
                      b.fcmp_ordered("==", b.extract_value(v, 1), zero))

    def i32(self, v: ir.Value | int) -> ir.Value:
        """An int* argument holding v."""
        slot = self.alloca(I32)
        self.builder.store(I32(v) if isinstance(v, int) else self.builder.trunc(v, I32), slot)
        return slot

    def char(self, c: str | ir.Value) -> ir.Value:
        """A char* argument holding c (a letter, or an i8 value)."""
        slot = self.alloca(I8)
        self.builder.store(I8(ord(c)) if isinstance(c, str) else c, slot)
        return slot

    def scalar(self, v: float) -> ir.Value:
        """A pointer argument holding v (of the kernel's dtype: complex v + 0j for a complex kernel)."""
        slot = self.alloca(self.ty)
        self.builder.store(self.const(v), slot)
        return slot

    def call(self, name: str, args: Sequence[ir.Value]) -> None:
        """Call LAPACK/BLAS routine <s|d|c|z>name (orgqr is ungqr for complex)."""
        name = _COMPLEX_NAME.get(name, name) if self.complex else name
        fn = routine(self.module, _PREFIX[self.dtype] + name)
        self.builder.call(fn, [self.builder.bitcast(a, I8P) for a in args])

    def conj(self, v: ir.Value) -> ir.Value:
        """The complex conjugate of v (v itself for a real kernel)."""
        if not self.complex:
            return v
        b = self.builder
        return b.insert_value(v, b.fneg(b.extract_value(v, 1)), 1)

    def copy(self, src: ir.Value, srs: ir.Value, scs: ir.Value, dst: ir.Value, drs: ir.Value, dcs: ir.Value,
             rows: ir.Value, cols: ir.Value, conj: bool = False) -> None:
        """dst[i, j] = src[i, j] (byte strides; conj: its conjugate)."""
        with nest(self, [rows, cols], [src, dst], [[srs, scs], [drs, dcs]], name="cp") as (s, d):
            v = load_as(self, s, self.dtype, self.dtype)
            store_as(self, d, self.conj(v) if conj else v, self.dtype)

    def fill(self, dst: ir.Value, count: ir.Value, value: float) -> None:
        """count contiguous elements of dst set to value (+ 0j)."""
        with self.for_range(count, name="fill") as i:
            store_as(self, advance(self, dst, i, self.isz), self.const(value), self.dtype)

    def at(self, base: ir.Value, i: ir.Value, j: ir.Value, n: ir.Value) -> ir.Value:
        """Byte pointer of element (i, j) of a C-contiguous matrix with n columns."""
        b = self.builder
        return advance(self, base, b.add(b.mul(i, n), j), self.isz)

    def zero_triangle(self, base: ir.Value, n: ir.Value, upper: bool) -> None:
        """Zero the strict upper (or lower) triangle of a C-contiguous n x n matrix."""
        b = self.builder
        with self.for_range(n, name="zr") as i:
            start, stop = (b.add(i, I64(1)), n) if upper else (I64(0), i)
            with self.for_range(stop, start=start, name="zc") as j:
                store_as(self, self.at(base, i, j, n), self.const(0.0), self.dtype)

    @contextlib.contextmanager
    def lu_diagonal(self, a: ir.Value, ars: ir.Value, acs: ir.Value, n: ir.Value, sa: ir.Value,
                    ipiv: ir.Value) -> Iterator[tuple[ir.Value, ir.Value]]:
        """a copied into sa and factored by ?getrf; the body runs for each i < n with (U[i, i], whether ?getrf
        swapped row i): what a determinant multiplies."""
        b = self.builder
        self.copy(a, ars, acs, sa, b.mul(n, self.isz), self.isz, n, n)
        info = self.alloca(I32)
        self.call("getrf", [self.i32(n), self.i32(n), sa, self.i32(n), ipiv, info])
        piv = b.bitcast(ipiv, I32.as_pointer())
        with self.for_range(n, name="dd") as i:
            u = load_as(self, self.at(sa, i, i, n), self.dtype, self.dtype)
            yield u, b.icmp_signed("!=", b.sext(b.load(b.gep(piv, [i])), I64), b.add(i, I64(1)))

    @contextlib.contextmanager
    def early_return(self, cond: ir.Value, value: ir.Value | int = 0) -> Iterator[None]:
        """If cond: run the body, then return value."""
        with self.builder.if_then(cond, likely=False):
            yield
            self.builder.ret(I32(value) if isinstance(value, int) else value)


def kernel(module: ir.Module, name: str, dtype: str, args: Sequence[ir.Type],
           build: Callable[[Kernel, list], None]) -> ir.Function:
    """The glue function glue.linalg.<name>.<dtype>(args...) -> i32, built by build(kernel, fn.args)."""
    def make(fn: ir.Function) -> None:
        build(Kernel(fn, dtype), list(fn.args))
    return glue_function(module, f"linalg.{name}.{dtype}", ir.FunctionType(I32, list(args)), make)


def info_of(k: Kernel, slot: ir.Value) -> ir.Value:
    """LAPACK's info as i32."""
    return k.builder.load(slot)


def fail_if(k: Kernel, info: ir.Value, nan_targets: Sequence[tuple[ir.Value, ir.Value]], nan: bool) -> None:
    """Return info when it is not 0, first filling each (pointer, count) with NaN in nan mode."""
    with k.early_return(k.builder.icmp_signed("!=", info, I32(0)), info):
        if nan:
            with k.builder.if_then(k.builder.icmp_signed(">", info, I32(0))):
                for ptr, count in nan_targets:
                    k.fill(ptr, count, float("nan"))


def a_layout(k: Kernel, a: ir.Value, ars: ir.Value, acs: ir.Value, n: ir.Value, scratch: ir.Value,
             row_major: bool = False) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(pointer, lda, is_row_major) of a as LAPACK may read it in place; else copied row-major into scratch
    (always unless row-major already, with row_major: the caller needs the view a^T).

    Read column-major, a row-major a is a^T; a column-major one is a itself.
    """
    b = k.builder
    isz = k.isz
    whole = lambda s: b.icmp_signed("==", b.srem(s, isz), I64(0))  # noqa: E731
    small = b.icmp_signed("<=", n, I64(1))
    rows_ok = b.and_(whole(ars), b.icmp_signed(">=", ars, b.mul(n, isz)))
    rm = b.or_(small, b.and_(b.icmp_signed("==", acs, isz), rows_ok))
    cm = b.and_(b.icmp_signed("==", ars, isz), b.and_(whole(acs), b.icmp_signed(">=", acs, b.mul(n, isz))))
    cm = ir.Constant(ir.IntType(1), 0) if row_major else cm
    with b.if_then(b.not_(b.or_(rm, cm)), likely=False):
        k.copy(a, ars, acs, scratch, b.mul(n, isz), isz, n, n)
    use_rm = b.or_(rm, b.not_(cm))
    ptr = b.select(b.or_(rm, cm), a, scratch)
    ld_rm = b.select(small, b.select(b.icmp_signed("<", n, I64(1)), I64(1), n), b.select(rm, b.sdiv(ars, isz), n))
    ld = b.select(use_rm, ld_rm, b.sdiv(acs, isz))
    return ptr, ld, use_rm


def pick(k: Kernel, cond: ir.Value, yes: str, no: str) -> ir.Value:
    """The char* of letter yes if cond else no."""
    return k.char(k.builder.select(cond, I8(ord(yes)), I8(ord(no))))
