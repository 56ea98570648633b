"""The scalar op table: every elementwise function graphjit knows, each declared once as data.

A declaration holds the op's name, arity, numpy function, dtype rule, allowed kinds, algebraic properties,
the math the LLVM backend emits (Opcode/Intrinsic/Libm; ops without one get a body registered in
link/llvm/scalar/bodies.py), how pprint writes it (``operator=Operator(symbol, precedence, associativity)``,
Python's precedences, unary minus above ``*``; ``call_name``, ``reduction_name``) and its gradient rule
``grad(m, inputs, output, gz) -> terms``: ``m`` is the namespace of elementwise functions the rule builds with
(graphjit.tensor.math), so the rules stay independent of the tensor layer. Every rule is linear in gz
(Elemwise.R_op uses that); None: no gradient flows there.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from graphjit.graph.basic import Apply, Constant
from graphjit.scalar.casting import astype
from graphjit.scalar.basic import (Intrinsic, LazyFunction, Libm, Opcode, Operator, ScalarOp, as_scalar,
                                   get_scalar_type, register_scalar_op, upcast, upcast_to_float, ALL_DTYPES)

_LN2, _LN10, _TWO_OVER_SQRT_PI = float(np.log(2.0)), float(np.log(10.0)), float(2.0 / np.sqrt(np.pi))


def _op(name: str, nin: int, numpy: Any, **kw: Any) -> ScalarOp:
    return register_scalar_op(ScalarOp(name, nin, numpy, **kw))


def _special(name: str) -> LazyFunction:
    """scipy.special's function name, imported on first use (scipy costs most of ``import graphjit``)."""
    return LazyFunction("scipy.special", name)


def _bool_out(*dtypes: str) -> str:
    return "bool"


def _float_rule(*dtypes: str) -> str:
    return upcast_to_float(*dtypes)


def _softplus(x: np.ndarray) -> np.ndarray:
    # x already in its output float dtype: numpy's logaddexp of small ints would compute in float16
    return np.logaddexp(np.zeros((), dtype=x.dtype), x)


def _scipy_rule(*dtypes: str) -> str:
    """scipy.special's ufuncs whose double loop comes first (erf, expit): float32 stays, the rest gives float64."""
    return "float32" if all(d == "float32" for d in dtypes) else "float64"


def _same_as_upcast(*dtypes: str) -> str:
    return upcast(*dtypes)


def _no_grad(m: Any, i: Any, o: Any, gz: Any) -> list:
    """Piecewise constant (or integer-valued): no gradient to any input."""
    return [None] * len(i)


def _nonzero_constant(v: Any) -> bool:
    """True if v is a constant without a zero element (a switch on v == 0 would never fire).

    A view of a constant counts (Elemwise broadcasts a Python number by a DimShuffle of a 0-d constant): a
    view's elements are elements of its first input.
    """
    while getattr(v, "owner", None) is not None and v.owner.op.view_map.get(v.index) == [0]:
        v = v.owner.inputs[0]
    return isinstance(v, Constant) and bool(np.all(np.asarray(v.data) != 0))


# --- arithmetic --------------------------------------------------------------------------------
add = _op("add", 2, np.add, llvm=Opcode(float="fadd", int="add", uint="add", bool="or_"),
          commutative=True, associative=True, identity=0, operator=Operator("+", 30, "either"),
          reduction_name="sum",
          grad=lambda m, i, o, gz: [gz, gz])
sub = _op("sub", 2, np.subtract, llvm=Opcode(float="fsub", int="sub", uint="sub"), allowed_kinds="iufc",
          right_identity=0, operator=Operator("-", 30, "left"),
          grad=lambda m, i, o, gz: [gz, m.neg(gz)])
mul = _op("mul", 2, np.multiply, llvm=Opcode(float="fmul", int="mul", uint="mul", bool="and_"),
          commutative=True, associative=True, identity=1, operator=Operator("*", 40, "either"),
          reduction_name="prod",
          grad=lambda m, i, o, gz: [m.mul(gz, i[1]), m.mul(gz, i[0])])
true_div = _op("true_div", 2, np.true_divide, llvm=Opcode(float="fdiv"), right_identity=1,
               operator=Operator("/", 40, "left"),
               grad=lambda m, i, o, gz: [m.true_div(gz, i[1]), m.neg(m.true_div(m.mul(gz, o), i[1]))])
