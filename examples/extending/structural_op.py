"""Adding a structural op: one Op class and one LLVM lowering registered for it.

``Reverse`` flips a vector (numpy's ``x[::-1]``, as a copy).  The class holds the op's whole contract
(make_node, perform, infer_shape, grad, __props__); ``lower_reverse`` is what the LLVM backend emits for it.
Its test table lives in tests/test_extending_examples.py (run through tests/op_check.py).

Run: python examples/extending/structural_op.py
"""

from typing import Any, Sequence

import numpy as np
from llvmlite import ir

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.link.llvm.ir.layouts import I64
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.registry import lowerings


class Reverse(Op):
    """x[::-1] for a vector x (a fresh array)."""

    __props__ = ()                              # no parameters: every Reverse() is equal to every other

    def make_node(self, x: Any) -> Apply:
        x = gt.as_tensor_variable(x)
        if x.type.ndim != 1:
            raise TypeError(f"Reverse takes a vector, got {x.type}")
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[np.ndarray], output_storage: list) -> None:
        output_storage[0][0] = inputs[0][::-1].copy()

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def grad(self, inputs: Sequence[Any], output_grads: Sequence[Any]) -> list:
        return [self(output_grads[0])]          # reversing is its own adjoint


reverse = Reverse()


@lowerings.register(Reverse, version=(1,))
def lower_reverse(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """out[i] = x[n - 1 - i]: one counted loop over strided input, into a fresh C-contiguous output."""
    (x,) = inputs
    n = ctx.shape(x, 0)
    out = ctx.allocate(node, 0, [n])            # the graph output's own array, or a planned temporary
    last = ctx.builder.sub(n, I64(1))
    with ctx.for_range(n, name=ctx.name(node, "i")) as i:
        value = ctx.load_element(x, [ctx.builder.sub(last, i)])
        ctx.store_element(out, [i], value)
    return [out]


def main() -> None:
    x = gt.dvector("x")
    y = reverse(x) * 2
    f = gj.function([x], [y, gj.grad((y * gt.arange(3.0)).sum(), x)])
    a = np.array([1.0, 2.0, 3.0])
    out, g = f(a)
    print("reverse(x) * 2 =", out, " gradient of sum(reverse(x) * 2 * [0, 1, 2]) =", g)
    print("fallback nodes under FAST_RUN:", f.native.fallback_nodes)
    gj.dprint(f)


if __name__ == "__main__":
    main()
