"""The distributions numpy has no method for, as graph compositions of one numpy draw and elementwise math
(native as soon as the draw is; gradients come from the graph): cauchy, halfnormal, student_t, bernoulli,
categorical, truncated_normal. Each checks its parameters with numpy's messages (CheckAndRaise)."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphjit.graph.basic import Variable
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.check_op import check_and_raise
from graphjit.tensor.elemwise import broadcast_static_shape
from graphjit.tensor.extra_ops import cumsum
from graphjit.tensor.math import (abs as abs_, add, all as all_, and_, erfc, erfcinv, ge, gt, invert, isinf, le,
                                  lt, mul, neg, sub, sum as sum_, switch, true_div)
from graphjit.tensor.math import clip
from graphjit.tensor.numpy_helpers import broadcast_shape
from graphjit.tensor.shape import shape_padright
from graphjit.tensor.variable import TensorVariable

_SQRT2 = float(np.sqrt(2.0))


def draw_size(size: Any, *params: Any) -> Any:
    """The size of the one draw of a composition: size, or the broadcast shape of the parameters (static when
    their shapes are)."""
    if size is not None:
        return size
    ps = [as_tensor_variable(p) for p in params]
    ndim = max((p.ndim for p in ps), default=0)
    static = broadcast_static_shape([(1,) * (ndim - p.ndim) + p.type.shape for p in ps], "parameters")
    if None not in static:
        return tuple(int(s) for s in static)
    return as_tensor_variable(list(broadcast_shape(*ps))).astype("int64")


def non_negative(x: Any, name: str) -> TensorVariable:
    """x, checked at run time: numpy's ValueError "<name> < 0" when an element is negative (NaN passes)."""
    x = as_tensor_variable(x)
    return check_and_raise(x, [all_(invert(lt(x, 0)))], f"{name} < 0")


def location_scale(z: Variable, loc: Any, scale: Any) -> TensorVariable:
    """loc + scale * z, scale checked non-negative."""
    return add(loc, mul(non_negative(scale, "scale"), z))


def halfnormal(z: Variable, loc: Any, scale: Any) -> TensorVariable:
    """loc + scale * |z| for a standard normal z: the half-normal distribution."""
    return location_scale(abs_(z), loc, scale)


def bernoulli(u: Variable, p: Any, dtype: str) -> TensorVariable:
    """1 where a uniform u on [0, 1) is below p, else 0: Bernoulli(p), p checked in [0, 1]."""
    p = as_tensor_variable(p)
    ok = all_(and_(ge(p, 0), le(p, 1)))
    return cast(lt(u, check_and_raise(p, [ok], "p < 0, p > 1 or p is NaN")), dtype)


def categorical(u: Variable, p: Any, dtype: str) -> TensorVariable:
    """The category index of a uniform u on [0, 1) by inverse CDF over p's last axis (numpy's choice checks)."""
    p = as_tensor_variable(p)
    atol = float(np.sqrt(np.finfo(p.dtype if np.dtype(p.dtype).kind == "f" else "float64").eps))
    p = check_and_raise(p, [all_(ge(p, 0))], "probabilities are not non-negative")
    total_ok = all_(le(abs_(sub(sum_(p, axis=-1), 1)), atol))
    p = check_and_raise(p, [total_ok], "probabilities do not sum to 1")
    cdf = cumsum(p, axis=-1)[..., :-1]
    return cast(sum_(ge(shape_padright(u, 1), cdf), axis=-1), dtype)


def _phi(t: Any) -> TensorVariable:
    return mul(0.5, erfc(true_div(neg(t), _SQRT2)))


def _phi_inv(q: Any) -> TensorVariable:
    return mul(-_SQRT2, erfcinv(mul(2.0, q)))


def _standardized(bound: Variable, loc: Variable, scale: Variable) -> TensorVariable:
    """(bound - loc) / scale, an infinite bound kept as it is (and no NaN in the gradient through it)."""
    inf = isinf(bound)
    return switch(inf, bound, true_div(sub(switch(inf, 0.0, bound), loc), scale))


def truncated_normal(u: Variable, loc: Any, scale: Any, lower: Any, upper: Any) -> TensorVariable:
    """A normal(loc, scale) truncated to [lower, upper] by inverse CDF of a uniform u, computed in the lower tail
    (an interval above the mean is mirrored) so that tail intervals keep their precision."""
    loc, lower, upper = (as_tensor_variable(v) for v in (loc, lower, upper))
    scale = non_negative(scale, "scale")
    lower = check_and_raise(lower, [all_(lt(lower, upper))], "lower >= upper")
    alpha, beta = _standardized(lower, loc, scale), _standardized(upper, loc, scale)
    flip = gt(alpha, 0)
    lo, hi = switch(flip, neg(beta), alpha), switch(flip, neg(alpha), beta)
    pa, pb = _phi(lo), _phi(hi)
    u = switch(flip, sub(1.0, u), u)          # the sample stays increasing in u (scipy's ppf(u))
    z = clip(_phi_inv(add(pa, mul(u, sub(pb, pa)))), lo, hi)
    return add(loc, mul(scale, switch(flip, neg(z), z)))


__all__: list = []