# int_div: floor division; mod: the sign of the divisor (numpy's semantics, both)
int_div = _op("int_div", 2, np.floor_divide, allowed_kinds="iuf", operator=Operator("//", 40, "left"),
              grad=_no_grad)
mod = _op("mod", 2, np.remainder, allowed_kinds="iuf", operator=Operator("%", 40, "left"),
          grad=lambda m, i, o, gz: [gz, m.neg(m.mul(gz, m.int_div(i[0], i[1])))])


pow = _op("pow", 2, np.power, right_identity=1, operator=Operator("**", 60, "right"))


@pow.defgrad
def _pow_grad(m: Any, i: Any, o: Any, gz: Any) -> list:
    """d(x**y): where y == 0 the x-term is 0 (x**0 is 1 for every x; not 0 * 0**-1 = nan), where
    x == 0 the y-term is 0 (0**y is constant in y on each side of 0; not log(0) * 0 = nan): the
    conventions of PyTensor (the y-term) and JAX (the x-term, at an integer y == 0)."""
    x, y = i
    dx = m.mul(y, m.pow(x, m.sub(y, 1)))
    if not _nonzero_constant(y):
        dx = m.switch(m.eq(y, 0), 0, dx)
    dy = m.mul(o, m.log(x))
    if not _nonzero_constant(x):
        dy = m.switch(m.eq(x, 0), 0, dy)
    return [m.mul(gz, dx), m.mul(gz, dy)]


minimum = _op("minimum", 2, np.minimum, commutative=True, associative=True, reduction_name="min",
              grad=lambda m, i, o, gz: [m.mul(gz, m.le(i[0], i[1])), m.mul(gz, m.gt(i[0], i[1]))])
maximum = _op("maximum", 2, np.maximum, commutative=True, associative=True, reduction_name="max",
              grad=lambda m, i, o, gz: [m.mul(gz, m.ge(i[0], i[1])), m.mul(gz, m.lt(i[0], i[1]))])
neg = _op("neg", 1, np.negative, allowed_kinds="iufc", operator=Operator("-", 50, "left"),
          grad=lambda m, i, o, gz: [m.neg(gz)])
abs = _op("abs", 1, np.absolute,
          grad=lambda m, i, o, gz: [m.mul(gz, m.true_div(i[0], o)) if str(i[0].type.dtype).startswith("complex")
                                    else m.mul(gz, m.sign(i[0]))])
sign = _op("sign", 1, np.sign, allowed_kinds="iufc", grad=_no_grad)
sqr = _op("sqr", 1, np.square,
          grad=lambda m, i, o, gz: [m.mul(gz, m.mul(i[0], 2))])
reciprocal = _op("reciprocal", 1, lambda x: np.true_divide(1, x), dtype_rule=_float_rule, allowed_kinds="biufc",
                 grad=lambda m, i, o, gz: [m.neg(m.mul(gz, m.sqr(o)))])
identity = _op("identity", 1, lambda x: np.array(x, copy=True), dtype_rule=_same_as_upcast,
               grad=lambda m, i, o, gz: [gz])


def _second_impl(model: Any, value: Any) -> np.ndarray:
    return np.array(np.broadcast_to(value, np.broadcast_shapes(np.shape(model), np.shape(value))))


# second(model, value): value, broadcast with model (Theano's fill); model's values are not read,
# only its shape, so a gradient built with it keeps its variable's shape and its variable.
second = _op("second", 2, _second_impl, dtype_rule=lambda model, value: value, connected=(False, True),
             call_name="fill",
             grad=lambda m, i, o, gz: [None, gz])

# --- comparison and logic (no gradient: boolean or integer outputs) ------------------------------
lt = _op("lt", 2, np.less, operator=Operator("<", 20, "left"),
         llvm=Opcode(float="fcmp_ordered <", int="icmp_signed <", uint="icmp_unsigned <",
                     bool="icmp_unsigned <"))
gt = _op("gt", 2, np.greater, operator=Operator(">", 20, "left"),
         llvm=Opcode(float="fcmp_ordered >", int="icmp_signed >", uint="icmp_unsigned >",
                     bool="icmp_unsigned >"))
le = _op("le", 2, np.less_equal, operator=Operator("<=", 20, "left"),
         llvm=Opcode(float="fcmp_ordered <=", int="icmp_signed <=", uint="icmp_unsigned <=",
                     bool="icmp_unsigned <="))
