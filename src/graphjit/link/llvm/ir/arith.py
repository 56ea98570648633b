"""Integer arithmetic of lengths and indices emitted in IR, folding what is known at compile time."""

from __future__ import annotations

from typing import Sequence

from llvmlite import ir

from graphjit.link.llvm.ir.layouts import I64


def product(b: ir.IRBuilder, values: Sequence[ir.Value]) -> ir.Value:
    """The product of i64 values (1 when empty); constants are multiplied here (a constant when all are)."""
    known = 1
    out = None
    for v in values:
        if isinstance(v, ir.Constant):
            known *= int(v.constant)
        else:
            out = v if out is None else b.mul(out, v)
    if out is None:
        return I64(known)
    return out if known == 1 else b.mul(out, I64(known))
