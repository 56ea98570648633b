"""Theano's ``theano.tensor.nlinalg`` (the numpy.linalg half of its linear algebra): aliases of
``graphjit.tensor.linalg``'s functions under Theano's names (matrix_inverse, extract_diag, alloc_diag...)."""

from __future__ import annotations

from functools import reduce
from typing import Any

from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.blas import dot
from graphjit.tensor.linalg.diag import AllocDiag, ExtractDiag, alloc_diag as _alloc_diag, diagonal, trace
from graphjit.tensor.linalg.eigen import QR, SVD, Eig, Eigh, eig, eigh, qr, svd
from graphjit.tensor.linalg.functions import Lstsq, lstsq, matrix_power, norm
from graphjit.tensor.linalg.inverse import Det, Inv, Pinv, SlogDet, det, inv, pinv, slogdet
from graphjit.tensor.variable import TensorVariable

MatrixInverse = Inv
MatrixPinv = Pinv
matrix_inverse = inv


def extract_diag(x: Any) -> TensorVariable:
    """The main diagonal of matrix x (Theano's name; numpy.diagonal)."""
    return diagonal(x)


def alloc_diag(v: Any) -> TensorVariable:
    """The square matrix with vector v on its diagonal (Theano's one-argument form)."""
    v = as_tensor_variable(v)
    n = v.shape[-1]
    return _alloc_diag(v, n, n)


def diag(x: Any) -> TensorVariable:
    """numpy.diag of a vector (a diagonal matrix) or of a matrix (its diagonal), as Theano's nlinalg.diag."""
    x = as_tensor_variable(x)
    if x.ndim == 1:
        return alloc_diag(x)
    if x.ndim == 2:
        return extract_diag(x)
    raise TypeError(f"diag: expected a vector or a matrix, got {x.describe()}")


def matrix_dot(*args: Any) -> TensorVariable:
    """dot(dot(a, b), c)...: the product of the matrices in order (Theano's name)."""
    if not args:
        raise TypeError("matrix_dot needs at least one matrix")
    return reduce(dot, args[1:], as_tensor_variable(args[0]))


__all__ = ["AllocDiag", "Det", "Eig", "Eigh", "ExtractDiag", "Lstsq", "MatrixInverse", "MatrixPinv", "QR", "SVD",
           "SlogDet", "alloc_diag", "det", "diag", "eig", "eigh", "extract_diag", "lstsq", "matrix_dot",
           "matrix_inverse", "matrix_power", "norm", "pinv", "qr", "slogdet", "svd", "trace"]
