"""Products rewritten for BLAS.

``local_complex_product_operands`` (stabilize: fast_run and fast_compile, since every compiled mode needs it): a
dot/matmul/tensordot mixing a complex operand with a real one (or
complex64 with complex128) takes both in the result's dtype, as numpy computes it: one zgemm/cgemm (the
lowerings take one complex dtype) instead of a call back into ``perform``.

``local_tensordot_to_dot`` (specialize: fast_run): a TensorDot becomes one matrix product.

numpy.tensordot's own method: the free axes of ``a`` then its summed axes (a transpose: a view), flattened to an
(M, K) matrix; ``b``'s summed axes then its free axes flattened to (K, N); one ``dot`` (BLAS gemm, or gemv when
M or N is statically 1); the (M, N) result reshaped to the free axes.  The TensorDot lowering itself is a loop nest
per output element (hundreds of times slower than gemm at 128 x 128).

Equal products K of the summed lengths do not prove equal lengths (2 x 3 against 3 x 2): where the static shapes do
not prove each pair equal, b's transposed shape is checked at run time against the lengths a implies (MatchShape:
a ValueError, as numpy's "shape-mismatch for sum").
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.tensor.basic import cast
from graphjit.tensor.blas import Dot, Matmul, TensorDot
from graphjit.tensor.elemwise import DimShuffle
from graphjit.tensor.make_vector_op import make_vector
from graphjit.tensor.math import prod
from graphjit.tensor.rewriting.basic import register_specialize, register_stabilize
from graphjit.tensor.shape import reshape
from graphjit.tensor.shape_base import MatchShape, shape_i


def _lengths(x: Variable, dims: Sequence[int]) -> List[Variable]:
    return [shape_i(x, d) for d in dims]


def _flat(lengths: Sequence[Variable]) -> Variable:
    """The product of lengths as an int64 0-d tensor (1 for none)."""
    if len(lengths) == 1:
        return lengths[0]
    return prod(make_vector(list(lengths), "int64")) if lengths else make_vector([1], "int64")[0]


def _transposed(x: Variable, order: List[int]) -> Variable:
    return x if order == list(range(x.ndim)) else DimShuffle(x.ndim, order)(x)


def _checked(a: Variable, b: Variable, a_axes: Sequence[int], b_axes: Sequence[int], bt: Variable,
             free_b: Sequence[int]) -> Variable:
    """bt, checked at run time to have a's summed lengths where the static shapes do not prove them."""
    if all(a.type.shape[i] is not None and a.type.shape[i] == b.type.shape[j] for i, j in zip(a_axes, b_axes)):
        return bt
    want = make_vector(_lengths(a, a_axes) + _lengths(b, free_b), "int64")
    return MatchShape(("tensordot's b (summed axes first)", "what a's summed axes require"))(bt, want)


@node_rewriter([TensorDot])
def local_tensordot_to_dot(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """TensorDot(a, b) -> reshape(dot(reshape(a^T), reshape(b^T)))."""
    a, b = node.inputs
    a_axes, b_axes = node.op.axes
    free_a = [d for d in range(a.ndim) if d not in a_axes]
    free_b = [d for d in range(b.ndim) if d not in b_axes]
    at = _transposed(a, free_a + list(a_axes))
    bt = _checked(a, b, a_axes, b_axes, _transposed(b, list(b_axes) + free_b), free_b)
    summed = _flat(_lengths(a, a_axes))
    am = reshape(at, make_vector([_flat(_lengths(a, free_a)), summed], "int64"), ndim=2)
    bm = reshape(bt, make_vector([summed, _flat(_lengths(b, free_b))], "int64"), ndim=2)
    out_shape = _lengths(a, free_a) + _lengths(b, free_b)
    product = Dot()(am, bm)
    if product.dtype != node.outputs[0].dtype:
        return None
    return [reshape(product, make_vector(out_shape, "int64") if out_shape else make_vector([], "int64"),
                    ndim=len(out_shape))]


@node_rewriter([Dot, Matmul, TensorDot])
def local_complex_product_operands(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """op(a, b) -> op(cast(a), cast(b)) in the complex result dtype, when an operand has another dtype."""
    dtype = node.outputs[0].dtype
    if not dtype.startswith("complex") or all(v.dtype == dtype for v in node.inputs):
        return None
    return [node.op(*[v if v.dtype == dtype else cast(v, dtype) for v in node.inputs])]


register_stabilize(local_complex_product_operands, "blas")
register_specialize(local_tensordot_to_dot, "blas")

__all__ = ["local_complex_product_operands", "local_tensordot_to_dot"]