ge = _op("ge", 2, np.greater_equal, operator=Operator(">=", 20, "left"),
         llvm=Opcode(float="fcmp_ordered >=", int="icmp_signed >=", uint="icmp_unsigned >=",
                     bool="icmp_unsigned >="))
eq = _op("eq", 2, np.equal, commutative=True, operator=Operator("==", 20, "left"),
         llvm=Opcode(float="fcmp_ordered ==", int="icmp_signed ==", uint="icmp_unsigned ==",
                     bool="icmp_unsigned =="))
neq = _op("neq", 2, np.not_equal, commutative=True, operator=Operator("!=", 20, "left"),
          llvm=Opcode(float="fcmp_unordered !=", int="icmp_signed !=", uint="icmp_unsigned !=",
                      bool="icmp_unsigned !="))
and_ = _op("and_", 2, np.bitwise_and, llvm=Opcode(int="and_", uint="and_", bool="and_"),
           commutative=True, associative=True, identity=-1, allowed_kinds="biu",   # -1: every bit set
           operator=Operator("&", 12, "either"), reduction_name="all")
or_ = _op("or_", 2, np.bitwise_or, llvm=Opcode(int="or_", uint="or_", bool="or_"),
          commutative=True, associative=True, identity=0, allowed_kinds="biu",
          operator=Operator("|", 10, "either"), reduction_name="any")
xor = _op("xor", 2, np.bitwise_xor, llvm=Opcode(int="xor", uint="xor", bool="xor"),
          commutative=True, associative=True, allowed_kinds="biu", operator=Operator("^", 11, "either"))
invert = _op("invert", 1, np.invert, allowed_kinds="biu", operator=Operator("~", 50, "left"))
# shifts: the LLVM body (link/llvm/scalar/bodies.py) gives numpy's results for counts < 0 or >= the width
left_shift = _op("left_shift", 2, np.left_shift, allowed_kinds="iu")
right_shift = _op("right_shift", 2, np.right_shift, allowed_kinds="iu")
isnan = _op("isnan", 1, np.isnan, dtype_rule=_bool_out)
isinf = _op("isinf", 1, np.isinf, dtype_rule=_bool_out)
isfinite = _op("isfinite", 1, np.isfinite, dtype_rule=_bool_out)

# --- rounding --------------------------------------------------------------------------------------
floor = _op("floor", 1, np.floor, llvm=Intrinsic("llvm.floor", identity_on_ints=True), allowed_kinds="biuf",
            grad=_no_grad)
ceil = _op("ceil", 1, np.ceil, llvm=Intrinsic("llvm.ceil", identity_on_ints=True), allowed_kinds="biuf",
           grad=_no_grad)
trunc = _op("trunc", 1, np.trunc, llvm=Intrinsic("llvm.trunc", identity_on_ints=True), allowed_kinds="biuf",
            grad=_no_grad)
round_half_to_even = _op("round_half_to_even", 1, np.round, llvm=Intrinsic("llvm.roundeven"),
                         dtype_rule=_same_as_upcast, allowed_kinds="iuf", grad=_no_grad)

# --- exponentials, logarithms, powers ---------------------------------------------------------------
exp = _op("exp", 1, np.exp, llvm=Intrinsic("llvm.exp"), allowed_kinds="biufc",
          grad=lambda m, i, o, gz: [m.mul(gz, o)])
exp2 = _op("exp2", 1, np.exp2, llvm=Intrinsic("llvm.exp2"),
           grad=lambda m, i, o, gz: [m.mul(gz, m.mul(o, _LN2))])
expm1 = _op("expm1", 1, np.expm1, llvm=Libm("expm1"),
            grad=lambda m, i, o, gz: [m.mul(gz, m.add(o, 1))])
log = _op("log", 1, np.log, llvm=Intrinsic("llvm.log"),
          grad=lambda m, i, o, gz: [m.true_div(gz, i[0])])
log2 = _op("log2", 1, np.log2, llvm=Intrinsic("llvm.log2"),
           grad=lambda m, i, o, gz: [m.true_div(gz, m.mul(i[0], _LN2))])
log10 = _op("log10", 1, np.log10, llvm=Intrinsic("llvm.log10"),
            grad=lambda m, i, o, gz: [m.true_div(gz, m.mul(i[0], _LN10))])
log1p = _op("log1p", 1, np.log1p, llvm=Libm("log1p"),
            grad=lambda m, i, o, gz: [m.true_div(gz, m.add(i[0], 1))])
