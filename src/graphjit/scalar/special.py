"""Special functions as scalar ops (scipy.special's names and semantics), declared once each as in scalar/math.py.

The numpy side is scipy.special, imported on first use (LazyFunction). The LLVM backend computes them natively:
scipy's own compiled kernels called through its ``cython_special`` function pointers where scipy has one (so the
values are scipy's to the bit), graphjit's own IR for the short formulas (link/llvm/scalar/special_bodies.py).
Output dtypes follow scipy's ufunc loops: most list their double loop first, so any integer input gives float64
and only all-float32 inputs stay float32 (``_double_first``); erfinv/erfcinv list the float loop first, so ints of
up to 16 bits give float32 (``_float_first``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphjit.graph.grad_markers import grad_not_implemented
from graphjit.scalar.basic import LazyFunction, ScalarOp, register_scalar_op
from graphjit.graph import forksafe

_SQRT_PI_OVER_2 = float(np.sqrt(np.pi) / 2.0)
_TWO_OVER_SQRT_PI = float(2.0 / np.sqrt(np.pi))
_LN2 = float(np.log(2.0))


def _double_first(*dtypes: str) -> str:
    """scipy's rule for ufuncs whose first loop is double: float32 only when every input is float32."""
    return "float32" if all(d == "float32" for d in dtypes) else "float64"


def _float_first(*dtypes: str) -> str:
    """scipy's rule for ufuncs whose first loop is float: float32 when every input casts safely to it."""
    return "float32" if all(np.can_cast(d, np.float32) for d in dtypes) else "float64"


def _special(name: str) -> LazyFunction:
    return LazyFunction("scipy.special", name)


def _op(name: str, nin: int, numpy: Any, rule: Any = _double_first, **kw: Any) -> ScalarOp:
    return register_scalar_op(ScalarOp(name, nin, numpy, dtype_rule=rule, allowed_kinds="biuf", **kw))


def _as_float(x: Any) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(_double_first(str(x.dtype)), copy=False)


def _log1mexp(x: Any) -> np.ndarray:
    """log(1 - exp(x)) for x <= 0, accurate at both ends (Maechler's switch at -log 2); in double, as the
    LLVM body computes it (perform rounds to the output dtype)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        return np.where(x < -_LN2, np.log1p(-np.exp(x)), np.log(-np.expm1(x)))


def _trigamma(x: Any) -> np.ndarray:
    """scipy.special.polygamma(1, x), in x's float dtype."""
    x = _as_float(x)
    return np.asarray(forksafe.import_module("scipy.special").polygamma(1, x)).astype(x.dtype)


# --- gamma family ---------------------------------------------------------------------------------
gammaln = _op("gammaln", 1, _special("gammaln"), grad=lambda m, i, o, gz: [m.mul(gz, m.digamma(i[0]))])
gamma = _op("gamma", 1, _special("gamma"), grad=lambda m, i, o, gz: [m.mul(gz, m.mul(o, m.digamma(i[0])))])
digamma = _op("digamma", 1, _special("psi"), grad=lambda m, i, o, gz: [m.mul(gz, m.trigamma(i[0]))])
trigamma = _op("trigamma", 1, _trigamma, grad=lambda m, i, o, gz: [m.mul(gz, m.polygamma(2, i[0]))])
# polygamma(n, x): n is an order (integer-valued), no gradient flows to it
polygamma = _op("polygamma", 2, _special("polygamma"),
                grad=lambda m, i, o, gz: [None, m.mul(gz, m.polygamma(m.add(i[0], 1), i[1]))])
betaln = _op("betaln", 2, _special("betaln"), commutative=True)


@betaln.defgrad
def _betaln_grad(m: Any, i: Any, o: Any, gz: Any) -> list:
    """d betaln(a, b) / da = digamma(a) - digamma(a + b) (and symmetrically in b)."""
    both = m.digamma(m.add(i[0], i[1]))
    return [m.mul(gz, m.sub(m.digamma(i[0]), both)), m.mul(gz, m.sub(m.digamma(i[1]), both))]


# incomplete gamma (regularised): the x-derivative is the Gamma(a) density, the a-derivative a series
gammainc = _op("gammainc", 2, _special("gammainc"))
gammaincc = _op("gammaincc", 2, _special("gammaincc"))
GAMMAINC_DA_MAX_TERMS = 1_000_000


def _gammainc_da(a: Any, x: Any) -> np.ndarray:
    """d/da P(a, x) = sum_n t_n (log x - digamma(a + n + 1)), t_n = exp(-x) x**(a+n) / Gamma(a + n + 1).

    Terms are summed until they no longer change the partial P = sum t_n past its peak (absolute accuracy
    ~1e-16 of P; relative accuracy is lost where the derivative is tiny against P). 0 for x == 0 or inf
    and where the first term underflows (the derivative is then below the smallest double), NaN for a <= 0,
    x < 0 or NaN, and past GAMMAINC_DA_MAX_TERMS terms. The LLVM body is the same loop.
    """
    sc = forksafe.import_module("scipy.special")
    a, x = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    out = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        log_x = np.log(x)
        t = np.exp(a * log_x - x - sc.gammaln(a + 1))
        psi = sc.psi(a + 1)
        total, mass = t * (log_x - psi), t.copy()
        valid = (a > 0) & (x >= 0)
        zero = valid & ((x == 0) | (x == np.inf) | (t == 0))
        active = valid & ~zero
        n = 0.0
        while active.any() and n < GAMMAINC_DA_MAX_TERMS:
            n += 1.0
            t = np.where(active, t * x / (a + n), t)
            psi = np.where(active, psi + 1 / (a + n), psi)
            total = np.where(active, total + t * (log_x - psi), total)
            mass = np.where(active, mass + t, mass)
            done = active & (a + n > x) & (t <= 1e-17 * mass)
            out[done] = total[done]
            active &= ~done
    out[zero] = 0.0
    return out


