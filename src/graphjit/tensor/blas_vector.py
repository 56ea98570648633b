"""Matrix-vector BLAS forms: Gemv (beta*y + alpha*op(A)@x) and Ger (A + alpha*outer(x, y)).

Both are float32/float64 only (the BLAS dtypes; every operand has the same dtype, alpha and beta are
cast to it). They keep numpy's semantics of the expression they stand for, broadcasting included:
Gemv's y broadcasts against the product (a length-1 y, or a one-row product), Ger's A against the
outer product. The ``specialize`` rewrites (tensor/rewriting/blas.py) introduce them; they can also be
built directly with ``gemv``/``ger``. LLVM lowering: link/llvm/ops/blas_vector.py (scipy's ?gemv/?ger
for plain layouts, a native loop otherwise).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.blas import Dot, outer
from graphjit.tensor.elemwise import broadcast_static_shape
from graphjit.tensor.math import add, mul
from graphjit.tensor.shape import broadcast_shape_symbolic
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable

BLAS_DTYPES = ("float32", "float64")


def _matrix(op: Op, v: Any, name: str, ndim: int, dtype: Optional[str] = None) -> TensorVariable:
    """v as a float32/float64 tensor of rank ndim (and dtype, if given); TypeError naming it otherwise."""
    v = as_tensor_variable(v)
    what = "matrix" if ndim == 2 else "vector"
    if v.ndim != ndim or v.dtype not in BLAS_DTYPES:
        raise TypeError(f"{op}: {name} must be a float32 or float64 {what}, got {v.describe()}")
    if dtype is not None and v.dtype != dtype:
        raise TypeError(f"{op}: {name} must have the dtype of the other operands ({dtype}), got "
                        f"{v.describe()}; cast it first")
    return v


def _scalar(op: Op, v: Any, name: str, dtype: str) -> TensorVariable:
    """v (a number or a 0-d real tensor) as a 0-d tensor of dtype; TypeError naming it otherwise."""
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return constant(np.asarray(v, dtype=dtype))
    v = as_tensor_variable(v)
    if v.ndim != 0 or np.dtype(v.dtype).kind not in "biuf":
        raise TypeError(f"{op}: {name} must be a real 0-d tensor or a number, got {v.describe()}")
    return cast(v, dtype)


def _clash(x: Optional[int], y: Optional[int]) -> bool:
    return x is not None and y is not None and x != y


def _broadcast(op: Op, a: Sequence[Optional[int]], b: Sequence[Optional[int]], what: str
               ) -> Tuple[Optional[int], ...]:
    try:
        return broadcast_static_shape([tuple(a), tuple(b)], f"{op}: {what}")
    except ValueError as e:
        raise ValueError(str(e)) from None


# ------------------------------------------------------------------------------------------------
# Gemv
# ------------------------------------------------------------------------------------------------

class Gemv(Op):
    """beta*y + alpha*op(A)@x (BLAS ?gemv), op(A) = A.T if trans; without y (with_y=False) alpha*op(A)@x.

    Inputs: (y, alpha, A, x, beta) with y, else (alpha, A, x). y broadcasts against the product as in
    numpy. The inplace form overwrites y (destroy_map) and needs y as long as the result.
    """

    __props__ = ("trans", "with_y", "inplace")

    def __init__(self, trans: bool = False, with_y: bool = False, inplace: bool = False):
        if inplace and not with_y:
            raise ValueError("Gemv: only the form with y can work inplace (it overwrites y)")
        self.trans, self.with_y, self.inplace = bool(trans), bool(with_y), bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def __str__(self) -> str:
        flags = ["T" if self.trans else "N"] + (["y"] if self.with_y else []) + \
            (["inplace"] if self.inplace else [])
        return f"Gemv{{{','.join(flags)}}}"

    def split(self, inputs: Sequence[Any]) -> Tuple[Any, Any, Any, Any, Any]:
        """(y, alpha, A, x, beta) from a node's inputs (y and beta None without y)."""
        if self.with_y:
            y, alpha, a, x, beta = inputs
            return y, alpha, a, x, beta
        alpha, a, x = inputs
        return None, alpha, a, x, None

    def make_node(self, *inputs: Any) -> Apply:
        """Check and convert the inputs (TypeError/ValueError naming the bad one)."""
        want = 5 if self.with_y else 3
        if len(inputs) != want:
            raise TypeError(f"{self}: takes {'(y, alpha, A, x, beta)' if self.with_y else '(alpha, A, x)'}"
                            f", got {len(inputs)} inputs")
        y, alpha, a, x, beta = self.split(inputs)
        a = _matrix(self, a, "A", 2)
        dtype = a.dtype
        x = _matrix(self, x, "x", 1, dtype)
        alpha = _scalar(self, alpha, "alpha", dtype)
        rows, cols = a.type.shape[::-1] if self.trans else a.type.shape
        if _clash(x.type.shape[0], cols):
            raise ValueError(f"{self}: x has {x.type.shape[0]} elements but op(A) has {cols} columns; "
                             f"inputs {a.describe()} and {x.describe()}")
        if not self.with_y:
            return Apply(self, [alpha, a, x], [TensorType(dtype, (rows,))()])
        y = _matrix(self, y, "y", 1, dtype)
        beta = _scalar(self, beta, "beta", dtype)
        shape = _broadcast(self, y.type.shape, (rows,), f"y {y.describe()} and the product op(A)@x")
        return Apply(self, [y, alpha, a, x, beta], [TensorType(dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        """numpy: beta*y + alpha*(op(A) @ x), written into y when inplace."""
        y, alpha, a, x, beta = self.split(inputs)
        op_a = a.T if self.trans else a
        if x.shape[0] != op_a.shape[1]:
            raise ValueError(f"{self}: x has {x.shape[0]} elements but op(A) has {op_a.shape[1]} columns "
                             f"(A has shape {a.shape})")
        dtype = node.outputs[0].type.dtype
        product = alpha * np.dot(op_a, x)
        if not self.with_y:
            out[0][0] = np.asarray(product, dtype=dtype)
            return
        if y.shape[0] not in (1, product.shape[0]) and product.shape[0] != 1:
            raise ValueError(f"{self}: y has {y.shape[0]} elements but op(A) has {product.shape[0]} rows "
                             "(they do not broadcast)")
        result = np.asarray(beta * y + product, dtype=dtype)
        if self.inplace:
            if result.shape != y.shape:
                raise ValueError(f"{self}: y of length {y.shape[0]} cannot hold the result of length "
                                 f"{result.shape[0]}")
            y[...] = result
            result = y
        out[0][0] = result

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        """op(A)'s rows, broadcast with y's length."""
        sy, _, sa, _, _ = self.split(shapes)
        rows = sa[1] if self.trans else sa[0]
        if not self.with_y:
            return [(rows,)]
        a = self.split(node.inputs)[2]
        static_rows = a.type.shape[1 if self.trans else 0]
        return [broadcast_shape_symbolic([tuple(sy), (rows,)], [node.inputs[0].type.shape, (static_rows,)])]

    def grad_expression(self, inputs: Sequence[Variable]) -> Variable:
        """beta*y + alpha*dot(op(A), x) as Dot and Elemwise ops: grad, Lop and Rop differentiate it (broadcast y
        summed back)."""
        y, alpha, a, x, beta = self.split(inputs)
        product = mul(alpha, Dot()(a.T if self.trans else a, x))
        return product if not self.with_y else add(mul(beta, y), product)


# ------------------------------------------------------------------------------------------------
# Ger
# ------------------------------------------------------------------------------------------------

class Ger(Op):
    """A + alpha*outer(x, y) (BLAS ?ger), A broadcast like numpy; without A (with_a=False) alpha*outer(x, y).

    Inputs: (A, alpha, x, y) with A, else (alpha, x, y). The inplace form overwrites A (destroy_map)
    and needs A as big as the result.
    """

    __props__ = ("with_a", "inplace")

    def __init__(self, with_a: bool = True, inplace: bool = False):
        if inplace and not with_a:
            raise ValueError("Ger: only the form with A can work inplace (it overwrites A)")
        self.with_a, self.inplace = bool(with_a), bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def __str__(self) -> str:
        flags = (["A"] if self.with_a else []) + (["inplace"] if self.inplace else [])
        return f"Ger{{{','.join(flags)}}}" if flags else "Ger"

    def split(self, inputs: Sequence[Any]) -> Tuple[Any, Any, Any, Any]:
        """(A, alpha, x, y) from a node's inputs (A None without A)."""
        if self.with_a:
            a, alpha, x, y = inputs
            return a, alpha, x, y
        alpha, x, y = inputs
        return None, alpha, x, y

    def make_node(self, *inputs: Any) -> Apply:
        """Check and convert the inputs (TypeError/ValueError naming the bad one)."""
        want = 4 if self.with_a else 3
        if len(inputs) != want:
            raise TypeError(f"{self}: takes {'(A, alpha, x, y)' if self.with_a else '(alpha, x, y)'}, "
                            f"got {len(inputs)} inputs")
        a, alpha, x, y = self.split(inputs)
        x = _matrix(self, x, "x", 1)
        dtype = x.dtype
        y = _matrix(self, y, "y", 1, dtype)
        alpha = _scalar(self, alpha, "alpha", dtype)
        shape = (x.type.shape[0], y.type.shape[0])
        if not self.with_a:
            return Apply(self, [alpha, x, y], [TensorType(dtype, shape)()])
        a = _matrix(self, a, "A", 2, dtype)
        shape = _broadcast(self, a.type.shape, shape, f"A {a.describe()} and outer(x, y)")
        return Apply(self, [a, alpha, x, y], [TensorType(dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        """numpy: A + alpha*outer(x, y), written into A when inplace."""
        a, alpha, x, y = self.split(inputs)
        dtype = node.outputs[0].type.dtype
        product = alpha * np.multiply.outer(x, y)
        if not self.with_a:
            out[0][0] = np.asarray(product, dtype=dtype)
            return
        try:
            shape = np.broadcast_shapes(a.shape, product.shape)
        except ValueError:
            raise ValueError(f"{self}: A of shape {a.shape} and outer(x, y) of shape {product.shape} do not "
                             "broadcast") from None
        if not self.inplace:
            out[0][0] = np.asarray(a + product, dtype=dtype)
            return
        if shape != a.shape:
            raise ValueError(f"{self}: A of shape {a.shape} cannot hold the result of shape {shape}")
        np.add(a, product, out=a)
        out[0][0] = a

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        """(len(x), len(y)), broadcast with A's shape."""
        sa, _, sx, sy = self.split(shapes)
        shape = (sx[0], sy[0])
        if not self.with_a:
            return [shape]
        a, _, x, y = self.split(node.inputs)
        return [broadcast_shape_symbolic([tuple(sa), shape],
                                         [a.type.shape, (x.type.shape[0], y.type.shape[0])])]

    def grad_expression(self, inputs: Sequence[Variable]) -> Variable:
        """A + alpha*outer(x, y) as Elemwise ops: grad, Lop and Rop differentiate it (broadcast A summed back)."""
        a, alpha, x, y = self.split(inputs)
        product = mul(alpha, outer(x, y))
        return product if not self.with_a else add(a, product)


# ------------------------------------------------------------------------------------------------
# Public helpers
# ------------------------------------------------------------------------------------------------

def gemv(A: Any, x: Any, alpha: Any = 1.0, y: Any = None, beta: Any = 1.0, trans: bool = False
         ) -> TensorVariable:
    """alpha * op(A) @ x + beta * y (y optional, op(A) = A.T if trans) as one Gemv (float32/float64)."""
    if y is None:
        return Gemv(trans)(alpha, A, x)
    return Gemv(trans, with_y=True)(y, alpha, A, x, beta)


def ger(x: Any, y: Any, alpha: Any = 1.0, A: Any = None) -> TensorVariable:
    """A + alpha * outer(x, y) (A optional, broadcast like numpy) as one Ger (float32/float64)."""
    if A is None:
        return Ger(with_a=False)(alpha, x, y)
    return Ger()(A, alpha, x, y)


__all__ = ["Gemv", "Ger", "gemv", "ger"]