sqrt = _op("sqrt", 1, np.sqrt, llvm=Intrinsic("llvm.sqrt"),
           grad=lambda m, i, o, gz: [m.true_div(m.mul(gz, 0.5), o)])

# --- trigonometric and hyperbolic -----------------------------------------------------------------
sin = _op("sin", 1, np.sin, llvm=Intrinsic("llvm.sin"),
          grad=lambda m, i, o, gz: [m.mul(gz, m.cos(i[0]))])
cos = _op("cos", 1, np.cos, llvm=Intrinsic("llvm.cos"),
          grad=lambda m, i, o, gz: [m.neg(m.mul(gz, m.sin(i[0])))])
tan = _op("tan", 1, np.tan, llvm=Libm("tan"),
          grad=lambda m, i, o, gz: [m.mul(gz, m.add(m.sqr(o), 1))])
arcsin = _op("arcsin", 1, np.arcsin, llvm=Libm("asin"),
             grad=lambda m, i, o, gz: [m.true_div(gz, m.sqrt(m.sub(1, m.sqr(i[0]))))])
arccos = _op("arccos", 1, np.arccos, llvm=Libm("acos"),
             grad=lambda m, i, o, gz: [m.neg(m.true_div(gz, m.sqrt(m.sub(1, m.sqr(i[0])))))])
arctan = _op("arctan", 1, np.arctan, llvm=Libm("atan"),
             grad=lambda m, i, o, gz: [m.true_div(gz, m.add(m.sqr(i[0]), 1))])
arctan2 = _op("arctan2", 2, np.arctan2, llvm=Libm("atan2"), allowed_kinds="biuf",
              grad=lambda m, i, o, gz: [m.true_div(m.mul(gz, i[1]), m.add(m.sqr(i[0]), m.sqr(i[1]))),
                                        m.neg(m.true_div(m.mul(gz, i[0]), m.add(m.sqr(i[0]), m.sqr(i[1]))))])
sinh = _op("sinh", 1, np.sinh, llvm=Libm("sinh"),
           grad=lambda m, i, o, gz: [m.mul(gz, m.cosh(i[0]))])
cosh = _op("cosh", 1, np.cosh, llvm=Libm("cosh"),
           grad=lambda m, i, o, gz: [m.mul(gz, m.sinh(i[0]))])
tanh = _op("tanh", 1, np.tanh, llvm=Libm("tanh"),
           grad=lambda m, i, o, gz: [m.mul(gz, m.sub(1, m.sqr(o)))])
arcsinh = _op("arcsinh", 1, np.arcsinh, llvm=Libm("asinh"),
              grad=lambda m, i, o, gz: [m.true_div(gz, m.sqrt(m.add(m.sqr(i[0]), 1)))])
arccosh = _op("arccosh", 1, np.arccosh, llvm=Libm("acosh"),
              grad=lambda m, i, o, gz: [m.true_div(gz, m.sqrt(m.sub(m.sqr(i[0]), 1)))])
arctanh = _op("arctanh", 1, np.arctanh, llvm=Libm("atanh"),
              grad=lambda m, i, o, gz: [m.true_div(gz, m.sub(1, m.sqr(i[0])))])

# --- special functions ----------------------------------------------------------------------------
erf = _op("erf", 1, _special("erf"), llvm=Libm("erf"), dtype_rule=_scipy_rule, allowed_kinds="biuf",
          grad=lambda m, i, o, gz: [m.mul(gz, m.mul(m.exp(m.neg(m.sqr(i[0]))), _TWO_OVER_SQRT_PI))])
erfc = _op("erfc", 1, _special("erfc"), llvm=Libm("erfc"), dtype_rule=_scipy_rule, allowed_kinds="biuf",
           grad=lambda m, i, o, gz: [m.mul(gz, m.mul(m.exp(m.neg(m.sqr(i[0]))), -_TWO_OVER_SQRT_PI))])
# gradient sigmoid(x) * sigmoid(-x), not o * (1 - o): 1 - o loses every digit once o rounds to 1
sigmoid = _op("sigmoid", 1, _special("expit"), dtype_rule=_scipy_rule, allowed_kinds="biuf",
              grad=lambda m, i, o, gz: [m.mul(gz, m.mul(o, m.sigmoid(m.neg(i[0]))))])
