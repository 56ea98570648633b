"""Inverse, pseudo-inverse and determinants: Inv, Pinv, Det, SlogDet (numpy.linalg semantics, batched)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.tensor.alloc import eye
from graphjit.tensor.math import mul, neg, sub
from graphjit.tensor.variable import TensorVariable

from graphjit.tensor.linalg._common import (LinalgOp, SquareMatrixOp, as_matrix, check_on_error,
                                            check_square, expand_last, holomorphic_grads, matrix_type, mT,
                                            nan_where_failed, no_complex, real_dtype, sym)
from graphjit.tensor.linalg.diag import trace
from graphjit.tensor.linalg.solve import Solve, apply_to


class Inv(SquareMatrixOp):
    """numpy.linalg.inv: LinAlgError for a singular matrix (on_error='nan': that matrix's inverse is NaN)."""

    __props__ = ("on_error",)

    def __init__(self, on_error: str = "raise") -> None:
        self.on_error = check_on_error(on_error)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        check_square(self, a)
        dtype = node.outputs[0].type.dtype
        res = nan_where_failed(self, np.linalg.inv, a, self.on_error, [a.shape[-2:]], [dtype], "singular matrix")[0]
        out[0][0] = res.astype(dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    @holomorphic_grads
    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """-X^T g X^T."""
        (x,), (g,) = outputs, grads
        return [neg(apply_to(apply_to(mT(x), g, 2), mT(x), 2))]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """-X da X."""
        (a,), (da,) = inputs, eval_points
        if da is None:
            return [None]
        x = self(a)
        return [neg(apply_to(apply_to(x, da, 2), x, 2))]


class Det(LinalgOp):
    """numpy.linalg.det: the determinant of each matrix (0 for a singular one)."""

    def make_node(self, a: Any) -> Apply:
        a = as_matrix(self, a)
        return Apply(self, [a], [matrix_type(a.type.dtype, a.type.shape[:-2], ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        check_square(self, a)
        out[0][0] = np.asarray(np.linalg.det(a), dtype=node.outputs[0].type.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(shapes[0][:-2])]

    @holomorphic_grads
    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """g det(a) inv(a)^T."""
        (a,), (d,), (g,) = inputs, outputs, grads
        return [mul(expand_last(mul(g, d), 2), mT(Inv()(a)))]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """det(a) trace(solve(a, da))."""
        (a,), (da,) = inputs, eval_points
        if da is None:
            return [None]
        return [mul(self(a), trace(Solve("gen", 2)(a, da)))]


class SlogDet(LinalgOp):
    """numpy.linalg.slogdet: (sign, log|det|) of each matrix ((0, -inf) for a singular one); for a complex
    matrix the sign is complex (of modulus 1) and log|det| real, as numpy's."""

    def make_node(self, a: Any) -> Apply:
        a = as_matrix(self, a)
        batch = a.type.shape[:-2]
        return Apply(self, [a], [matrix_type(a.type.dtype, batch, ())(),
                                 matrix_type(real_dtype(a.type.dtype), batch, ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        check_square(self, a)
        sign, logdet = np.linalg.slogdet(a)
        out[0][0] = np.asarray(sign, node.outputs[0].type.dtype)
        out[1][0] = np.asarray(logdet, node.outputs[1].type.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(shapes[0][:-2])] * 2

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """g_logdet inv(a)^T (the sign is piecewise constant)."""
        no_complex(self, inputs)
        (a,), (_, g) = inputs, grads
        return [mul(expand_last(g, 2), mT(Inv()(a)))]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """(0, trace(solve(a, da)))."""
        (a,), (da,) = inputs, eval_points
        if da is None:
            return [None, None]
        no_complex(self, inputs, "R_op")
        return [None, trace(Solve("gen", 2)(a, da))]


class Pinv(LinalgOp):
    """numpy.linalg.pinv(a, rcond, hermitian): the Moore-Penrose pseudo-inverse (SVD based; hermitian=True:
    from eigh of a's lower triangle, as numpy)."""

    __props__ = ("rcond", "hermitian")

    def __init__(self, rcond: float | None = None, hermitian: bool = False) -> None:
        self.rcond = None if rcond is None else float(rcond)
        self.hermitian = bool(hermitian)

    def make_node(self, a: Any) -> Apply:
        a = as_matrix(self, a, square=self.hermitian)
        shape = a.type.shape[:-2] + (a.type.shape[-1], a.type.shape[-2])
        return Apply(self, [a], [matrix_type(a.type.dtype, shape, ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        kw = {} if self.rcond is None else {"rcond": self.rcond}
        if self.hermitian:
            check_square(self, a)
        out[0][0] = np.asarray(np.linalg.pinv(a, hermitian=self.hermitian, **kw), dtype=node.outputs[0].type.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        s = shapes[0]
        return [tuple(s[:-2]) + (s[-1], s[-2])]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Golub-Pereyra (constant rank): -X^T g X^T + (I - A X) g^T X X^T + X^T X g^T (I - X A)."""
        no_complex(self, inputs)
        (a,), (x,), (g,) = inputs, outputs, grads
        m, n = a.shape[a.ndim - 2], a.shape[a.ndim - 1]
        mm = apply_to
        im = sub(eye(m, m, 0, a.type.dtype), mm(a, x, 2))
        inn = sub(eye(n, n, 0, a.type.dtype), mm(x, a, 2))
        t1 = neg(mm(mm(mT(x), g, 2), mT(x), 2))
        t2 = mm(mm(im, mT(g), 2), mm(x, mT(x), 2), 2)
        t3 = mm(mm(mm(mT(x), x, 2), mT(g), 2), inn, 2)
        ga = t1 + t2 + t3
        return [sym(ga) if self.hermitian else ga]     # symmetric, as eigh's

    def R_op(self, inputs: list, eval_points: list) -> list:
        """-X da X + X X^T da^T (I - A X) + (I - X A) da^T X^T X."""
        (a,), (da,) = inputs, eval_points
        if da is None:
            return [None]
        no_complex(self, inputs, "R_op")
        x = self(a)
        m, n = a.shape[a.ndim - 2], a.shape[a.ndim - 1]
        mm = apply_to
        im = sub(eye(m, m, 0, a.type.dtype), mm(a, x, 2))
        inn = sub(eye(n, n, 0, a.type.dtype), mm(x, a, 2))
        if self.hermitian:
            da = sym(da)
        return [neg(mm(mm(x, da, 2), x, 2)) + mm(mm(mm(x, mT(x), 2), mT(da), 2), im, 2)
                + mm(mm(inn, mT(da), 2), mm(mT(x), x, 2), 2)]



def inv(a: Any, on_error: str = "raise") -> TensorVariable:
    """numpy.linalg.inv (on_error 'raise': LinAlgError for a singular matrix; 'nan': NaN results)."""
    return Inv(on_error)(a)


def det(a: Any) -> TensorVariable:
    """numpy.linalg.det."""
    return Det()(a)


def slogdet(a: Any) -> tuple:
    """numpy.linalg.slogdet: (sign, logabsdet)."""
    return tuple(SlogDet()(a))


def pinv(a: Any, rcond: float | None = None, hermitian: bool = False) -> TensorVariable:
    """numpy.linalg.pinv (rcond as numpy's; hermitian=True reads a's lower triangle as a symmetric matrix;
    the gradient assumes the rank is locally constant)."""
    return Pinv(rcond, hermitian)(a)

