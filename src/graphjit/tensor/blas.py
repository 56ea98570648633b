"""Products of tensors: Dot (1-d/2-d, the BLAS-shaped op), Matmul (batched), TensorDot, and their helpers."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable, constant
from graphjit.tensor.elemwise import DimShuffle, broadcast_static_shape
from graphjit.tensor.elemwise_grad import reduce_to_input
from graphjit.tensor.math import add, conj, mul, real, sum as tsum
from graphjit.tensor.shape import broadcast_shape_symbolic, flatten
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable

StaticShape = Tuple[Optional[int], ...]
AxesSpec = Union[int, Sequence[Any]]


def product_dtype(a: Variable, b: Variable) -> str:
    """The dtype numpy 2 gives to dot/matmul/tensordot of a and b."""
    return str(np.result_type(a.dtype, b.dtype))


def _lengths_clash(x: Optional[int], y: Optional[int]) -> bool:
    return x is not None and y is not None and x != y


def _run(op: Op, fn: Any, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    """Call numpy's product fn(a, b); its shape errors become ValueErrors naming op and shapes."""
    try:
        result = fn(a, b)
    except ValueError as e:
        raise ValueError(f"{op}: cannot multiply arrays of shapes {a.shape} and {b.shape}: {e}") from None
    return np.asarray(result).astype(dtype, copy=False)


def _product_rop(product: Any, inputs: Sequence[Variable], eval_points: Sequence[Optional[Variable]]
                 ) -> Optional[Variable]:
    """Forward mode of a bilinear product: product(va, b) + product(a, vb), skipping missing tangents."""
    a, b = inputs
    va, vb = eval_points
    terms = ([product(va, b)] if va is not None else []) + ([product(a, vb)] if vb is not None else [])
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else add(terms[0], terms[1])


# ------------------------------------------------------------------------------------------------
# Dot: numpy.dot on 1-d and 2-d operands (what Gemm/Gemv/Ger rewrites will start from)
# ------------------------------------------------------------------------------------------------


def _complex_chain(l_op: Callable) -> Callable:
    """A product's L_op for a complex gz: the gradient of a real cost w.r.t. a complex operand is gz times the
    conjugate of the other operand (docs/gradients.md), which is conj(L(conj(gz))) since L is linear in gz and
    in the other operand; a real operand gets the real part of its term."""
    def wrapped(self: Any, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]) -> List[Variable]:
        (gz,) = grads
        if not gz.dtype.startswith("complex"):
            return l_op(self, inputs, outputs, grads)
        terms = l_op(self, inputs, outputs, [conj(gz)])
        return [conj(t) if x.dtype.startswith("complex") else real(t) for x, t in zip(inputs, terms)]
    wrapped.__doc__ = l_op.__doc__
    return wrapped