softplus = _op("softplus", 1, lambda x: _softplus(np.asarray(x, dtype=_float_rule(str(np.result_type(x))))),
               dtype_rule=_float_rule, allowed_kinds="biuf",
               grad=lambda m, i, o, gz: [m.mul(gz, m.sigmoid(i[0]))])

# --- numpy ufuncs: geometry, rounding, floating-point bits, integer number theory ----------------------
_DEG = float(np.pi / 180.0)


hypot = _op("hypot", 2, np.hypot, llvm=Libm("hypot"), allowed_kinds="biuf", commutative=True,
            grad=lambda m, i, o, gz: [m.mul(gz, m.true_div(i[0], o)), m.mul(gz, m.true_div(i[1], o))])
cbrt = _op("cbrt", 1, np.cbrt, llvm=Libm("cbrt"), allowed_kinds="biuf",
           grad=lambda m, i, o, gz: [m.true_div(gz, m.mul(m.sqr(o), 3))])
# fmod: C's remainder (the sign of the dividend); integers: numpy's 0 for a zero divisor (body in ufunc_bodies)
fmod = _op("fmod", 2, np.fmod, allowed_kinds="biuf",
           grad=lambda m, i, o, gz: [gz, m.neg(m.mul(gz, m.trunc(m.true_div(i[0], i[1]))))])
copysign = _op("copysign", 2, np.copysign, llvm=Intrinsic("llvm.copysign"), allowed_kinds="biuf",
               grad=lambda m, i, o, gz: [m.mul(gz, m.mul(m.copysign(1, i[0]), m.copysign(1, i[1]))), None])
rint = _op("rint", 1, np.rint, llvm=Intrinsic("llvm.rint"), allowed_kinds="biuf", grad=_no_grad)
deg2rad = _op("deg2rad", 1, np.deg2rad, allowed_kinds="biuf",
              grad=lambda m, i, o, gz: [m.mul(gz, _DEG)])
rad2deg = _op("rad2deg", 1, np.rad2deg, allowed_kinds="biuf",
              grad=lambda m, i, o, gz: [m.mul(gz, 1.0 / _DEG)])
gcd = _op("gcd", 2, np.gcd, allowed_kinds="iu", commutative=True, grad=_no_grad)
lcm = _op("lcm", 2, np.lcm, allowed_kinds="iu", commutative=True, grad=_no_grad)
# nextafter(x, y) moves x by one ulp: its derivative in x is 1 (as for x itself), none in y
nextafter = _op("nextafter", 2, np.nextafter, llvm=Libm("nextafter"), allowed_kinds="biuf",
                grad=lambda m, i, o, gz: [gz, None])
spacing = _op("spacing", 1, np.spacing, allowed_kinds="biuf", grad=_no_grad)
logaddexp = _op("logaddexp", 2, np.logaddexp, allowed_kinds="biuf", commutative=True,
                grad=lambda m, i, o, gz: [m.mul(gz, m.exp(m.sub(i[0], o))), m.mul(gz, m.exp(m.sub(i[1], o)))])
logaddexp2 = _op("logaddexp2", 2, np.logaddexp2, allowed_kinds="biuf", commutative=True,
                 grad=lambda m, i, o, gz: [m.mul(gz, m.exp2(m.sub(i[0], o))), m.mul(gz, m.exp2(m.sub(i[1], o)))])

# --- complex numbers ------------------------------------------------------------------------------
# The gradient of a real cost C w.r.t. a complex z = x + iy is dC/dx + i dC/dy (PyTensor/Theano's convention);
# holomorphic ops reuse their real rules through tensor/elemwise_grad.py (conj of the rule on conj(gz)), these
# non-holomorphic ones say it themselves.

def _component(*dtypes: str) -> str:
    """The float dtype of a complex dtype's parts; a real dtype's float (numpy's real/imag/angle)."""
    d = dtypes[0]
    return {"complex64": "float32", "complex128": "float64"}.get(d, d)


def _angle_rule(*dtypes: str) -> str:
    d = dtypes[0]
    return _component(d) if d.startswith("complex") else upcast_to_float(d)


def _complex_rule(*dtypes: str) -> str:
    """complex(re, im): complex64 when the parts upcast to float32, else complex128."""
    return "complex64" if upcast_to_float(*dtypes) == "float32" else "complex128"


def _is_complex(v: Any) -> bool:
    return str(v.type.dtype).startswith("complex")


