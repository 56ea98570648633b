"""Theano's ``theano.tensor.slinalg`` (the scipy.linalg half of its linear algebra): aliases of
``graphjit.tensor.linalg``'s functions, plus Theano's triangular and symmetric solve names."""

from __future__ import annotations

from typing import Any

from graphjit.tensor.linalg.eigen import eigvalsh as _eigvalsh
from graphjit.tensor.linalg.cholesky import Cholesky, ChoSolve, cho_factor, cho_solve, cholesky
from graphjit.tensor.linalg.functions import Expm, expm, kron
from graphjit.tensor.linalg.lu import lu, lu_factor, lu_solve
from graphjit.tensor.linalg.solve import Solve, SolveTriangular, solve, solve_triangular
from graphjit.tensor.variable import TensorVariable


def solve_lower_triangular(a: Any, b: Any) -> TensorVariable:
    """x with a @ x = b, a lower triangular (Theano's name)."""
    return solve_triangular(a, b, lower=True)


def solve_upper_triangular(a: Any, b: Any) -> TensorVariable:
    """x with a @ x = b, a upper triangular (Theano's name)."""
    return solve_triangular(a, b, lower=False)


def solve_symmetric(a: Any, b: Any) -> TensorVariable:
    """x with a @ x = b, a symmetric (its upper triangle is read, as scipy's solve(assume_a="sym"); Theano's name)."""
    return solve(a, b, assume_a="sym")


def eigvalsh(a: Any, b: Any, lower: bool = True) -> TensorVariable:
    """The ascending eigenvalues of the generalized problem a v = w b v (Theano's slinalg.eigvalsh)."""
    return _eigvalsh(a, b, lower=lower)


__all__ = ["Cholesky", "ChoSolve", "Expm", "Solve", "SolveTriangular", "cholesky", "cho_factor", "cho_solve",
           "eigvalsh", "expm", "kron", "lu", "lu_factor", "lu_solve", "solve", "solve_triangular", "solve_lower_triangular",
           "solve_upper_triangular", "solve_symmetric"]
