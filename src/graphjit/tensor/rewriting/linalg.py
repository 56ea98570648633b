"""Linear-algebra rewrites (graphjit.tensor.linalg).

* ``local_inv_product_to_solve`` (stabilize): ``dot/matmul(inv(a), b)`` -> ``solve(a, b)`` (one factorisation
  and two triangular solves instead of an inverse and a product; more accurate too).
* ``local_log_det_to_slogdet`` (stabilize): ``log(det(a))`` -> ``slogdet``'s log|det| (NaN where the
  determinant is negative, as the log of it), ``log(abs(det(a)))`` -> log|det|: no overflow for large matrices.
* ``local_linalg_of_factored`` (specialize): a matrix whose Cholesky factor the graph already computes
  (``cholesky(a)`` raising on a non positive definite a, so a is positive definite wherever the graph runs)
  reuses it: ``solve(a, b)`` -> ``cho_solve``, ``det(a)`` -> ``prod(diag(L))**2``, ``slogdet(a)`` ->
  ``(1, 2 sum(log(diag(L))))``, ``inv(a)`` -> ``L^-T L^-1``; a matrix tagged by ``assume_positive_definite``
  gets its own Cholesky factor the same way, and ``solve(a, b)`` the positive definite solve.
* ``local_linalg_of_triangular`` (specialize): ``solve`` with a Cholesky factor (or a matrix tagged by
  ``assume_triangular``) as a -> ``solve_triangular``; ``det``/``slogdet`` of it -> the product of its diagonal.

* ``local_pinv_to_svd`` (specialize): ``pinv(a)`` -> numpy's formula on ``svd(a, full_matrices=False)``.

Complex matrices: the Cholesky reuse is left out (its det/slogdet/inv forms are written for real factors), and
``log(det(a))`` stays a complex log.

Patterns such as ``cholesky(a @ a.T)`` are left alone (nothing here proves them equal to something cheaper).
"""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.tensor import math as tm
from graphjit.tensor.alloc import ones_like
from graphjit.tensor.blas import Dot, Matmul, matmul
from graphjit.tensor.linalg.cholesky import Cholesky, ChoSolve, chol_inv_diag
from graphjit.tensor.linalg.diag import extract_diag
from graphjit.tensor.linalg._common import mH
from graphjit.tensor.linalg.eigen import SVD, Eigh
from graphjit.tensor.linalg.inverse import Det, Inv, Pinv, SlogDet
from graphjit.tensor.linalg.solve import Solve, SolveTriangular
from graphjit.tensor.rewriting.basic import register_specialize, register_stabilize


def _inv_of(v: Variable) -> Optional[Apply]:
    node = v.owner
    return node if node is not None and isinstance(node.op, Inv) else None