def _make_complex(re: Any, im: Any) -> np.ndarray:
    re, im = np.asarray(re), np.asarray(im)
    out = np.empty(np.broadcast_shapes(re.shape, im.shape), dtype=_complex_rule(str(re.dtype), str(im.dtype)))
    out.real, out.imag = re, im
    return out


real = _op("real", 1, lambda x: np.array(np.real(x)), dtype_rule=_component,
           grad=lambda m, i, o, gz: [m.complex(gz, 0) if _is_complex(i[0]) else gz])
imag = _op("imag", 1, lambda x: np.array(np.imag(x)), dtype_rule=_component,
           grad=lambda m, i, o, gz: [m.complex(0, gz) if _is_complex(i[0]) else None])
conj = _op("conj", 1, np.conjugate, call_name="conjugate",
           grad=lambda m, i, o, gz: [m.conj(gz)])
angle = _op("angle", 1, lambda x: np.angle(x), dtype_rule=_angle_rule)


@angle.defgrad
def _angle_grad(m: Any, i: Any, o: Any, gz: Any) -> list:
    """atan2(y, x)'s partials (-y, x) / |z|**2, as the complex dC/dx + i dC/dy; 0 for a real input."""
    z, = i
    if not _is_complex(z):
        return [m.mul(gz, 0)]
    r2 = m.sqr(m.abs(z))
    return [m.complex(m.neg(m.true_div(m.mul(gz, m.imag(z)), r2)), m.true_div(m.mul(gz, m.real(z)), r2))]


complex = _op("complex", 2, _make_complex, dtype_rule=_complex_rule, allowed_kinds="biuf",
              grad=lambda m, i, o, gz: [m.real(gz), m.imag(gz)])


# --- ternary -------------------------------------------------------------------------------------
clip = _op("clip", 3, lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), allowed_kinds="biuf",
           grad=lambda m, i, o, gz: [m.mul(gz, m.and_(m.ge(i[0], i[1]), m.le(i[0], i[2]))),
                                     m.mul(gz, m.lt(i[0], i[1])), m.mul(gz, m.gt(i[0], i[2]))])


class Switch(ScalarOp):
    """switch(cond, a, b): a where cond is true, else b (numpy.where)."""

    def __init__(self) -> None:
        super().__init__("switch", 3, np.where, dtype_rule=lambda c, a, b: upcast(a, b),
                         grad=lambda m, i, o, gz: [None, m.switch(i[0], gz, 0), m.switch(i[0], 0, gz)])

    def output_dtype(self, *in_dtypes: str) -> str:
        if len(in_dtypes) != 3:
            raise TypeError(f"switch takes 3 inputs, got {len(in_dtypes)}")
        return upcast(in_dtypes[1], in_dtypes[2])


switch = register_scalar_op(Switch())


class Cast(ScalarOp):
    """Conversion to a fixed dtype (numpy's astype: floats truncate toward zero into ints)."""

    __props__ = ("name", "dtype")

    @staticmethod
    def grad_rule(m: Any, inputs: Any, output: Any, gz: Any) -> list:
        """The gradient passes through unchanged.

        An integer input still gets it (the seed's case 5: float(y) is defined at y + eps); a float cast to
        an integer never gets here (integer outputs have zero gradients, gradient.py). Elemwise casts the
        term to the input's float dtype.
        """
        return [gz]

    def __init__(self, dtype: str):
        dtype = str(np.dtype(dtype))
        if dtype not in ALL_DTYPES:
            raise TypeError(f"cannot cast to unsupported dtype {dtype!r}")
        self.dtype = dtype
        super().__init__(f"cast_{dtype}", 1, lambda x, _d=dtype: astype(x, _d),
                         dtype_rule=lambda d, _d=dtype: _d)

    def __reduce__(self):
        return (Cast, (self.dtype,))


_casts: dict = {}


def cast_op(dtype: str) -> Cast:
    """The (shared) Cast op to dtype."""
    dtype = str(np.dtype(dtype))
    if dtype not in _casts:
        _casts[dtype] = Cast(dtype)
    return _casts[dtype]


def scalar_apply(op: ScalarOp, *inputs: Any) -> Apply:
    """Build a scalar Apply (convenience for tests and scalar graphs)."""
    return op.make_node(*[as_scalar(i) for i in inputs])


def make_scalar(dtype: str, name: Optional[str] = None):
    """A new scalar Variable of dtype."""
    return get_scalar_type(dtype)(name)
