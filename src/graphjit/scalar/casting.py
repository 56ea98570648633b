"""numpy's astype, with float -> integer casts of NaN, inf and out-of-range values pinned down.

C leaves a float -> int conversion undefined when the truncated value does not fit; numpy uses the C cast, so
its result is whatever the CPU's instruction gives. On x86-64 (cvttsd2si/cvttss2si) an out-of-range or NaN
value becomes the "integer indefinite" INT_MIN of the 32- or 64-bit conversion, and numpy's loops build every
integer dtype from those two conversions (see docs/dtypes.md for the table). ``astype`` computes exactly that
on every platform, with no RuntimeWarning, and the LLVM lowering (link/llvm/ir/casts.py) emits the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def cvtt(x: np.ndarray, bits: int) -> np.ndarray:
    """x86's truncating conversion to a signed `bits`-bit int (INT_MIN out of range or NaN), as int64."""
    lo, hi = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1)
    with np.errstate(invalid="ignore"):
        t = np.trunc(x)
        ok = (t >= lo) & (t < hi)
        return np.where(ok, np.where(ok, t, 0).astype(np.int64), np.int64(-(2 ** (bits - 1))))


def float_to_int(x: Any, dtype: str) -> np.ndarray:
    """numpy's x86-64 float -> integer cast (contiguous loops) of float array x to integer dtype."""
    x = np.asarray(x)
    dt = np.dtype(dtype)
    if dt.kind == "i" or dt.itemsize <= 2:
        return cvtt(x, 64 if dt.itemsize == 8 else 32).astype(dt)
    # uint32 / uint64: values from 2**(bits-1) up are converted shifted down and get the top bit back
    bits = dt.itemsize * 8
    half = x.dtype.type(2.0 ** (bits - 1))
    with np.errstate(invalid="ignore"):
        big = x >= half
        shifted = np.where(big, x - half, x)
    low = cvtt(shifted, bits)
    if bits == 32:
        return np.where(big, low ^ (2 ** 31), low).astype(np.int32).view(np.uint32)
    return np.where(big, low ^ np.int64(-(2 ** 63)), low).view(np.uint64)


def astype(x: Any, dtype: str) -> Any:
    """np.asarray(x).astype(dtype), with float -> integer casts as numpy's on x86-64 (see the module doc)."""
    x = np.asarray(x)
    dt = np.dtype(dtype)
    if x.dtype.kind == "f" and dt.kind in "iu":
        out = float_to_int(x, dtype)
        return out.reshape(x.shape)
    return x.astype(dt)
