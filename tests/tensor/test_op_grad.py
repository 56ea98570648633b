"""verify_grad (finite differences) for every differentiable op of the library, in every test mode.

One table of cases: a graph builder and its float64 input points. Every case runs under "PY" and
under each mode of op_check.OP_TEST_MODES; a few run in float32 as a smoke test.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from graphjit.link.llvm.ir.fallback import FallbackWarning
from op_check import OP_TEST_MODES

RNG = np.random.default_rng(7)
MODES = ["PY"] + [m for m in OP_TEST_MODES if m != "PY"]


def normal(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape)


def positive(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, size=shape)


def unit(*shape: int) -> np.ndarray:
    return RNG.uniform(-0.8, 0.8, size=shape)


@dataclasses.dataclass
class GradCase:
    """fun(*symbolic inputs) -> one tensor, differentiated at the points pt."""

    name: str
    fun: Callable[..., Any]
    pt: Sequence[np.ndarray]

    def __str__(self) -> str:
        return self.name


def _c(name: str, fun: Callable[..., Any], *pt: np.ndarray) -> GradCase:
    return GradCase(name, fun, list(pt))


_REP = np.array([0, 2, 0, 1, 2, 2])  # repeated indices: gradients accumulate (numpy.add.at)

ELEMWISE = [
    _c("add-broadcast", lambda x, y: x + y, normal(3, 4), normal(4)),
    _c("add-runtime-broadcast", lambda x, y: x + y, normal(3, 1), normal(3, 4)),
    _c("sub", lambda x, y: x - y, normal(3, 4), normal(3, 1)),
    _c("mul", lambda x, y: x * y, normal(2, 3), normal(2, 3)),
    _c("true_div", lambda x, y: x / y, normal(3), positive(3)),
    _c("pow", lambda x, y: x ** y, positive(4), normal(4)),
    _c("pow-const", lambda x: x ** 3, normal(4)),
    _c("pow-zero-exponent", lambda x, y: x ** y, positive(4), np.array([0.0, 1.0, 2.0, -1.0])),
    _c("neg-abs", lambda x: -abs(x), normal(5)),
    _c("sqr-sqrt", lambda x: gt.sqr(x) + gt.sqrt(x), positive(4)),
    _c("reciprocal", lambda x: gt.reciprocal(x), positive(4)),
    _c("exp-log", lambda x: gt.exp(x) + gt.log(x) + gt.log2(x) + gt.log10(x), positive(4)),
    _c("exp2-expm1-log1p", lambda x: gt.exp2(x) + gt.expm1(x) + gt.log1p(x), positive(4)),
    _c("trig", lambda x: gt.sin(x) * gt.cos(x) + gt.tan(x), unit(5)),
    _c("inverse-trig", lambda x: gt.arcsin(x) + gt.arccos(x) * 2 + gt.arctan(x), unit(5)),
    _c("arctan2", lambda y, x: gt.arctan2(y, x), normal(4), positive(4)),
    _c("hyperbolic", lambda x: gt.sinh(x) + gt.cosh(x) + gt.tanh(x), normal(5)),
    _c("inverse-hyperbolic", lambda x: gt.arcsinh(x) + gt.arctanh(x * 0.5), unit(5)),
    _c("arccosh", lambda x: gt.arccosh(x), positive(4) + 1.5),
    _c("erf-erfc", lambda x: gt.erf(x) + 3 * gt.erfc(x), normal(5)),
    _c("sigmoid-softplus-relu", lambda x: gt.sigmoid(x) + gt.softplus(x) * gt.relu(x), normal(6)),
    _c("maximum-minimum", lambda x, y: gt.maximum(x, y) * 2 + gt.minimum(x, y), normal(5), normal(5)),
    _c("clip", lambda x, lo, hi: gt.clip(x, lo, hi), normal(6) * 2, normal(6) * 0.1 - 1,
       normal(6) * 0.1 + 1),
    _c("where", lambda x, y: gt.where(x > 0, x * y, y ** 2), normal(6), normal(6)),
    _c("mod", lambda x, y: gt.mod(x, y), np.array([2.3, -1.7, 5.0]), np.array([1.1, 0.9, -1.3])),
    _c("cast-through", lambda x: gt.cast(gt.cast(x, "float32"), "float64") * 0
       + gt.cast(x, "int64") + x, normal(4)),
]

REDUCTIONS = [
    _c("sum-axis", lambda x: gt.sum(x, axis=1), normal(3, 4)),
    _c("sum-all", lambda x: gt.sum(x ** 2), normal(3, 4)),
    _c("sum-keepdims", lambda x: gt.sum(x, axis=0, keepdims=True) * x, normal(3, 4)),
    _c("mean", lambda x: gt.mean(x, axis=(0, 2)), normal(2, 3, 2)),
    _c("prod", lambda x: gt.prod(x, axis=0), normal(3, 4)),
    _c("prod-with-zero", lambda x: gt.prod(x, axis=1),
       np.array([[0.0, 2.0, 3.0], [1.5, 2.0, 3.0]])),
    _c("max", lambda x: gt.max(x, axis=1), normal(3, 4)),
    _c("min-all", lambda x: gt.min(x), normal(3, 4)),
    _c("argmax-is-flat", lambda x: x * gt.cast(gt.argmax(x), "float64"), normal(5)),
]

SHAPES = [
    _c("transpose", lambda x: x.T, normal(3, 4)),
    _c("dimshuffle", lambda x: x.dimshuffle(2, "x", 0, 1), normal(2, 3, 4)),
    _c("reshape", lambda x: x.reshape((4, 3)), normal(3, 4)),
    _c("reshape-minus-one", lambda x: x.reshape((2, -1, 3)), normal(3, 4)),
    _c("flatten", lambda x: gt.flatten(x, 2), normal(2, 3, 2)),
    _c("specify-shape", lambda x: gt.specify_shape(x, (3, None)) * 2, normal(3, 2)),
    _c("squeeze-expand", lambda x: gt.expand_dims(gt.squeeze(x, 1), 0), normal(3, 1)),
    _c("concatenate", lambda x, y: gt.concatenate([x, y, x], axis=1), normal(2, 3), normal(2, 1)),
    _c("stack", lambda x, y: gt.stack([x, y], axis=1), normal(3), normal(3)),
    _c("stack-scalars", lambda x, y: gt.stack([x, y * 2, x * y]), normal(), normal()),
    _c("split", lambda x: gt.concatenate([p * (k + 1) for k, p in enumerate(gt.split(x, [1, 3], 2, 0))]),
       normal(4, 2)),
    _c("alloc", lambda x: gt.alloc(x, 2, 3), normal(3)),
    _c("alloc-runtime-broadcast", lambda x: gt.alloc(x, 2, x.shape[0], 3), normal(1, 3)),
    _c("second", lambda x, y: gt.second(x, y), normal(2, 3), normal(3)),
    _c("broadcast-to", lambda x: gt.broadcast_to(x, (4, 3)), normal(1, 3)),
]

INDEXING = [
    _c("slice", lambda x: x[1:3, ::2], normal(4, 5)),
    _c("reverse-int", lambda x: x[::-1, 1], normal(4, 5)),
    _c("newaxis", lambda x: x[None, 2:], normal(4)),
    _c("inc-subtensor", lambda x, y: gt.inc_subtensor(x[1:3], y), normal(4, 2), normal(2)),
    _c("set-subtensor", lambda x, y: gt.set_subtensor(x[1:3], y), normal(4, 2), normal(2, 2)),
    _c("advanced1-repeated", lambda x: x[_REP], normal(3, 2)),
    _c("advanced-inc-repeated", lambda x, y: gt.inc_subtensor(x[_REP], y), normal(3, 2), normal(6, 2)),
    _c("advanced-set", lambda x, y: gt.set_subtensor(x[np.array([2, 0])], y), normal(3, 2), normal(2)),
    _c("advanced-2d", lambda x: x[np.array([0, 1, 0]), np.array([2, 2, 2])], normal(2, 3)),
    _c("advanced-mixed", lambda x: x[1:, np.array([0, 0, 2])], normal(3, 3)),
    _c("boolean-mask", lambda x: x[np.array([True, False, True])], normal(3, 2)),
    _c("take", lambda x: gt.take(x, np.array([[1, 1], [0, 2]]), axis=1), normal(2, 3)),
]

BLAS = [
    _c("dot-mm", gt.dot, normal(3, 4), normal(4, 2)),
    _c("dot-vm", gt.dot, normal(4), normal(4, 2)),
    _c("dot-mv", gt.dot, normal(3, 4), normal(4)),
    _c("dot-vv", gt.dot, normal(4), normal(4)),
    _c("dot-3d", gt.dot, normal(2, 3, 4), normal(4, 2)),
    _c("matmul-batch-broadcast", gt.matmul, normal(2, 1, 3, 4), normal(3, 4, 2)),
    _c("matmul-runtime-batch", gt.matmul, normal(1, 3, 4), normal(2, 4, 2)),
    _c("matmul-vector-left", gt.matmul, normal(4), normal(2, 4, 3)),
    _c("matmul-vector-right", gt.matmul, normal(2, 3, 4), normal(4)),
    _c("tensordot", lambda a, b: gt.tensordot(a, b, [[0, 2], [1, 0]]), normal(2, 3, 4), normal(4, 2, 5)),
    _c("tensordot-int", lambda a, b: gt.tensordot(a, b, 1), normal(2, 3), normal(3, 2)),
    _c("outer", gt.outer, normal(3), normal(4)),
]

_LABELS = np.array([2, 0, 3])
SPECIAL = [
    _c("softmax", lambda x: gt.softmax(x), normal(3, 4)),
    _c("softmax-axis0", lambda x: gt.softmax(x, axis=0), normal(3, 4)),
    _c("softmax-all", lambda x: gt.softmax(x, axis=None), normal(3, 4)),
    _c("log-softmax", lambda x: gt.log_softmax(x), normal(3, 4)),
    _c("log-softmax-large", lambda x: gt.log_softmax(x * 1.0), normal(3, 4) + 500.0),
    _c("logsumexp", lambda x: gt.logsumexp(x, axis=1), normal(3, 4)),
    _c("logsumexp-keepdims", lambda x: gt.logsumexp(x, axis=(0, 2), keepdims=True), normal(3, 2, 2)),
    _c("logsumexp-all", lambda x: gt.logsumexp(x), normal(3, 4)),
    _c("take-labels", lambda x: gt.take_labels(x, _LABELS), normal(3, 4)),
    _c("crossentropy-softmax", lambda x: gt.crossentropy_softmax(x, _LABELS), normal(3, 4)),
    _c("crossentropy-softmax-onehot", lambda x, t: gt.crossentropy_softmax(x, gt.softmax(t)),
       normal(3, 4), normal(3, 4)),
    _c("categorical-crossentropy", lambda x: gt.categorical_crossentropy(gt.softmax(x), _LABELS),
       normal(3, 4)),
]

EXTRA = [
    _c("cumsum", lambda x: gt.cumsum(x, axis=1), normal(3, 4)),
    _c("cumsum-flat", lambda x: gt.cumsum(x), normal(3, 4)),
    _c("cumprod", lambda x: gt.cumprod(x, axis=0), normal(3, 4)),
    _c("cumprod-flat", lambda x: gt.cumprod(x), positive(2, 3)),
    _c("cumprod-zeros", lambda x: gt.cumprod(x, axis=-1), np.array([[0.0, 1.5, 0.0], [-1.2, 0.0, 0.7]])),
]


def _normal_rv(loc: Any, scale: Any) -> Any:
    from graphjit.tensor.random import NormalRV
    rng = gj.shared(np.random.default_rng(3))   # no update: every call draws the same sample
    return NormalRV("float64", has_size=True)(rng, (4, 3), loc, scale)


def _uniform_rv(low: Any, high: Any) -> Any:
    from graphjit.tensor.random import UniformRV
    rng = gj.shared(np.random.default_rng(3))
    return UniformRV("float64")(rng, low, high)


RANDOM = [
    _c("normal-pathwise", _normal_rv, normal(3), positive(1)),
    _c("uniform-pathwise", _uniform_rv, normal(2, 3), normal(2, 3) + 5.0),
]

ALL = ELEMWISE + REDUCTIONS + SHAPES + INDEXING + BLAS + SPECIAL + EXTRA + RANDOM


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ALL, ids=str)
def test_verify_grad(case: GradCase, mode: str) -> None:
    with warnings.catch_warnings():
        if any(case is c for c in INDEXING + RANDOM):
            # General advanced indexing and random draws have no LLVM lowering yet (they run perform).
            warnings.simplefilter("ignore", FallbackWarning)
        verify_grad(case.fun, case.pt, mode=mode, n_tests=2 if mode == "PY" else 1,
                    rng=np.random.default_rng(0))


FLOAT32 = ["add-broadcast", "mul", "sum-axis", "dot-mm", "softmax", "log-softmax",
           "crossentropy-softmax", "advanced1-repeated", "reshape", "concatenate"]


@pytest.mark.parametrize("name", FLOAT32)
def test_verify_grad_float32_smoke(name: str) -> None:
    case = next(c for c in ALL if c.name == name)
    verify_grad(case.fun, [p.astype("float32") for p in case.pt], mode="PY",
                rng=np.random.default_rng(0))


def test_verify_grad_reports_a_wrong_gradient() -> None:
    from graphjit.gradient import GradientError, grad_scale
    with pytest.raises(GradientError, match="worst element"):
        verify_grad(lambda x: grad_scale(x, 2.0) * 1.0, [normal(3)], mode="PY")


# x ** y where x == 0 or y == 0: 0 for d/dy at x == 0 (0**y is constant in y on each side of y = 0;
# PyTensor's convention, JAX's for y >= 0) and 0 for d/dx at y == 0 (x**0 is 1; JAX's, at an integer
# y). Elsewhere y * x**(y - 1) (+-inf at x == 0 for 0 < y < 1 or y < 0, the one-sided limit).
POW_X = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5, 2.0, 0.5])
POW_Y = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 0.0, -2.0, 2.5])


def _pow_grads_reference(x: np.ndarray, y: np.ndarray) -> tuple:
    with np.errstate(all="ignore"):
        dx = np.where(y == 0, 0.0, y * np.power(x, y - 1))
        dy = np.where(x == 0, 0.0, np.power(x, y) * np.log(np.where(x == 0, 1.0, x)))
    return dx, dy


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_pow_gradient_conventions_at_zero(mode: str, dtype: str) -> None:
    x, y = gt.vector("x", dtype=dtype), gt.vector("y", dtype=dtype)
    gx, gy = gj.function([x, y], gj.grad((x ** y).sum(), [x, y]), mode=mode)(
        POW_X.astype(dtype), POW_Y.astype(dtype))
    want_dx, want_dy = _pow_grads_reference(POW_X, POW_Y)
    assert not np.isnan(gx).any() and not np.isnan(gy).any()
    np.testing.assert_allclose(gx, want_dx, rtol=1e-6)
    np.testing.assert_allclose(gy, want_dy, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_pow_gradient_with_a_constant_exponent_or_base(mode: str) -> None:
    x = gt.dvector("x")
    a = np.array([0.0, 1.0, -2.0])
    for k in (0.0, 1.0, 2.0):                               # x ** 0, x ** 1, x ** 2 at x = 0
        got = gj.function([x], gj.grad((x ** k).sum(), x), mode=mode)(a)
        np.testing.assert_allclose(got, np.zeros(3) if k == 0 else k * a ** (k - 1) if k > 1 else np.ones(3))
    got = gj.function([x], gj.grad((0.0 ** x).sum(), x), mode=mode)(a)   # 0 ** y: d/dy is 0
    np.testing.assert_array_equal(got, np.zeros(3))
