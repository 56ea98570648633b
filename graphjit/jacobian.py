"""jacobian, hessian and hessian_vector_product, built from grad (a loop op when the length is not static)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable, clone_replace, graph_inputs
from graphjit.graph.compile_hook import build_function
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.join import stack
from graphjit.tensor.math import mul, sum as tsum
from graphjit.tensor.type import TensorType

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


def _jacobian_loop(expression: Variable, wrt: Variable, consider_constant: Any,
                   disconnected_inputs: str) -> Variable:
    i = TensorType("int64", ())("i")
    row = grad(expression[i], wrt, consider_constant=consider_constant,
               disconnected_inputs=disconnected_inputs)
    free = [v for v in graph_inputs([row, expression]) if not isinstance(v, Constant) and v is not i]
    op = JacobianLoop(i, free, row, expression, wrt)
    return op(*free)


class JacobianLoop(Op):
    """Rows of a Jacobian computed by looping a compiled row function over the output elements."""

    def __init__(self, index: Variable, free: List[Variable], row: Variable, expression: Variable,
                 wrt: Variable):
        self.index, self.free, self.row, self.expression = index, list(free), row, expression
        self._wrt = wrt
        self._fn = None

    def make_node(self, *inputs: Any) -> Apply:
        if len(inputs) != len(self.free):
            raise TypeError(f"JacobianLoop: expected {len(self.free)} inputs")
        out_type = TensorType(self.row.dtype, self.expression.type.shape[:1] + self.row.type.shape)
        return Apply(self, list(inputs), [out_type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        if self._fn is None:
            self._length = build_function(self.free, self.expression.shape[0], on_unused_input="ignore")
            self._fn = build_function([self.index] + self.free, self.row, on_unused_input="ignore")
        n = int(self._length(*inputs))
        rows = [self._fn(np.int64(k), *inputs) for k in range(n)]
        if rows:
            result = np.stack(rows)
        else:
            result = np.zeros((0,) + tuple(np.shape(inputs[self.free.index(self._wrt)])), dtype="float64") \
                if self._wrt in self.free else np.zeros((0,), dtype="float64")
        out[0][0] = result.astype(node.outputs[0].type.dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        n = clone_replace(self.expression.shape[0], dict(zip(self.free, node.inputs)))
        wrt_shape = clone_replace(self.row.shape, dict(zip(self.free, node.inputs)))
        return [(n,) + tuple(wrt_shape[d] for d in range(self.row.ndim))]

    def __str__(self) -> str:
        return "JacobianLoop"


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


# gradient.py imports this module at its end (its names exist by then, whichever module loads first).
from graphjit.gradient import grad  # noqa: E402
