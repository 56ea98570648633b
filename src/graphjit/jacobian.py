"""jacobian, hessian and hessian_vector_product, built from grad (a scan over the rows when the length is not
static)."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from graphjit.autodiff import grad
from graphjit.graph.basic import Variable
from graphjit.tensor.alloc import arange
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.join import stack
from graphjit.tensor.math import mul, sum as tsum
from graphjit.graph import forksafe

UNROLL_LIMIT = 16  # statically short outputs are differentiated element by element, symbolically


def jacobian(expression: Variable, wrt: Union[Variable, Sequence[Variable]],
             consider_constant: Optional[Sequence[Variable]] = None,
             disconnected_inputs: str = "raise") -> Any:
    """d expression[i] / d wrt for every element i of a vector (or scalar) expression.

    The result for each wrt has shape expression.shape + wrt.shape.
    """
    expression = as_tensor_variable(expression)
    single = isinstance(wrt, Variable)
    wrts = [wrt] if single else list(wrt)
    if expression.ndim == 0:
        out = grad(expression, wrts, consider_constant=consider_constant,
                   disconnected_inputs=disconnected_inputs)
        return out[0] if single else out
    if expression.ndim != 1:
        raise ValueError(f"jacobian: expression must be a scalar or a vector, got {expression.describe()}; "
                         "flatten it first")
    n = expression.type.shape[0]
    if n is not None and n <= UNROLL_LIMIT:
        rows = [grad(expression[i], wrts, consider_constant=consider_constant,
                     disconnected_inputs=disconnected_inputs) for i in range(n)]
        if n == 0:
            raise ValueError("jacobian of a statically empty vector")
        out = [stack([r[k] for r in rows]) for k in range(len(wrts))]
    else:
        out = [_jacobian_loop(expression, w, consider_constant, disconnected_inputs) for w in wrts]
    return out[0] if single else out


# the scan package loads when a jacobian first needs a loop (import graphjit, which loads this module, does not
# load it: ~6 ms)
_SCAN_PACKAGE = "graphjit.scan_module"


def _jacobian_loop(expression: Variable, wrt: Variable, consider_constant: Any,
                   disconnected_inputs: str) -> Variable:
    """Rows of the Jacobian by a scan over the output's indices (Theano's tutorial form, compiled as a native
    loop by the LLVM linker)."""
    rows, _ = forksafe.import_module(_SCAN_PACKAGE).scan(
        lambda i, e, w: grad(e[i], w, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs),
        sequences=arange(expression.shape[0]), non_sequences=[expression, wrt], name="jacobian")
    return rows


def hessian(cost: Variable, wrt: Union[Variable, Sequence[Variable]],
            consider_constant: Optional[Sequence[Variable]] = None,
            disconnected_inputs: str = "raise") -> Any:
    """The matrix of second derivatives of a scalar cost with respect to each vector in wrt."""
    single = isinstance(wrt, Variable)
    wrts = [wrt] if single else list(wrt)
    out = []
    for w in wrts:
        if w.ndim != 1:
            raise ValueError(f"hessian: wrt must be vectors, got {w.describe()}")
        g = grad(cost, w, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)
        out.append(jacobian(g, w, consider_constant=consider_constant,
                            disconnected_inputs=disconnected_inputs))
    return out[0] if single else out


def hessian_vector_product(cost: Variable, wrt: Union[Variable, Sequence[Variable]],
                           p: Union[Variable, Sequence[Variable]]) -> Any:
    """H(cost, wrt) @ p without forming the Hessian (the gradient of <grad(cost), p>)."""
    single = isinstance(wrt, Variable)
    wrts = [wrt] if single else list(wrt)
    ps = [p] if isinstance(p, Variable) else list(p)
    gs = grad(cost, wrts)
    inner = tsum(mul(gs[0], ps[0]))
    for g, v in zip(gs[1:], ps[1:]):
        inner = inner + tsum(mul(g, v))
    out = grad(inner, wrts)
    return out[0] if single else out