# the a-derivative of P (its own op: an order-two gradient of gammainc in a is not implemented)
gammainc_da = _op("gammainc_da", 2, _gammainc_da,
                  grad=lambda m, i, o, gz: [grad_not_implemented(gammainc_da, k, i[k]) for k in range(2)])


def _gamma_density(m: Any, a: Any, x: Any) -> Any:
    return m.exp(m.sub(m.sub(m.mul(m.sub(a, 1), m.log(x)), x), m.gammaln(a)))


@gammainc.defgrad
def _gammainc_grad(m: Any, i: Any, o: Any, gz: Any) -> list:
    """d/dx P(a, x) = x**(a-1) exp(-x) / Gamma(a); d/da the series of gammainc_da."""
    return [m.mul(gz, m.gammainc_da(i[0], i[1])), m.mul(gz, _gamma_density(m, i[0], i[1]))]


@gammaincc.defgrad
def _gammaincc_grad(m: Any, i: Any, o: Any, gz: Any) -> list:
    """d/dx Q(a, x) = -x**(a-1) exp(-x) / Gamma(a); d/da Q = -d/da P."""
    return [m.neg(m.mul(gz, m.gammainc_da(i[0], i[1]))), m.neg(m.mul(gz, _gamma_density(m, i[0], i[1])))]


# --- error function family ------------------------------------------------------------------------
erfinv = _op("erfinv", 1, _special("erfinv"), rule=_float_first,
             grad=lambda m, i, o, gz: [m.mul(gz, m.mul(m.exp(m.sqr(o)), _SQRT_PI_OVER_2))])
erfcinv = _op("erfcinv", 1, _special("erfcinv"), rule=_float_first,
              grad=lambda m, i, o, gz: [m.mul(gz, m.mul(m.exp(m.sqr(o)), -_SQRT_PI_OVER_2))])
erfcx = _op("erfcx", 1, _special("erfcx"),
            grad=lambda m, i, o, gz: [m.mul(gz, m.sub(m.mul(m.mul(i[0], o), 2), _TWO_OVER_SQRT_PI))])

# --- logarithms and logistic ------------------------------------------------------------------------
# d/dy x log y is x / y, which is 0 where x == 0 (the value there is 0 for every y, as scipy defines it)
xlogy = _op("xlogy", 2, _special("xlogy"),
            grad=lambda m, i, o, gz: [m.mul(gz, m.log(i[1])),
                                      m.mul(gz, m.switch(m.eq(i[0], 0), 0, m.true_div(i[0], i[1])))])
xlog1py = _op("xlog1py", 2, _special("xlog1py"),
              grad=lambda m, i, o, gz: [m.mul(gz, m.log1p(i[1])),
                                        m.mul(gz, m.switch(m.eq(i[0], 0), 0, m.true_div(i[0], m.add(i[1], 1))))])
log1mexp = _op("log1mexp", 1, _log1mexp,
               grad=lambda m, i, o, gz: [m.neg(m.true_div(gz, m.expm1(m.neg(i[0]))))])
logit = _op("logit", 1, _special("logit"),
            grad=lambda m, i, o, gz: [m.true_div(gz, m.mul(i[0], m.sub(1, i[0])))])

# --- modified Bessel functions of orders 0 and 1 (the e-suffixed: times exp(-|x|)) ------------------
i0 = _op("i0", 1, _special("i0"), grad=lambda m, i, o, gz: [m.mul(gz, m.i1(i[0]))])
i1 = _op("i1", 1, _special("i1"))
i0e = _op("i0e", 1, _special("i0e"),
          grad=lambda m, i, o, gz: [m.mul(gz, m.sub(m.i1e(i[0]), m.mul(m.sign(i[0]), o)))])
i1e = _op("i1e", 1, _special("i1e"))


def _i1_slope(m: Any, x: Any, i0_of_x: Any, o: Any) -> Any:
    """d i1 / dx = i0(x) - i1(x) / x, which is 1/2 at x == 0 (where the formula is 0/0)."""
    at_zero = m.eq(x, 0)
    return m.switch(at_zero, 0.5, m.sub(i0_of_x, m.true_div(o, m.switch(at_zero, 1, x))))


@i1.defgrad
def _i1_grad(m: Any, i: Any, o: Any, gz: Any) -> list:
    """d i1 / dx = i0(x) - i1(x) / x."""
    return [m.mul(gz, _i1_slope(m, i[0], m.i0(i[0]), o))]


@i1e.defgrad
def _i1e_grad(m: Any, i: Any, o: Any, gz: Any) -> list:
    """d i1e / dx = i0e(x) - i1e(x) / x - sign(x) i1e(x)."""
    return [m.mul(gz, m.sub(_i1_slope(m, i[0], m.i0e(i[0]), o), m.mul(m.sign(i[0]), o)))]
