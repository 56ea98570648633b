"""The per-lane sort kernel of the sorting lowerings (ops/sort.py), assembled from ops/sort_kernels.py's pieces
and ops/sort_msd.py's MSD radix sort (sort_kernels.py's docstring describes the whole).

scratch (one per node, sized for one lane) holds two key buffers, two i32 index buffers (when indices are
asked for) and the MSD levels' counts."""

from __future__ import annotations

from typing import Optional

from llvmlite import ir

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.ir.modules import kernel_function
from graphjit.link.llvm.ops.sort_kernels import (KERNEL_ARGS, LANES, VOID, KernelSpec, SortKernel, load_keys,
                                                 restore_zeros_and_nans, scratch_layout)
from graphjit.link.llvm.ops.sort_leaf import small_lane
from graphjit.link.llvm.ops.sort_msd import BIG, I32P, hist_counts, msd_function, top_of, write_results


def scratch_bytes(b: ir.IRBuilder, dtype: str, n: ir.Value, with_idx: bool) -> ir.Value:
    """Bytes of scratch the kernel needs for lanes of n elements."""
    width = L.itemsize(dtype)
    keys, idx = scratch_layout(b, width, n, with_idx)
    big = b.icmp_signed(">=", n, I64(BIG))
    counts = b.select(big, I64(hist_counts(width, True)), I64(hist_counts(width, False)))
    return b.add(b.mul(b.add(keys, idx), I64(2)), b.mul(counts, I64(4)))


def sort_kernel(ctx: LowerContext, dtype: str, values: bool, idx_dtype: Optional[str],
                descending: bool) -> ir.Function:
    """The kernel for lanes of dtype (see the module docstring), defined on first use."""
    spec = KernelSpec(dtype, values, idx_dtype, descending)
    fn, new = kernel_function(ctx.module, spec.name, ir.FunctionType(VOID, KERNEL_ARGS))
    if new:
        for k in (0, 4, 6, 8):
            fn.args[k].add_attribute("noalias")
        _build(SortKernel(fn, spec), list(fn.args))
    return fn


def _build(k: SortKernel, args: list) -> None:
    b, spec = k.builder, k.spec
    src, ss, n, count, vals, vs, idx_out, iss, scratch = args
    with b.if_then(b.icmp_signed("==", n, I64(0)), likely=False):
        b.ret_void()
    with b.if_then(b.icmp_signed("<=", n, I64(LANES))):      # returns unless its lane needs the scratch
        small_lane(k, src, ss, n, count, (vals, vs), (idx_out, iss))
    with_idx = spec.idx_dtype is not None
    kbytes, ibytes = scratch_layout(b, spec.width, n, with_idx)
    kp = spec.key.as_pointer()
    keys = [b.bitcast(scratch, kp), b.bitcast(b.gep(scratch, [kbytes]), kp)]
    ibase = b.gep(scratch, [b.mul(kbytes, I64(2))])
    idx = [b.bitcast(ibase, I32P), b.bitcast(b.gep(ibase, [ibytes]), I32P)]
    hist = b.bitcast(b.gep(ibase, [b.mul(ibytes, I64(2))]), I32P)
    stats = load_keys(k, src, ss, n, keys[0], idx[0] if with_idx else None)
    outs = ((vals, vs), (idx_out, iss))
    with b.if_else(b.icmp_signed("==", stats["descents"], I64(0))) as (in_order, unsorted):
        with in_order:
            write_results(k, keys[0], idx[0], I64(0), count, *outs)
        with unsorted:      # the MSD sort from the highest bit where the keys differ
            top = top_of(k, stats["min"], stats["max"])
            b.call(msd_function(k), [keys[0], keys[1], idx[0], idx[1], n, top, hist, vals, vs, idx_out, iss,
                                     count])
    if spec.values and spec.kind == "f":
        restore_zeros_and_nans(k, src, ss, n, count, vals, vs, stats)
    b.ret_void()
