"""The diagonal of a batch of matrices (ExtractDiag, a view) and its adjoint (AllocDiag), plus trace."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.math import minimum, sum as tsum
from graphjit.tensor.variable import TensorVariable

from graphjit.tensor.linalg._common import LinalgOp, matrix_type


def _min_len(n: Any, m: Any) -> Any:
    return None if n is None or m is None else min(n, m)


class ExtractDiag(LinalgOp):
    """numpy.linalg.diagonal: the main diagonals of the matrices in the last two axes (a view)."""

    view_map = {0: [0]}

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if x.ndim < 2:
            raise TypeError(f"{self}: input x must have at least 2 dimensions, got {x.describe()}")
        shape = x.type.shape[:-2] + (_min_len(*x.type.shape[-2:]),)
        return Apply(self, [x], [matrix_type(x.type.dtype, shape, ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        out[0][0] = np.diagonal(inputs[0], axis1=-2, axis2=-1)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        s = shapes[0]
        return [tuple(s[:-2]) + (minimum(s[-2], s[-1]),)]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The output gradient placed back on the diagonal (tagged diag_of for Cholesky's gradient)."""
        x, (g,) = inputs[0], grads
        shp = x.shape
        return [alloc_diag(g, shp[x.ndim - 2], shp[x.ndim - 1])]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The diagonal of the tangent."""
        return [None if eval_points[0] is None else self(eval_points[0])]


class AllocDiag(LinalgOp):
    """A batch of n x m zero matrices with v (..., min(n, m)) on the main diagonal."""

    def make_node(self, v: Any, n: Any, m: Any) -> Apply:
        v = as_tensor_variable(v)
        n, m = (cast(as_tensor_variable(s), "int64") for s in (n, m))
        if v.ndim < 1 or n.ndim or m.ndim:
            raise TypeError(f"{self}: takes a tensor of >= 1 dims and two scalar lengths, got {v.describe()}")
        return Apply(self, [v, n, m], [matrix_type(v.type.dtype, v.type.shape[:-1], (None, None))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        v, n, m = inputs
        n, m = int(n), int(m)
        if v.shape[-1] != min(n, m):
            raise ValueError(f"{self}: diagonal of length {v.shape[-1]} does not fit a {n} x {m} matrix")
        z = np.zeros(v.shape[:-1] + (n, m), v.dtype)
        np.einsum("...ii->...i", z[..., :min(n, m), :min(n, m)])[...] = v
        out[0][0] = z

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(shapes[0][:-1]) + (node.inputs[1], node.inputs[2])]

    def connection_pattern(self, node: Apply) -> list:
        return [[True], [False], [False]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The diagonal of the output gradient."""
        return [extract_diag(grads[0]), None, None]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The tangent on the diagonal."""
        v = eval_points[0]
        return [None if v is None else self(v, inputs[1], inputs[2])]


extract_diag = ExtractDiag()
_alloc_diag = AllocDiag()


def alloc_diag(v: Any, n: Any, m: Any) -> TensorVariable:
    """n x m matrices with v on the diagonal; the result's tag.diag_of is v (Cholesky's gradient reads it)."""
    out = _alloc_diag(v, n, m)
    out.tag["diag_of"] = out.owner.inputs[0]
    return out


def diagonal(x: Any) -> TensorVariable:
    """numpy.linalg.diagonal(x): the main diagonal of each matrix in the last two axes."""
    return extract_diag(x)


def trace(x: Any) -> TensorVariable:
    """numpy.linalg.trace(x): the sum of each matrix's main diagonal (last two axes)."""
    return tsum(extract_diag(x), axis=-1)