@node_rewriter([Dot, Matmul])
def local_inv_product_to_solve(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """dot(inv(a), b) / matmul(inv(a), b) -> solve(a, b) (b a vector or a batch of matrices)."""
    left, right = node.inputs
    inv = _inv_of(left)
    if inv is None or left.ndim < 2 or right.ndim < 1:
        return None
    if isinstance(node.op, Dot) and (left.ndim != 2 or right.ndim > 2):
        return None
    a = inv.inputs[0]
    out = Solve("gen", 1 if right.ndim == 1 else 2, inv.op.on_error)(a, right)
    if out.type.dtype != node.outputs[0].type.dtype or out.type.ndim != node.outputs[0].type.ndim:
        return None
    return [node.outputs[0].type.filter_variable(out) if out.type != node.outputs[0].type else out]


@node_rewriter([tm.log])
def local_log_det_to_slogdet(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """log(det(a)) -> log|det| (NaN where det < 0); log(abs(det(a))) -> log|det|."""
    (x,) = node.inputs
    through_abs = x.owner is not None and x.owner.op == tm.abs
    det = x.owner.inputs[0].owner if through_abs else x.owner
    if det is None or not isinstance(det.op, Det):
        return None
    if not through_abs and det.inputs[0].type.dtype.startswith("complex"):
        return None                             # the complex log of a complex determinant stays as written
    sign, logabs = SlogDet()(det.inputs[0])
    if through_abs:
        return [logabs]
    nan = np.asarray(np.nan, logabs.type.dtype)
    return [tm.switch(tm.lt(sign, 0), nan, logabs)]


def assume_positive_definite(a: Variable) -> Variable:
    """Tag a (symmetric) matrix as positive definite: rewrites may then factor it with a Cholesky."""
    a.tag["assume"] = "pos"
    return a


def assume_triangular(a: Variable, lower: bool = True) -> Variable:
    """Tag a matrix as lower (or upper) triangular: solve/det of it use the triangular routines."""
    a.tag["assume"] = "lower" if lower else "upper"
    return a


def _factor_of(fgraph: FunctionGraph, a: Variable) -> Optional[Variable]:
    """A lower Cholesky factor of a already in the graph (raising on failure), or one for a tagged matrix."""
    for client, _ in fgraph.clients.get(a, []):
        if (isinstance(client, Apply) and isinstance(client.op, Cholesky) and client.op.lower_tri
                and client.op.on_error == "raise"):
            return client.outputs[0]
    if a.tag.get("assume") == "pos":
        return Cholesky(True)(a)
    return None


def _triangle_of(a: Variable) -> Optional[bool]:
    """True/False if a is known lower/upper triangular (a Cholesky output or a tag), else None."""
    if a.owner is not None and isinstance(a.owner.op, Cholesky):
        return a.owner.op.lower_tri
    tag = a.tag.get("assume")
    return {"lower": True, "upper": False}.get(tag)


def _two_log_diag(l: Variable) -> Variable:
    return tm.mul(tm.sum(tm.log(extract_diag(l)), axis=-1), np.asarray(2, l.type.dtype))


@node_rewriter([Solve, Det, SlogDet, Inv])
def local_linalg_of_factored(fgraph: FunctionGraph, node: Apply) -> Optional[List[Any]]:
    """Reuse (or, for a tagged matrix, make) the Cholesky factor of a positive definite matrix."""
    a = node.inputs[0]
    op = node.op
    if isinstance(op, Solve) and op.on_error != "raise" or a.type.dtype.startswith("complex"):
        return None
    l = _factor_of(fgraph, a)
    if l is None or (isinstance(op, Inv) and op.on_error != "raise"):
        return None
    if isinstance(op, Solve):
        return [ChoSolve(True, op.b_ndim)(l, node.inputs[1])]
    if isinstance(op, Det):
        p = tm.prod(extract_diag(l), axis=-1)
        return [tm.mul(p, p)]
    if isinstance(op, SlogDet):
        logabs = _two_log_diag(l)
        return [ones_like(logabs), logabs]
    return [chol_inv_diag(l, ones_like(extract_diag(l)))]


@node_rewriter([Solve, Det, SlogDet])
def local_linalg_of_triangular(fgraph: FunctionGraph, node: Apply) -> Optional[List[Any]]:
    """solve / det / slogdet of a known triangular matrix by the triangular routines."""
    a = node.inputs[0]
    lower = _triangle_of(a)
    if lower is None:
        return None
    op = node.op
    if isinstance(op, Solve):
        return [SolveTriangular(lower, 0, False, op.b_ndim, op.on_error)(a, node.inputs[1])]
    d = extract_diag(a)
    if isinstance(op, Det):
        return [tm.prod(d, axis=-1)]
    sign = tm.prod(tm.sign(d), axis=-1)
    return [sign, tm.sum(tm.log(tm.abs(d)), axis=-1)]


@node_rewriter([Pinv])
def local_pinv_to_svd(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """pinv(a) -> Vh^T diag(1/s where s > rcond * s_max, else 0) U^T, numpy's own formula on the SVD (which
    the backend lowers natively); hermitian: V diag(1/w where |w| > rcond * max|w|, else 0) V^T on eigh."""
    (a,) = node.inputs
    if node.op.hermitian:
        w, v = Eigh("L")(a)
        s, left, right = w, v, mH(v)
        size = tm.abs(w)
        ends = (size[(Ellipsis, slice(0, 1))], size[(Ellipsis, slice(-1, None))])   # ascending: the extremes
        largest = tm.maximum(*ends)
    else:
        u, s, vh = SVD(False, True)(a)
        left, right, size = mH(vh), mH(u), s
        largest = s[(Ellipsis, slice(0, 1))]              # descending: the first value is the largest
    dtype = s.type.dtype
    rcond = np.asarray(1e-15 if node.op.rcond is None else node.op.rcond, dtype)
    nd = s.ndim
    large = tm.gt(size, tm.mul(largest, rcond))
    one, zero = np.asarray(1, dtype), np.asarray(0, dtype)
    inv_s = tm.switch(large, tm.true_div(one, tm.switch(large, s, one)), zero)
    scaled = tm.mul(inv_s.dimshuffle(*range(nd), "x"), right)
    return [matmul(left, scaled)]


register_stabilize(local_inv_product_to_solve)
register_stabilize(local_log_det_to_slogdet)
register_specialize(local_linalg_of_triangular)
register_specialize(local_linalg_of_factored)
register_specialize(local_pinv_to_svd)
