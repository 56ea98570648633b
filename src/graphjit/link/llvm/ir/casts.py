"""Scalar values in their LLVM compute representation, and numpy's astype between dtypes on them.

Floats are float/double, integers iN, bool i1 (i8 in memory: loops.load_value/store_value convert), complex
{T re, T im} (the memory layout too: ir/complex_math.py).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir


def compute_type(dtype: str) -> ir.Type:
    """The LLVM type values of dtype are computed in (bool: i1)."""
    if dtype == "bool":
        return ir.IntType(1)
    if dtype == "float32":
        return ir.FloatType()
    if dtype == "float64":
        return ir.DoubleType()
    if dtype in _COMPONENT:
        part = compute_type(_COMPONENT[dtype])
        return ir.LiteralStructType([part, part])
    return ir.IntType(np.dtype(dtype).itemsize * 8)


_COMPONENT = {"complex64": "float32", "complex128": "float64"}


def component_dtype(dtype: str) -> str:
    """The float dtype of a complex dtype's real and imaginary parts."""
    return _COMPONENT[dtype]


def zero_value(dtype: str) -> ir.Constant:
    """0 of dtype in its compute type (complex: 0 + 0j)."""
    ty = compute_type(dtype)
    if isinstance(ty, ir.LiteralStructType):
        return ir.Constant(ty, [ir.Constant(t, 0.0) for t in ty.elements])
    return ir.Constant(ty, 0.0 if isinstance(ty, (ir.FloatType, ir.DoubleType)) else 0)


def kind(dtype: str) -> str:
    """numpy's kind letter of dtype ('b', 'i', 'u', 'f', 'c')."""
    return np.dtype(dtype).kind


def element_type(ty: ir.Type) -> ir.Type:
    """The scalar type of ty's lanes (ty itself for a scalar): casts work on vectors too (loops/vector_body.py)."""
    return ty.element if isinstance(ty, ir.VectorType) else ty


def cast_value(b: ir.IRBuilder, v: ir.Value, src: str, dst: str) -> ir.Value:
    """numpy's astype of one compute value from dtype src to dtype dst."""
    if src == dst:
        return v
    sk, dk, ty = kind(src), kind(dst), compute_type(dst)
    if "c" in (sk, dk):
        return _complex_cast(b, v, src, dst)
    if dk == "b":
        if sk == "f":
            return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
    if sk == "b":
        return b.uitofp(v, ty) if dk == "f" else b.zext(v, ty)
    if sk == "f" and dk == "f":
        return b.fpext(v, ty) if isinstance(ty, ir.DoubleType) else b.fptrunc(v, ty)
    if sk == "f":
        return _float_to_int(b, v, dk, ty.width)
    if dk == "f":
        return b.sitofp(v, ty) if sk == "i" else b.uitofp(v, ty)
    width = element_type(v.type).width
    if ty.width == width:
        return v
    if ty.width < width:
        return b.trunc(v, ty)
    return b.sext(v, ty) if sk == "i" else b.zext(v, ty)


def _float_to_int(b: ir.IRBuilder, v: ir.Value, kind: str, width: int) -> ir.Value:
    """numpy's float -> int cast as on x86-64, NaN and out-of-range values included (scalar/casting.py)."""
    if kind == "i" and width == 64:
        return _cvtt(b, v, 64)
    if kind == "i" or width <= 16:
        r = _cvtt(b, v, 32)
        return r if width == 32 else b.trunc(r, ir.IntType(width))
    half = ir.Constant(v.type, 2.0 ** (width - 1))
    big = b.fcmp_ordered(">=", v, half)
    low = _cvtt(b, b.select(big, b.fsub(v, half), v), width)
    return b.select(big, b.xor(low, ir.Constant(low.type, 1 << (width - 1))), low)


def _cvtt(b: ir.IRBuilder, v: ir.Value, bits: int) -> ir.Value:
    """x86's cvtt: truncate to a signed `bits`-bit int, INT_MIN when NaN or out of range (never poison)."""
    lo = -(1 << (bits - 1))
    np_float = np.float32 if isinstance(element_type(v.type), ir.FloatType) else np.float64
    below = lo - 1  # the largest integer whose truncation no longer fits, when the float type holds it
    if int(np_float(below)) == below:
        low_ok = b.fcmp_ordered(">", v, ir.Constant(v.type, float(below)))
    else:
        low_ok = b.fcmp_ordered(">=", v, ir.Constant(v.type, float(lo)))
    ok = b.and_(low_ok, b.fcmp_ordered("<", v, ir.Constant(v.type, -float(lo))))
    ity = ir.IntType(bits)
    conv = b.fptosi(b.select(ok, v, ir.Constant(v.type, 0.0)), ity)
    return b.select(ok, conv, ir.Constant(ity, lo))


def _complex_cast(b: ir.IRBuilder, v: ir.Value, src: str, dst: str) -> ir.Value:
    """astype to or from complex: a real value gets imaginary part 0; a complex one to a real dtype keeps its
    real part (numpy's, less its ComplexWarning: graphjit's cast() refuses that cast, Cast ops inside
    gradients use it), to bool: either part nonzero."""
    if kind(dst) != "c":
        re, im = b.extract_value(v, 0), b.extract_value(v, 1)
        if kind(dst) == "b":
            zero = ir.Constant(re.type, 0.0)
            return b.or_(b.fcmp_unordered("!=", re, zero), b.fcmp_unordered("!=", im, zero))
        return cast_value(b, re, component_dtype(src), dst)
    part = component_dtype(dst)
    if kind(src) == "c":
        re = cast_value(b, b.extract_value(v, 0), component_dtype(src), part)
        im = cast_value(b, b.extract_value(v, 1), component_dtype(src), part)
    else:
        re, im = cast_value(b, v, src, part), ir.Constant(compute_type(part), 0.0)
    out = b.insert_value(ir.Constant(compute_type(dst), ir.Undefined), re, 0)
    return b.insert_value(out, im, 1)
