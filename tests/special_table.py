"""The special functions and ufuncs of issue 21 as data, for their tests: what builds each, its scipy/numpy
reference, where it is smooth (for gradients) and the ulp distance helper."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import scipy.special as sp

import graphjit.tensor as gt


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise distance in units in the last place (NaN vs NaN and 0 vs -0 are 0; NaN vs a number is huge)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.dtype.kind == "f", (got.dtype, want.dtype)
    bits = np.int64 if got.dtype == np.float64 else np.int32
    big = np.iinfo(bits).max

    def ordered(v: np.ndarray) -> np.ndarray:
        i = v.view(bits).astype(np.int64)
        return np.where(i < 0, -(i & int(big)), i)     # monotone in the float's value, -0 and +0 both 0

    nan_g, nan_w = np.isnan(got), np.isnan(want)
    with np.errstate(all="ignore"):
        dist = np.abs(ordered(got) - ordered(want)).astype(np.float64)
    dist = np.where(nan_g & nan_w, 0.0, dist)
    return np.where(nan_g ^ nan_w, np.inf, dist)


def max_ulp(got: np.ndarray, want: np.ndarray) -> float:
    """The largest elementwise ulp distance (0 for empty arrays)."""
    d = ulp_distance(got, want)
    return float(d.max()) if d.size else 0.0


def edges(dtype: str) -> np.ndarray:
    """Edge values of a float dtype: signed zeros, negative integers, halves, tiny, subnormal, huge, inf, NaN."""
    info = np.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, -3.0, -10.0, 0.5, -0.5, 1.5, -2.5, 3.7, 10.0, 25.5, 171.5, 1e3,
              -1e3 - 0.5, 1e6, 1e-5, -1e-5, float(info.tiny), -float(info.tiny), float(info.smallest_subnormal),
              float(info.max), -float(info.max), float(info.max) / 4, np.inf, -np.inf, np.nan, 0.999, -0.999,
              0.25, 0.75, 1e-20, 30.0, -30.0, 700.0, -700.0, 88.0, -88.0, -745.5, 0.1, 0.9]
    rng = np.random.default_rng(21)
    random = np.concatenate([rng.uniform(-40, 40, 150), 10.0 ** rng.uniform(-30, 30, 100)])
    return np.concatenate([np.array(values, dtype=dtype), random.astype(dtype)])


@dataclasses.dataclass
class Fn:
    """One function: graphjit's, its reference, the sub-domain where verify_grad applies."""

    name: str
    build: Callable[..., Any]
    reference: Callable[..., Any]
    nin: int = 1
    smooth: Tuple[float, float] = (0.5, 3.0)      # interior points for verify_grad (None: no gradient)
    differentiable: Sequence[int] = (0,)          # inputs verify_grad differentiates
    integer: bool = False                         # integer-only ufunc (gcd, lcm)

    def __str__(self) -> str:
        return self.name