class Dot(Op):
    """numpy.dot of two 1-d or 2-d tensors: inner product, matrix-vector or matrix-matrix."""

    __props__ = ()

    def make_node(self, a: Any, b: Any) -> Apply:
        a, b = as_tensor_variable(a), as_tensor_variable(b)
        if a.ndim not in (1, 2) or b.ndim not in (1, 2):
            raise TypeError(f"{self}: takes 1-d or 2-d tensors, got {a.describe()} and {b.describe()}; "
                            "use dot() or tensordot() for other ranks")
        ka, kb = a.type.shape[-1], b.type.shape[0]
        if _lengths_clash(ka, kb):
            raise ValueError(f"{self}: shapes {a.type.shape} and {b.type.shape} are not aligned "
                             f"({ka} != {kb}); inputs {a.describe()} and {b.describe()}")
        shape = a.type.shape[:-1] + b.type.shape[1:]
        return Apply(self, [a, b], [TensorType(product_dtype(a, b), shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        a, b = inputs
        out[0][0] = _run(self, np.dot, a, b, node.outputs[0].type.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        sa, sb = shapes
        return [tuple(sa[:-1]) + tuple(sb[1:])]

    @_complex_chain
    def L_op(self, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]) -> List[Variable]:
        """gz times the other operand, transposed: one product per input shape (1-d/2-d)."""
        a, b = inputs
        (gz,) = grads
        if a.ndim == 1 and b.ndim == 1:
            return [mul(gz, b), mul(gz, a)]
        if a.ndim == 1:                       # (k,) . (k, m) -> (m,)
            return [_dot(b, gz), outer(a, gz)]
        if b.ndim == 1:                       # (n, k) . (k,) -> (n,)
            return [outer(gz, b), _dot(a.T, gz)]
        return [_dot(gz, b.T), _dot(a.T, gz)]

    def R_op(self, inputs: List[Variable], eval_points: List[Optional[Variable]]) -> List[Optional[Variable]]:
        """dot(va, b) + dot(a, vb)."""
        return [_product_rop(_dot, inputs, eval_points)]


_dot = Dot()


# ------------------------------------------------------------------------------------------------
# Matmul: numpy.matmul with batch dimensions broadcast
# ------------------------------------------------------------------------------------------------

def _matmul_core(sa: Sequence[Any], sb: Sequence[Any]) -> Tuple[List[Any], List[Any], Any, Any]:
    """Split (promoted) operand shapes into batch parts and the contracted lengths."""
    a2 = list(sa) if len(sa) > 1 else [1] + list(sa)
    b2 = list(sb) if len(sb) > 1 else list(sb) + [1]
    return a2[:-2], b2[:-2], a2[-1], b2[-2]


def _pad_left(shape: Sequence[Any], n: int, one: Any = 1) -> Tuple[Any, ...]:
    return (one,) * (n - len(shape)) + tuple(shape)


def _matmul_tail(sa: Sequence[Any], sb: Sequence[Any]) -> Tuple[Any, ...]:
    return (tuple(sa[-2:-1]) if len(sa) > 1 else ()) + (tuple(sb[-1:]) if len(sb) > 1 else ())


class Matmul(Op):
    """numpy.matmul: batched matrix products, batch dimensions broadcast, 1-d operands promoted."""

    __props__ = ()

    def make_node(self, a: Any, b: Any) -> Apply:
        a, b = as_tensor_variable(a), as_tensor_variable(b)
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError(f"{self}: operands must have at least one dimension, got "
                             f"{a.describe()} and {b.describe()}")
        batch_a, batch_b, ka, kb = _matmul_core(a.type.shape, b.type.shape)
        if _lengths_clash(ka, kb):
            raise ValueError(f"{self}: core dimensions do not match ({ka} != {kb}); inputs "
                             f"{a.describe()} and {b.describe()}")
        n = max(len(batch_a), len(batch_b))
        try:
            batch = broadcast_static_shape([_pad_left(batch_a, n), _pad_left(batch_b, n)],
                                           f"batch dimensions of {self}")
        except ValueError as e:
            raise ValueError(f"{e}; inputs {a.describe()} and {b.describe()}") from None
        shape = batch + _matmul_tail(a.type.shape, b.type.shape)
        return Apply(self, [a, b], [TensorType(product_dtype(a, b), shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        a, b = inputs
        out[0][0] = _run(self, np.matmul, a, b, node.outputs[0].type.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        a, b = node.inputs
        sa, sb = shapes
        batch_a, batch_b, _, _ = _matmul_core(sa, sb)
        static_a, static_b, _, _ = _matmul_core(a.type.shape, b.type.shape)
        n = max(len(batch_a), len(batch_b))
        one = constant(1, dtype="int64")
        batch = broadcast_shape_symbolic([_pad_left(batch_a, n, one), _pad_left(batch_b, n, one)],
                                         [_pad_left(static_a, n), _pad_left(static_b, n)])
        return [tuple(batch) + _matmul_tail(sa, sb)]

    @_complex_chain
    def L_op(self, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]) -> List[Variable]:
        """gz @ b^T and a^T @ gz on the promoted operands, summed over broadcast batch dimensions."""
        a, b = inputs
        (gz,) = grads
        a2 = a if a.ndim > 1 else DimShuffle(1, ("x", 0))(a)
        b2 = b if b.ndim > 1 else DimShuffle(1, (0, "x"))(b)
        if a.ndim == 1:
            gz = DimShuffle(gz.ndim, tuple(range(gz.ndim - 1)) + ("x", gz.ndim - 1))(gz) \
                if b.ndim > 1 else DimShuffle(gz.ndim, tuple(range(gz.ndim)) + ("x",))(gz)
        if b.ndim == 1:
            gz = DimShuffle(gz.ndim, tuple(range(gz.ndim)) + ("x",))(gz) if a.ndim > 1 else \
                DimShuffle(gz.ndim, tuple(range(gz.ndim - 1)) + ("x", gz.ndim - 1))(gz)
        ga = _batch_to(matmul(gz, _swap_last(b2)), a2)
        gb = _batch_to(matmul(_swap_last(a2), gz), b2)
        if a.ndim == 1:
            ga = DimShuffle(2, (1,))(ga)
        if b.ndim == 1:
            gb = DimShuffle(2, (0,))(gb)
        return [ga, gb]

    def R_op(self, inputs: List[Variable], eval_points: List[Optional[Variable]]) -> List[Optional[Variable]]:
        """matmul(va, b) + matmul(a, vb)."""
        return [_product_rop(matmul, inputs, eval_points)]


def _swap_last(x: Variable) -> Variable:
    """x with its last two dimensions swapped."""
    n = x.ndim
    return DimShuffle(n, tuple(range(n - 2)) + (n - 1, n - 2))(x)


def _batch_to(g: Variable, x: Variable) -> Variable:
    """g (shaped like a broadcast batched product) summed back to the batch shape of x."""
    extra = g.ndim - x.ndim
    if extra:
        g = tsum(g, axis=tuple(range(extra)))
    return reduce_to_input(g, x, g.type.shape)


_matmul = Matmul()


# ------------------------------------------------------------------------------------------------
# TensorDot: numpy.tensordot with fixed axes
# ------------------------------------------------------------------------------------------------

def normalize_tensordot_axes(axes: AxesSpec, a_ndim: int, b_ndim: int
                             ) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """numpy.tensordot's axes argument as two tuples of non-negative axes of a and b."""
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > a_ndim or n > b_ndim:
            raise ValueError(f"tensordot: cannot sum over {n} axes of {a_ndim}-d and {b_ndim}-d tensors")
        return tuple(range(a_ndim - n, a_ndim)), tuple(range(n))
    try:
        a_axes, b_axes = axes
    except (TypeError, ValueError):
        raise TypeError(f"tensordot: axes must be an int or a pair of axis lists, got {axes!r}") from None
    a_axes = (a_axes,) if isinstance(a_axes, (int, np.integer)) else tuple(a_axes)
    b_axes = (b_axes,) if isinstance(b_axes, (int, np.integer)) else tuple(b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"tensordot: axes lists {a_axes} and {b_axes} differ in length")
    return _check_axes(a_axes, a_ndim, "a"), _check_axes(b_axes, b_ndim, "b")


def _check_axes(axes: Tuple[Any, ...], ndim: int, which: str) -> Tuple[int, ...]:
    out = []
    for ax in axes:
        if not isinstance(ax, (int, np.integer)):
            raise TypeError(f"tensordot: axis {ax!r} of {which} is not an int")
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(f"tensordot: axis {ax} is out of bounds for {which}, a "
                                          f"{ndim}-d tensor")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"tensordot: repeated axis in {axes} of {which}")
    return tuple(out)


class TensorDot(Op):
    """numpy.tensordot(a, b, axes): sum of products over the paired axes of a and b."""

    __props__ = ("axes",)

    def __init__(self, axes: Tuple[Sequence[int], Sequence[int]]):
        self.axes = (tuple(int(i) for i in axes[0]), tuple(int(i) for i in axes[1]))

    def make_node(self, a: Any, b: Any) -> Apply:
        a, b = as_tensor_variable(a), as_tensor_variable(b)
        a_axes, b_axes = self.axes
        if any(i >= a.ndim for i in a_axes) or any(i >= b.ndim for i in b_axes):
            raise ValueError(f"{self}: axes out of range for {a.describe()} and {b.describe()}")
        for i, j in zip(a_axes, b_axes):
            if _lengths_clash(a.type.shape[i], b.type.shape[j]):
                raise ValueError(f"{self}: axis {i} of a has length {a.type.shape[i]} but axis {j} "
                                 f"of b has length {b.type.shape[j]}; inputs {a.describe()} and "
                                 f"{b.describe()}")
        shape = self._free(a.type.shape, a_axes) + self._free(b.type.shape, b_axes)
        return Apply(self, [a, b], [TensorType(product_dtype(a, b), shape)()])

    @staticmethod
    def _free(shape: Sequence[Any], summed: Tuple[int, ...]) -> Tuple[Any, ...]:
        return tuple(s for d, s in enumerate(shape) if d not in summed)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        a, b = inputs
        out[0][0] = _run(self, lambda x, y: np.tensordot(x, y, self.axes), a, b,
                         node.outputs[0].type.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        sa, sb = shapes
        return [self._free(sa, self.axes[0]) + self._free(sb, self.axes[1])]

    @_complex_chain
    def L_op(self, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]) -> List[Variable]:
        """gz contracted with the other operand over its free axes, dimensions put back in order."""
        a, b = inputs
        (gz,) = grads
        a_axes, b_axes = self.axes
        free_a = [d for d in range(a.ndim) if d not in a_axes]
        free_b = [d for d in range(b.ndim) if d not in b_axes]
        na = len(free_a)
        ga = TensorDot((tuple(range(na, gz.ndim)), tuple(free_b)))(gz, b)
        gb = TensorDot((tuple(free_a), tuple(range(na))))(a, gz)
        # ga: free_a then the summed axes in b's order; gb: the summed axes in a's order then free_b
        sb, sa = sorted(b_axes), sorted(a_axes)
        order_a = [free_a.index(d) if d in free_a else na + sb.index(b_axes[a_axes.index(d)])
                   for d in range(a.ndim)]
        order_b = [len(sa) + free_b.index(d) if d in free_b else sa.index(a_axes[b_axes.index(d)])
                   for d in range(b.ndim)]
        return [DimShuffle(a.ndim, order_a)(ga), DimShuffle(b.ndim, order_b)(gb)]

    def R_op(self, inputs: List[Variable], eval_points: List[Optional[Variable]]) -> List[Optional[Variable]]:
        """tensordot(va, b) + tensordot(a, vb)."""
        return [_product_rop(self, inputs, eval_points)]


# ------------------------------------------------------------------------------------------------
# Public helpers
# ------------------------------------------------------------------------------------------------

def dot(a: Any, b: Any) -> TensorVariable:
    """numpy.dot(a, b): Dot for 1-d/2-d operands, a product for scalars, tensordot for higher ranks."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if a.ndim == 0 or b.ndim == 0:
        return mul(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return _dot(a, b)
    return TensorDot(((a.ndim - 1,), (max(b.ndim - 2, 0),)))(a, b)


def matmul(a: Any, b: Any) -> TensorVariable:
    """numpy.matmul(a, b) (the @ operator): batch dimensions broadcast, 1-d operands promoted."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if 1 <= a.ndim <= 2 and 1 <= b.ndim <= 2:
        return _dot(a, b)
    return _matmul(a, b)


def tensordot(a: Any, b: Any, axes: AxesSpec = 2) -> TensorVariable:
    """numpy.tensordot(a, b, axes): axes is an int (last n of a with first n of b) or two axis lists."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    return TensorDot(normalize_tensordot_axes(axes, a.ndim, b.ndim))(a, b)


def outer(a: Any, b: Any) -> TensorVariable:
    """numpy.outer(a, b): the products of every element of a (flattened) with every element of b."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if a.ndim != 1 or b.ndim != 1:
        a, b = flatten(a, 1), flatten(b, 1)
    return mul(a.dimshuffle(0, "x"), b.dimshuffle("x", 0))


__all__ = ["Dot", "Matmul", "TensorDot", "dot", "matmul", "tensordot", "outer"]
