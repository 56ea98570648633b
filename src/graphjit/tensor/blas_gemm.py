"""Gemm: ``beta*z + alpha*dot(x, y)`` on matrices (BLAS ?gemm), and its in-place form overwriting z.

Theano's ``gemm_inplace``: the rewrites (tensor/rewriting/update_inplace.py) make a shared variable's update
``W - lr * dot(a, b)`` one in-place Gemm writing into W (``destroy_map={0: [0]}``), so the step costs one pass
of BLAS over W and no temporary product.  float32/float64 only, every operand of one dtype; z has the
product's shape or broadcasts to it (then the result is a fresh array, inplace or not).  LLVM lowering:
link/llvm/ops/blas_gemm.py.
"""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.tensor.blas_vector import BLAS_DTYPES
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.type import TensorType


def _clash(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a != b


class Gemm(Op):
    """z' = beta*z + alpha*dot(x, y) for matrices; inputs (z, alpha, x, y, beta); inplace: written into z."""

    __props__ = ("inplace",)

    def __init__(self, inplace: bool = False):
        self.inplace = bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def __str__(self) -> str:
        return "Gemm{inplace}" if self.inplace else "Gemm{no_inplace}"

    def make_node(self, *inputs: Any) -> Apply:
        """Check and convert (z, alpha, x, y, beta); TypeError/ValueError naming the bad one."""
        if len(inputs) != 5:
            raise TypeError(f"{self}: takes (z, alpha, x, y, beta), got {len(inputs)} inputs")
        z, alpha, x, y, beta = (as_tensor_variable(v) for v in inputs)
        dtype = z.dtype
        for name, v in (("z", z), ("x", x), ("y", y)):
            if v.ndim != 2 or v.dtype != dtype or dtype not in BLAS_DTYPES:
                raise TypeError(f"{self}: {name} must be a float32 or float64 matrix of z's dtype, got "
                                f"{v.describe()}")
        for name, v in (("alpha", alpha), ("beta", beta)):
            if v.ndim != 0 or np.dtype(v.dtype).kind not in "biuf":
                raise TypeError(f"{self}: {name} must be a real 0-d tensor, got {v.describe()}")
        (zm, zn), (xm, xk), (yk, yn) = z.type.shape, x.type.shape, y.type.shape
        if _clash(xk, yk) or _clash(zm, xm) or _clash(zn, yn):
            raise ValueError(f"{self}: shapes z {z.type.shape}, x {x.type.shape}, y {y.type.shape} do not agree")
        shape = (xm if xm is not None else zm if zm != 1 else None,
                 yn if yn is not None else zn if zn != 1 else None)
        return Apply(self, [z, cast(alpha, dtype), x, y, cast(beta, dtype)], [TensorType(dtype, shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        """numpy; z broadcasts to the product's shape; written into z when inplace and z has that shape."""
        z, alpha, x, y, beta = inputs
        shape = (x.shape[0], y.shape[1])
        if x.shape[1] != y.shape[0] or any(s not in (1, t) for s, t in zip(z.shape, shape)):
            raise ValueError(f"{self}: z of shape {z.shape} cannot hold dot(x, y) of x {x.shape} and "
                             f"y {y.shape} (shapes not aligned)")
        product = np.dot(x, y)
        product *= alpha
        if not self.inplace or z.shape != shape:
            out[0][0] = np.asarray(product if beta == 0 else beta * z + product, dtype=z.dtype)
            return
        if beta == 0:                       # BLAS' rule: z is not read (NaN * 0 stays out)
            z[...] = product
        else:
            if beta != 1:
                z *= beta
            z += product
        out[0][0] = z

    def infer_shape(self, fgraph: Any, node: Apply, shapes: List[tuple]) -> List[tuple]:
        return [shapes[0]]


gemm_no_inplace = Gemm(False)
gemm_inplace = Gemm(True)


def gemm(z: Any, alpha: Any, x: Any, y: Any, beta: Any = 1.0) -> Any:
    """beta*z + alpha*dot(x, y) as one (non-inplace) Gemm node; numbers become constants of z's dtype."""
    z = as_tensor_variable(z)
    wrap = lambda v: constant(np.asarray(v, dtype=z.dtype)) if isinstance(v, (int, float)) else v  # noqa: E731
    return gemm_no_inplace(z, wrap(alpha), x, y, wrap(beta))


__all__ = ["Gemm", "gemm", "gemm_inplace", "gemm_no_inplace"]