def _pg(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    return sp.polygamma(n, x)


def _log1mexp(x: np.ndarray) -> np.ndarray:
    """log(1 - exp(x)) in double (numpy's float32 exp/log1p carry their own ulps), in x's float dtype."""
    wide = x.astype(np.float64)
    with np.errstate(all="ignore"):
        out = np.where(wide < -np.log(2.0), np.log1p(-np.exp(wide)), np.log(-np.expm1(wide)))
    return out.astype(np.float32 if x.dtype == np.float32 else np.float64)


def _trigamma(x: np.ndarray) -> np.ndarray:
    out = np.float32 if x.dtype == np.float32 else np.float64
    return np.asarray(sp.polygamma(1, x.astype(np.float64)), dtype=out)


SPECIAL = [
    Fn("gammaln", gt.gammaln, sp.gammaln),
    Fn("gamma", gt.gamma, sp.gamma),
    Fn("digamma", gt.digamma, sp.psi),
    Fn("trigamma", gt.trigamma, _trigamma),
    Fn("polygamma", lambda n, x: gt.polygamma(n, x), _pg, nin=2, differentiable=(1,)),
    Fn("betaln", gt.betaln, sp.betaln, nin=2, differentiable=(0, 1)),
    Fn("gammainc", gt.gammainc, sp.gammainc, nin=2, differentiable=(0, 1)),
    Fn("gammaincc", gt.gammaincc, sp.gammaincc, nin=2, differentiable=(0, 1)),
    Fn("erfinv", gt.erfinv, sp.erfinv, smooth=(-0.9, 0.9)),
    Fn("erfcinv", gt.erfcinv, sp.erfcinv, smooth=(0.1, 1.9)),
    Fn("erfcx", gt.erfcx, sp.erfcx, smooth=(-2.0, 3.0)),
    Fn("xlogy", gt.xlogy, sp.xlogy, nin=2, differentiable=(0, 1)),
    Fn("xlog1py", gt.xlog1py, sp.xlog1py, nin=2, differentiable=(0, 1)),
    Fn("log1mexp", gt.log1mexp, _log1mexp, smooth=(-3.0, -0.2)),
    Fn("logit", gt.logit, sp.logit, smooth=(0.05, 0.95)),
    Fn("expit", gt.expit, sp.expit, smooth=(-4.0, 4.0)),
    Fn("i0", gt.i0, sp.i0, smooth=(-3.0, 3.0)),
    Fn("i1", gt.i1, sp.i1, smooth=(-3.0, 3.0)),
    Fn("i0e", gt.i0e, sp.i0e, smooth=(0.2, 3.0)),
    Fn("i1e", gt.i1e, sp.i1e, smooth=(0.2, 3.0)),
]

UFUNCS = [
    Fn("hypot", gt.hypot, np.hypot, nin=2, differentiable=(0, 1)),
    Fn("cbrt", gt.cbrt, np.cbrt),
    Fn("fmod", gt.fmod, np.fmod, nin=2, differentiable=(0, 1), smooth=(1.1, 1.9)),
    Fn("copysign", gt.copysign, np.copysign, nin=2),
    Fn("rint", gt.rint, np.rint, differentiable=()),
    Fn("deg2rad", gt.deg2rad, np.deg2rad, smooth=(-3.0, 3.0)),
    Fn("rad2deg", gt.rad2deg, np.rad2deg, smooth=(-3.0, 3.0)),
    Fn("nextafter", gt.nextafter, np.nextafter, nin=2),
    Fn("spacing", gt.spacing, np.spacing, differentiable=()),
    Fn("logaddexp", gt.logaddexp, np.logaddexp, nin=2, differentiable=(0, 1), smooth=(-3.0, 3.0)),
    Fn("logaddexp2", gt.logaddexp2, np.logaddexp2, nin=2, differentiable=(0, 1), smooth=(-3.0, 3.0)),
    Fn("softplus", gt.softplus, lambda x: np.logaddexp(np.zeros((), x.dtype), x), smooth=(-4.0, 4.0)),
    Fn("gcd", gt.gcd, np.gcd, nin=2, differentiable=(), integer=True),
    Fn("lcm", gt.lcm, np.lcm, nin=2, differentiable=(), integer=True),
]

ALL = SPECIAL + UFUNCS
BY_NAME = {fn.name: fn for fn in ALL}


def grid(fn: Fn, dtype: str) -> Tuple[np.ndarray, ...]:
    """The edge grid of fn (binary: every pair of a smaller edge set)."""
    e = edges(dtype)
    if fn.nin == 1:
        return (e,)
    small = e[:44]                                  # the hand-picked edges, all pairs
    a, b = np.meshgrid(small, small, indexing="ij")
    rest = e[44:]
    return (np.concatenate([a.ravel(), rest]), np.concatenate([b.ravel(), rest[::-1]]))


def reference(fn: Fn, *values: np.ndarray, out_dtype: Optional[str] = None) -> np.ndarray:
    """fn's reference on values, in out_dtype when given."""
    with np.errstate(all="ignore"):
        want = np.asarray(fn.reference(*values))
    return want if out_dtype is None else want.astype(out_dtype)
