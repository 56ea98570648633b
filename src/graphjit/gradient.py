"""Theano's and PyTensor's gradient module: grad, Lop, Rop (graphjit/autodiff.py), jacobian, hessian
(graphjit/jacobian.py) and the markers ops return, re-exported; the ops that only change how gradients flow
(zero_grad, disconnected_grad, grad_clip, grad_scale); verify_grad."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from graphjit.autodiff import (DisconnectedInputError, Lop, NullTypeGradError, Rop, grad,  # noqa: F401
                               grad_zeros_like)
from graphjit.graph.basic import Apply, Variable
from graphjit.graph.compile_hook import build_function
from graphjit.graph.grad_markers import (DisconnectedType, disconnected_type, grad_not_implemented,  # noqa: F401
                                        grad_undefined)
from graphjit.graph.op import Op
from graphjit import tensor as tensor_package
from graphjit.jacobian import hessian, hessian_vector_product, jacobian  # noqa: F401
from graphjit.tensor.basic import as_tensor_variable, constant
from graphjit.tensor.math import clip, mul, sum as tsum
from graphjit.tensor.type import TensorType


class GradientError(AssertionError):
    """verify_grad found the symbolic gradient different from finite differences."""

    def __init__(self, arg: int, err_pos: tuple, shape: tuple, val1: float, val2: float,
                 abs_err: float, rel_err: float, abs_tol: float, rel_tol: float):
        self.arg, self.err_pos, self.shape = arg, err_pos, shape
        self.val1, self.val2, self.abs_err, self.rel_err = val1, val2, abs_err, rel_err
        self.abs_tol, self.rel_tol = abs_tol, rel_tol
        super().__init__(
            f"gradient of input {arg} (shape {shape}) differs from finite differences; worst element "
            f"{err_pos}: symbolic {val1!r} vs numeric {val2!r} (abs err {abs_err:.3g}, rel err "
            f"{rel_err:.3g}; tolerances abs {abs_tol:.3g}, rel {rel_tol:.3g})")


# ------------------------------------------------------------------------------------------------
# Ops that only change how gradients flow (identity in the forward pass)
# ------------------------------------------------------------------------------------------------

class GradientBlockOp(Op):
    """Identity on the value; subclasses decide what the gradient becomes."""

    __props__: tuple = ()
    view_map = {0: [0]}

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        out[0][0] = inputs[0]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def R_op(self, inputs, eval_points):
        return list(eval_points)


class ZeroGrad(GradientBlockOp):
    """The gradient through it is zero."""

    def L_op(self, inputs, outputs, grads):
        return [grad_zeros_like(inputs[0])]

    def R_op(self, inputs, eval_points):
        return [None if v is None else grad_zeros_like(v) for v in eval_points]


class DisconnectedGrad(GradientBlockOp):
    """The cost is treated as not depending on its input through it."""

    def L_op(self, inputs, outputs, grads):
        return [disconnected_type()]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[False]]


class GradClip(GradientBlockOp):
    """The gradient through it is clipped to [lower, upper].

    The bounds are held as clip_lower/clip_upper: an attribute named ``lower`` would hide Op.lower.
    """

    __props__ = ("clip_lower", "clip_upper")

    def __init__(self, lower: float, upper: float):
        if lower > upper:
            raise ValueError(f"grad_clip: lower bound {lower} exceeds upper bound {upper}")
        self.clip_lower, self.clip_upper = float(lower), float(upper)

    def L_op(self, inputs, outputs, grads):
        return [clip(grads[0], self.clip_lower, self.clip_upper)]


class GradScale(GradientBlockOp):
    """The gradient through it is multiplied by a constant."""

    __props__ = ("multiplier",)

    def __init__(self, multiplier: float):
        self.multiplier = float(multiplier)

    def L_op(self, inputs, outputs, grads):
        return [mul(grads[0], self.multiplier)]


def zero_grad(x: Any) -> Variable:
    """x, with a zero gradient flowing back through it."""
    return ZeroGrad()(x)


def disconnected_grad(x: Any) -> Variable:
    """x, treated by grad as a constant (no gradient flows through it)."""
    return DisconnectedGrad()(x)


def grad_clip(x: Any, lower: float, upper: float) -> Variable:
    """x, with the gradient flowing back through it clipped to [lower, upper]."""
    return GradClip(lower, upper)(x)


def grad_scale(x: Any, multiplier: float) -> Variable:
    """x, with the gradient flowing back through it multiplied by multiplier."""
    return GradScale(multiplier)(x)


GRADIENT_ONLY_OPS = (ZeroGrad, DisconnectedGrad, GradClip, GradScale)


# ------------------------------------------------------------------------------------------------
# verify_grad (Theano's place for it); functions are built through the graph layer's compiler hook
# ------------------------------------------------------------------------------------------------

# (finite-difference step, absolute tolerance, relative tolerance) per dtype
_DEFAULTS = {"float64": (1e-6, 1e-5, 1e-5), "float32": (3e-3, 5e-2, 5e-2)}


def verify_grad(fun: Callable[..., Any], pt: Sequence[Any], n_tests: int = 2,
                rng: Optional[np.random.Generator] = None, eps: Optional[float] = None,
                abs_tol: Optional[float] = None, rel_tol: Optional[float] = None,
                mode: Any = None, cast_to_output_type: bool = False) -> None:
    """Raise GradientError if grad of sum(fun(*pt) * random) disagrees with finite differences.

    fun takes symbolic tensors shaped like the arrays of pt and returns one tensor. The tolerance
    and step default per dtype (float32 is checked loosely); the error names the input, the worst
    element, both values and both errors.
    """
    rng = rng if rng is not None else np.random.default_rng(42)
    pt = [np.array(p, dtype=p.dtype if isinstance(p, np.ndarray) else "float64") for p in pt]
    for i, p in enumerate(pt):
        if p.dtype.kind != "f":
            raise TypeError(f"verify_grad: point {i} has dtype {p.dtype}; give float arrays")
    inputs = [TensorType(str(p.dtype), (None,) * p.ndim)(f"input{i}") for i, p in enumerate(pt)]
    out = as_tensor_variable(fun(*inputs))
    dtype = "float32" if all(p.dtype == np.float32 for p in pt) and out.dtype == "float32" else "float64"
    step, atol, rtol = _DEFAULTS[dtype]
    step, atol, rtol = eps or step, abs_tol or atol, rel_tol or rtol
    for _ in range(n_tests):
        probe_value = rng.uniform(0.5, 1.5, size=_output_shape(inputs, out, pt, mode)).astype(out.dtype)
        probe = constant(probe_value) if out.dtype.startswith("float") else None
        cost = tsum(out * probe) if probe is not None else tsum(out)
        cost_fn = build_function(inputs, cost, mode=mode, on_unused_input="ignore")
        grad_fn = build_function(inputs, grad(cost, inputs, disconnected_inputs="ignore"), mode=mode,
                              on_unused_input="ignore")
        symbolic = grad_fn(*pt)
        numeric = _finite_differences(cost_fn, pt, step)
        for k, (s, n) in enumerate(zip(symbolic, numeric)):
            _compare(k, np.asarray(s, dtype="float64"), n, atol, rtol, GradientError)


def _output_shape(inputs: List[Any], out: Any, pt: List[np.ndarray], mode: Any) -> tuple:
    return np.shape(build_function(inputs, out, mode=mode, on_unused_input="ignore")(*pt))


def _finite_differences(cost_fn: Callable[..., Any], pt: List[np.ndarray], step: float
                        ) -> List[np.ndarray]:
    grads = []
    for i, p in enumerate(pt):
        g = np.zeros(p.shape, dtype="float64")
        for idx in np.ndindex(*p.shape):
            args = [q.copy() for q in pt]
            args[i][idx] = p[idx] + step
            up = float(cost_fn(*args))
            args[i][idx] = p[idx] - step
            down = float(cost_fn(*args))
            g[idx] = (up - down) / (2 * step)
        grads.append(g)
    return grads


def _compare(k: int, sym: np.ndarray, num: np.ndarray, atol: float, rtol: float, error: type) -> None:
    if sym.shape != num.shape:
        raise error(k, (), num.shape, float("nan"), float("nan"), float("inf"), float("inf"), atol, rtol)
    if sym.size == 0:
        return
    abs_err = np.abs(sym - num)
    rel_err = abs_err / np.maximum(np.abs(sym) + np.abs(num), 1e-8)
    bad = (abs_err > atol) & (rel_err > rtol)
    if np.any(bad) or not np.all(np.isfinite(sym)):
        worst = np.unravel_index(np.argmax(np.where(np.isfinite(rel_err), rel_err, np.inf)), sym.shape)
        raise error(k, tuple(int(w) for w in worst), sym.shape, float(sym[worst]), float(num[worst]),
                    float(abs_err[worst]), float(rel_err[worst]), atol, rtol)


def _install_on_tensor() -> None:
    """Theano's theano.tensor exported its gradient functions (T.grad, T.jacobian...): the tensor layer is below
    this one, so they are installed on the package from here (import graphjit loads this module)."""
    for name, fn in (("grad", grad), ("Lop", Lop), ("Rop", Rop), ("jacobian", jacobian), ("hessian", hessian),
                     ("verify_grad", verify_grad)):
        setattr(tensor_package, name, fn)


_install_on_tensor()


__all__ = ["grad", "Lop", "Rop", "jacobian", "hessian", "hessian_vector_product", "verify_grad", "zero_grad",
           "disconnected_grad", "grad_clip", "grad_scale", "grad_not_implemented", "grad_undefined",
           "grad_zeros_like", "DisconnectedType", "disconnected_type", "DisconnectedInputError",
           "NullTypeGradError", "GradientError", "GradientBlockOp", "ZeroGrad", "DisconnectedGrad", "GradClip",
           "GradScale"]
