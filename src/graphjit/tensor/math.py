"""Elementwise math and reductions on tensors: the public functions (add, exp, sum, mean, ...)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from graphjit.scalar import math as ps
from graphjit.scalar import special as pspecial
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise, normalize_axis
from graphjit.tensor.shape_base import shape_i
from graphjit.tensor.variable import TensorVariable


def _elemwise(scalar_op: ps.ScalarOp, doc: str) -> Elemwise:
    op = Elemwise(scalar_op)
    op.__doc__ = doc
    return op


# Module-level Elemwise instances: `gt.add(x, y)` and `e.owner.op == gt.add` both work.
add = _elemwise(ps.add, "x + y")
sub = _elemwise(ps.sub, "x - y")
mul = _elemwise(ps.mul, "x * y")
true_div = _elemwise(ps.true_div, "x / y (true division)")
int_div = _elemwise(ps.int_div, "x // y (floor division)")
floor_div = int_div
mod = _elemwise(ps.mod, "x % y (sign of y, like numpy)")
pow = _elemwise(ps.pow, "x ** y")
minimum = _elemwise(ps.minimum, "elementwise minimum (NaN propagates)")
maximum = _elemwise(ps.maximum, "elementwise maximum (NaN propagates)")
neg = _elemwise(ps.neg, "-x")
abs = _elemwise(ps.abs, "|x|")
sign = _elemwise(ps.sign, "sign of x (-1, 0, 1)")
sqr = _elemwise(ps.sqr, "x * x")
reciprocal = _elemwise(ps.reciprocal, "1 / x")
identity = _elemwise(ps.identity, "a copy of x")
lt = _elemwise(ps.lt, "x < y")
gt = _elemwise(ps.gt, "x > y")
le = _elemwise(ps.le, "x <= y")
ge = _elemwise(ps.ge, "x >= y")
eq = _elemwise(ps.eq, "x == y (elementwise)")
neq = _elemwise(ps.neq, "x != y (elementwise)")
and_ = _elemwise(ps.and_, "bitwise/logical and")
or_ = _elemwise(ps.or_, "bitwise/logical or")
xor = _elemwise(ps.xor, "bitwise/logical xor")
invert = _elemwise(ps.invert, "bitwise not (logical not for bool)")
bitwise_and, bitwise_or, bitwise_xor, bitwise_not = and_, or_, xor, invert
left_shift = _elemwise(ps.left_shift, "x << y")
right_shift = _elemwise(ps.right_shift, "x >> y")
isnan = _elemwise(ps.isnan, "x is NaN")
isinf = _elemwise(ps.isinf, "x is +-inf")
isfinite = _elemwise(ps.isfinite, "x is finite")
floor = _elemwise(ps.floor, "floor")
ceil = _elemwise(ps.ceil, "ceil")
trunc = _elemwise(ps.trunc, "round toward zero")
round_half_to_even = _elemwise(ps.round_half_to_even, "round half to even (numpy.round)")
exp = _elemwise(ps.exp, "e ** x")
exp2 = _elemwise(ps.exp2, "2 ** x")
expm1 = _elemwise(ps.expm1, "exp(x) - 1, accurate near 0")
log = _elemwise(ps.log, "natural logarithm")
log2 = _elemwise(ps.log2, "base-2 logarithm")
log10 = _elemwise(ps.log10, "base-10 logarithm")
log1p = _elemwise(ps.log1p, "log(1 + x), accurate near 0")
sqrt = _elemwise(ps.sqrt, "square root")
sin = _elemwise(ps.sin, "sine")
cos = _elemwise(ps.cos, "cosine")
tan = _elemwise(ps.tan, "tangent")
arcsin = _elemwise(ps.arcsin, "inverse sine")
arccos = _elemwise(ps.arccos, "inverse cosine")
arctan = _elemwise(ps.arctan, "inverse tangent")
arctan2 = _elemwise(ps.arctan2, "arctan(y / x) with the quadrant")
sinh = _elemwise(ps.sinh, "hyperbolic sine")
cosh = _elemwise(ps.cosh, "hyperbolic cosine")
tanh = _elemwise(ps.tanh, "hyperbolic tangent")
arcsinh = _elemwise(ps.arcsinh, "inverse hyperbolic sine")
arccosh = _elemwise(ps.arccosh, "inverse hyperbolic cosine")
arctanh = _elemwise(ps.arctanh, "inverse hyperbolic tangent")
erf = _elemwise(ps.erf, "error function")
erfc = _elemwise(ps.erfc, "complementary error function")
sigmoid = _elemwise(ps.sigmoid, "1 / (1 + exp(-x))")
expit = sigmoid
softplus = _elemwise(ps.softplus, "log(1 + exp(x)), without overflow")
switch = _elemwise(ps.switch, "switch(cond, a, b): a where cond else b")
hypot = _elemwise(ps.hypot, "sqrt(x**2 + y**2) without overflow (numpy.hypot)")
cbrt = _elemwise(ps.cbrt, "cube root (numpy.cbrt)")
fmod = _elemwise(ps.fmod, "remainder with the sign of x (C fmod, numpy.fmod)")
copysign = _elemwise(ps.copysign, "|x| with the sign of y (numpy.copysign)")
rint = _elemwise(ps.rint, "round to the nearest integer, halves to even (numpy.rint)")
deg2rad = _elemwise(ps.deg2rad, "degrees to radians")
rad2deg = _elemwise(ps.rad2deg, "radians to degrees")
radians, degrees = deg2rad, rad2deg
gcd = _elemwise(ps.gcd, "greatest common divisor of |x| and |y| (numpy.gcd)")
lcm = _elemwise(ps.lcm, "least common multiple of |x| and |y| (numpy.lcm)")
nextafter = _elemwise(ps.nextafter, "the next float after x towards y (numpy.nextafter)")
spacing = _elemwise(ps.spacing, "distance from x to the next float away from 0 (numpy.spacing)")
logaddexp = _elemwise(ps.logaddexp, "log(exp(x) + exp(y)) without overflow (numpy.logaddexp)")
logaddexp2 = _elemwise(ps.logaddexp2, "log2(2**x + 2**y) without overflow (numpy.logaddexp2)")
gammaln = _elemwise(pspecial.gammaln, "log|Gamma(x)| (scipy.special.gammaln)")
gamma = _elemwise(pspecial.gamma, "Gamma(x) (scipy.special.gamma)")
digamma = _elemwise(pspecial.digamma, "d/dx log Gamma(x) (scipy.special.psi)")
psi = digamma
trigamma = _elemwise(pspecial.trigamma, "d2/dx2 log Gamma(x) (scipy.special.polygamma(1, x))")
polygamma = _elemwise(pspecial.polygamma, "polygamma(n, x): the n-th derivative of digamma (scipy.special)")
betaln = _elemwise(pspecial.betaln, "log|B(a, b)| (scipy.special.betaln)")
gammainc = _elemwise(pspecial.gammainc, "regularised lower incomplete gamma P(a, x) (scipy.special)")
gammaincc = _elemwise(pspecial.gammaincc, "regularised upper incomplete gamma Q(a, x) (scipy.special)")
gammainc_da = _elemwise(pspecial.gammainc_da, "d/da gammainc(a, x) (a series; gammainc's gradient in a)")
erfinv = _elemwise(pspecial.erfinv, "inverse of erf (scipy.special.erfinv)")
erfcinv = _elemwise(pspecial.erfcinv, "inverse of erfc (scipy.special.erfcinv)")
erfcx = _elemwise(pspecial.erfcx, "exp(x**2) * erfc(x), scaled complementary error function")
xlogy = _elemwise(pspecial.xlogy, "x * log(y), 0 where x == 0 (scipy.special.xlogy)")
xlog1py = _elemwise(pspecial.xlog1py, "x * log1p(y), 0 where x == 0 (scipy.special.xlog1py)")
log1mexp = _elemwise(pspecial.log1mexp, "log(1 - exp(x)), accurate for x near 0 and very negative")
logit = _elemwise(pspecial.logit, "log(p / (1 - p)), the inverse of expit (scipy.special.logit)")
i0 = _elemwise(pspecial.i0, "modified Bessel function of the first kind, order 0")
i1 = _elemwise(pspecial.i1, "modified Bessel function of the first kind, order 1")
i0e = _elemwise(pspecial.i0e, "exp(-|x|) * i0(x)")
i1e = _elemwise(pspecial.i1e, "exp(-|x|) * i1(x)")
_clip = _elemwise(ps.clip, "clip")
real = _elemwise(ps.real, "the real part (x itself for a real x; numpy.real)")
imag = _elemwise(ps.imag, "the imaginary part (0 for a real x; numpy.imag)")
conj = _elemwise(ps.conj, "the complex conjugate (numpy.conjugate)")
conjugate = conj
angle = _elemwise(ps.angle, "the argument of a complex number, atan2(imag, real) (numpy.angle)")
complex = _elemwise(ps.complex, "complex(re, im): re + im * 1j (complex64 from float32 parts, else complex128)")


def where(cond: Any, a: Any, b: Any) -> TensorVariable:
    """numpy.where(cond, a, b) with broadcasting."""
    return switch(cond, a, b)


def clip(x: Any, a_min: Any, a_max: Any) -> TensorVariable:
    """x limited to [a_min, a_max] elementwise."""
    return _clip(x, a_min, a_max)


def round(x: Any, mode: str = "half_to_even") -> TensorVariable:
    """numpy.round (half to even)."""
    if mode != "half_to_even":
        raise ValueError(f"unsupported rounding mode {mode!r}; only 'half_to_even' (numpy's)")
    return round_half_to_even(x)


def relu(x: Any) -> TensorVariable:
    """max(x, 0)."""
    x = as_tensor_variable(x)
    return maximum(x, 0)


def square(x: Any) -> TensorVariable:
    """x * x."""
    return sqr(x)


def logical_not(x: Any) -> TensorVariable:
    """not x, elementwise (a bool tensor)."""
    x = as_tensor_variable(x)
    return invert(neq(x, 0) if x.dtype != "bool" else x)


def logical_and(x: Any, y: Any) -> TensorVariable:
    """x and y, elementwise (a bool tensor)."""
    return and_(_as_bool(x), _as_bool(y))


def logical_or(x: Any, y: Any) -> TensorVariable:
    """x or y, elementwise (a bool tensor)."""
    return or_(_as_bool(x), _as_bool(y))


def _as_bool(x: Any) -> TensorVariable:
    x = as_tensor_variable(x)
    return x if x.dtype == "bool" else neq(x, 0)


# ------------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------------

def restore_reduced_dims(out: TensorVariable, x: TensorVariable, axes: tuple) -> TensorVariable:
    """out (x reduced over axes) with the reduced dimensions put back as length 1 (keepdims)."""
    pattern, j = [], 0
    for d in range(x.ndim):
        if d in axes:
            pattern.append("x")
        else:
            pattern.append(j)
            j += 1
    return DimShuffle(out.ndim, pattern)(out)


def _reduce(scalar_op: ps.ScalarOp, x: Any, axis: Any, keepdims: bool, dtype: Optional[str] = None,
            acc_dtype: Optional[str] = None) -> TensorVariable:
    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.ndim)
    op = CAReduce(scalar_op, None if len(axes) == x.ndim else axes, dtype, acc_dtype)
    if not axes:   # nothing to reduce (a 0-d x, or axis=()): numpy returns x in the result dtype
        out_dtype = op._out_dtype(x.dtype)
        return x if out_dtype == x.dtype else cast(x, out_dtype)
    out = op(x)
    return restore_reduced_dims(out, x, axes) if keepdims else out


def sum(x: Any, axis: Any = None, dtype: Optional[str] = None, keepdims: bool = False,
        acc_dtype: Optional[str] = None) -> TensorVariable:
    """Sum over axis (all by default); ints accumulate in int64 like numpy."""
    return _reduce(ps.add, x, axis, keepdims, dtype, acc_dtype)


def prod(x: Any, axis: Any = None, dtype: Optional[str] = None, keepdims: bool = False
         ) -> TensorVariable:
    """Product over axis."""
    return _reduce(ps.mul, x, axis, keepdims, dtype)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> TensorVariable:
    """Maximum over axis (NaN propagates)."""
    return _reduce(ps.maximum, x, axis, keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> TensorVariable:
    """Minimum over axis (NaN propagates)."""
    return _reduce(ps.minimum, x, axis, keepdims)


def all(x: Any, axis: Any = None, keepdims: bool = False) -> TensorVariable:
    """True where every element over axis is nonzero."""
    return _reduce(ps.and_, _as_bool(x), axis, keepdims)


def any(x: Any, axis: Any = None, keepdims: bool = False) -> TensorVariable:
    """True where some element over axis is nonzero."""
    return _reduce(ps.or_, _as_bool(x), axis, keepdims)


def _count(x: TensorVariable, axes: tuple, dtype: str) -> TensorVariable:
    n = None
    for a in axes:
        length = x.type.shape[a]
        term = constant(length, dtype="int64") if length is not None else shape_i(x, a)
        n = term if n is None else mul(n, term)
    return cast(n if n is not None else constant(1, dtype="int64"), dtype)


def _float_dtype(dtype: str) -> str:
    return dtype if dtype in ("float32", "float64", "complex64", "complex128") else "float64"


def mean(x: Any, axis: Any = None, dtype: Optional[str] = None, keepdims: bool = False
         ) -> TensorVariable:
    """Arithmetic mean over axis (float64 for integer inputs, like numpy)."""
    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.ndim)
    out_dtype = dtype or _float_dtype(x.dtype)
    total = sum(x, axes, dtype=out_dtype, keepdims=keepdims)
    return true_div(total, _count(x, axes, out_dtype))


def var(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> TensorVariable:
    """Variance over axis (two-pass: mean of squared deviations)."""
    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.ndim)
    out_dtype = _float_dtype(x.dtype)
    xf = cast(x, out_dtype)
    centered = sub(xf, mean(xf, axes, keepdims=True))
    total = sum(sqr(centered), axes, keepdims=keepdims)
    n = _count(x, axes, out_dtype)
    return true_div(total, sub(n, ddof) if ddof else n)


def std(x: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> TensorVariable:
    """Standard deviation over axis."""
    return sqrt(var(x, axis, ddof=ddof, keepdims=keepdims))


# dot/matmul/outer/tensordot, argmax/argmin/cumsum/cumprod and softmax/log_softmax/logsumexp live in their own
# modules (blas, extra_ops, special); tensor/operators.py sets them here too, so `tm.dot` keeps working.

__all__ = [name for name, value in list(globals().items())
           if not name.startswith("_") and (isinstance(value, Elemwise)
                                            or (callable(value) and getattr(value, "__module__", None) == __name__))]

