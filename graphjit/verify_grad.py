"""verify_grad: compare symbolic gradients with central finite differences on a random projection."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np

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
    import graphjit as gj
    import graphjit.tensor as gt
    from graphjit.gradient import GradientError, grad

    rng = rng if rng is not None else np.random.default_rng(42)
    pt = [np.array(p, dtype=p.dtype if isinstance(p, np.ndarray) else "float64") for p in pt]
    for i, p in enumerate(pt):
        if p.dtype.kind != "f":
            raise TypeError(f"verify_grad: point {i} has dtype {p.dtype}; give float arrays")
    inputs = [gt.TensorType(str(p.dtype), (None,) * p.ndim)(f"input{i}") for i, p in enumerate(pt)]
    out = gt.as_tensor_variable(fun(*inputs))
    dtype = "float32" if all(p.dtype == np.float32 for p in pt) and out.dtype == "float32" else "float64"
    step, atol, rtol = _DEFAULTS[dtype]
    step, atol, rtol = eps or step, abs_tol or atol, rel_tol or rtol
    for _ in range(n_tests):
        probe_value = rng.uniform(0.5, 1.5, size=_output_shape(inputs, out, pt, mode)).astype(out.dtype)
        probe = gt.constant(probe_value) if out.dtype.startswith("float") else None
        cost = gt.sum(out * probe) if probe is not None else gt.sum(out)
        cost_fn = gj.function(inputs, cost, mode=mode, on_unused_input="ignore")
        grad_fn = gj.function(inputs, grad(cost, inputs, disconnected_inputs="ignore"), mode=mode,
                              on_unused_input="ignore")
        symbolic = grad_fn(*pt)
        numeric = _finite_differences(cost_fn, pt, step)
        for k, (s, n) in enumerate(zip(symbolic, numeric)):
            _compare(k, np.asarray(s, dtype="float64"), n, atol, rtol, GradientError)


def _output_shape(inputs: List[Any], out: Any, pt: List[np.ndarray], mode: Any) -> tuple:
    import graphjit as gj
    return np.shape(gj.function(inputs, out, mode=mode, on_unused_input="ignore")(*pt))


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
