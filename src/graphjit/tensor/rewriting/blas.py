"""BLAS specializations: products with a vector become Gemv, outer products and rank-1 updates Ger.

All in the ``specialize`` phase (tags fast_run, specialize, blas), float32/float64 operands of one dtype:

* ``local_dot_to_gemv``: dot(A, x) -> Gemv{N}(1, A, x), dot(x, A) -> Gemv{T}(1, A, x) (a transposed A
  flips the flag instead), dot(column, row) with a static inner length 1 -> Ger without A, a matrix
  product with a static length 1 as B's columns or A's rows -> a Gemv between DimShuffles;
* ``local_gemv_scale``: s * Gemv(...) -> Gemv with alpha (and beta) scaled;
* ``local_gemv_add_y``: y + Gemv(alpha, A, x), b*y + ..., y - ... -> Gemv with y (y broadcasts as in numpy);
* ``local_ger``: A + alpha*outer(x, y) and A - alpha*outer(x, y) -> Ger (outer written as the outer()
  helper does, x[:, None] * y[None, :], with any scalar factors, or a Ger without A);
* ``local_outer_to_ger``: a bare outer product that is materialized anyway (a graph output, or read by
  a non-elementwise op) -> Ger without A. Read by elementwise ops it is left alone: the LLVM linker
  fuses it with them, which beats materializing it.

Inplace: Gemv with y and Ger with A overwrite y / A in the inplace phase when the inplace rules allow it
and that input is provably as big as the result (tensor/rewriting/inplace.py's hook).
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Set, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.scalar import math as ps
from graphjit.tensor import math as tm
from graphjit.tensor.basic import cast, constant
from graphjit.tensor.blas import Dot
from graphjit.tensor.blas_vector import BLAS_DTYPES, Gemv, Ger
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from graphjit.tensor.rewriting.basic import is_elemwise, register_specialize, single_client
from graphjit.tensor.rewriting.inplace import may_overwrite, register_inplace_hook
from graphjit.tensor.type import TensorType

Scalars = List[Variable]


def scalar_of(v: Variable) -> Optional[Variable]:
    """v as a 0-d tensor if it holds one element by its static shape (a DimShuffle of a 0-d tensor, ...)."""
    if not isinstance(v.type, TensorType):
        return None
    if v.type.ndim == 0:
        return v
    if any(s != 1 for s in v.type.shape):
        return None
    if isinstance(v, Constant):
        return constant(np.asarray(v.data).reshape(()))
    if v.owner is not None and isinstance(v.owner.op, DimShuffle) and v.owner.inputs[0].type.ndim == 0:
        return v.owner.inputs[0]
    return DimShuffle(v.type.ndim, ())(v)


def _product(scalars: Scalars, dtype: str) -> Variable:
    """The product of 0-d tensors cast to dtype (1 if there are none; constant 1 factors dropped)."""
    scalars = [s for s in scalars if not (isinstance(s, Constant) and np.all(np.asarray(s.data) == 1))]
    if not scalars:
        return constant(np.asarray(1, dtype=dtype))
    out = cast(scalars[0], dtype)
    for s in scalars[1:]:
        out = tm.mul(out, cast(s, dtype))
    return out


def _blas_dtype(out: Variable, *vs: Variable) -> bool:
    return out.type.dtype in BLAS_DTYPES and all(v.type.dtype == out.type.dtype for v in vs)


def _transposed(a: Variable) -> Optional[Variable]:
    """The matrix a is the transpose of, if a = DimShuffle{1,0}(that)."""
    node = a.owner
    if (node is not None and isinstance(node.op, DimShuffle) and node.op.new_order == (1, 0)
            and node.inputs[0].type.ndim == 2):       # (not a transpose that also drops a length-1 axis)
        return node.inputs[0]
    return None


# ------------------------------------------------------------------------------------------------
# Dot -> Gemv / Ger
# ------------------------------------------------------------------------------------------------

def _gemv_of(a: Variable, x: Variable, trans: bool) -> Variable:
    one = constant(np.asarray(1, dtype=a.type.dtype))
    inner = _transposed(a)
    if inner is not None:
        return Gemv(not trans)(one, inner, x)
    return Gemv(trans)(one, a, x)


@node_rewriter([Dot])
def local_dot_to_gemv(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """dot(A, x) -> Gemv{N}, dot(x, A) -> Gemv{T}, dot(column, row) (inner length 1) -> Ger without A."""
    a, b = node.inputs
    out = node.outputs[0]
    if not _blas_dtype(out, a, b):
        return None
    if a.type.ndim == 2 and b.type.ndim == 1:
        new = _gemv_of(a, b, False)
    elif a.type.ndim == 1 and b.type.ndim == 2:
        new = _gemv_of(b, a, True)
    elif a.type.ndim == 2 and b.type.ndim == 2:
        new = _ger_of(a, b)
        new = _one_wide_gemv(a, b) if new is None else new
        if new is None:
            return None
    else:
        return None
    return [new] if out.type.is_super(new.type) else None


def _ger_of(a: Variable, b: Variable) -> Optional[Variable]:
    """dot(column, row) with a static inner length 1 as a Ger without A."""
    if a.type.shape[1] != 1 or b.type.shape[0] != 1:
        return None
    col, row = _column_or_row(a), _column_or_row(b)
    if col is None or row is None or col[0] != "col" or row[0] != "row":
        return None
    return Ger(with_a=False)(constant(np.asarray(1, dtype=a.type.dtype)), col[1], row[1])


def _one_wide_gemv(a: Variable, b: Variable) -> Optional[Variable]:
    """dot(A, B) with B statically one column wide (or A one row high), as a matrix-vector product:
    Gemv{N}(A, B[:, 0])[:, None] (Gemv{T}(B, A[0, :])[None, :]), not a matrix product with n = 1."""
    if b.type.shape[1] == 1:
        return DimShuffle(1, (0, "x"))(_gemv_of(a, _as_vector(b, "col", (0,)), False))
    if a.type.shape[0] == 1:
        return DimShuffle(1, ("x", 0))(_gemv_of(b, _as_vector(a, "row", (1,)), True))
    return None


def _as_vector(m: Variable, kind: str, keep: Tuple[int]) -> Variable:
    """A one-column (one-row) matrix as a vector: the vector it was made from (x[:, None]), else m's DimShuffle."""
    found = _column_or_row(m)
    return found[1] if found is not None and found[0] == kind else DimShuffle(2, keep)(m)


# ------------------------------------------------------------------------------------------------
# Gemv: scaling and accumulation into y
# ------------------------------------------------------------------------------------------------

def _owned_by(fgraph: FunctionGraph, v: Variable, op_type: type) -> Optional[Apply]:
    """v's node if it is a non-inplace op_type node whose only client is the one we rewrite."""
    node = v.owner
    if node is None or not isinstance(node.op, op_type) or node.op.destroy_map:
        return None
    return node if single_client(fgraph, v) else None


def _scaled(fgraph: FunctionGraph, v: Variable) -> Tuple[Scalars, Variable]:
    """(scalar factors, the rest) of v = s1 * ... * rest, through single-client muls of v's dtype."""
    scalars: Scalars = []
    while is_elemwise(v, ps.mul) and single_client(fgraph, v):
        p, q = v.owner.inputs
        sp, sq = scalar_of(p), scalar_of(q)
        if sp is not None and q.type.dtype == v.type.dtype and q.type.ndim == v.type.ndim:
            scalars.append(sp)
            v = q
        elif sq is not None and p.type.dtype == v.type.dtype and p.type.ndim == v.type.ndim:
            scalars.append(sq)
            v = p
        else:
            break
    return scalars, v


@node_rewriter([tm.mul])
def local_gemv_scale(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """s * Gemv(y, alpha, A, x, beta) -> Gemv(y, s*alpha, A, x, s*beta) (also without y)."""
    out = node.outputs[0]
    for g, s in (node.inputs, node.inputs[::-1]):
        gnode = _owned_by(fgraph, g, Gemv)
        s0 = scalar_of(s)
        if gnode is None or s0 is None or out.type.dtype != g.type.dtype or out.type.ndim != 1:
            continue
        y, alpha, a, x, beta = gnode.op.split(gnode.inputs)
        alpha = _product([s0, alpha], g.type.dtype)
        inputs = [alpha, a, x] if not gnode.op.with_y else [y, alpha, a, x, _product([s0, beta], g.type.dtype)]
        new = gnode.op(*inputs)
        return [new] if out.type.is_super(new.type) else None
    return None


@node_rewriter([tm.add, tm.sub])
def local_gemv_add_y(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """y + Gemv(alpha, A, x) -> Gemv(y, alpha, A, x, 1); b*y + ... -> beta b; y - ... -> alpha negated."""
    out = node.outputs[0]
    is_sub = node.op.scalar_op == ps.sub
    pairs = [(0, 1)] if is_sub else [(0, 1), (1, 0)]
    for iy, ig in pairs:
        y, g = node.inputs[iy], node.inputs[ig]
        gnode = _owned_by(fgraph, g, Gemv)
        if gnode is None or gnode.op.with_y or y.type.ndim != 1 or not _blas_dtype(out, y, g):
            continue
        _, alpha, a, x, _ = gnode.op.split(gnode.inputs)
        betas, y = _scaled(fgraph, y)
        if y.type.ndim != 1 or y.type.dtype != out.type.dtype:
            continue
        if is_sub:
            alpha = tm.neg(alpha)
        new = Gemv(gnode.op.trans, with_y=True)(y, alpha, a, x, _product(betas, out.type.dtype))
        return [new] if out.type.is_super(new.type) else None
    return None


# ------------------------------------------------------------------------------------------------
# Ger
# ------------------------------------------------------------------------------------------------

def _column_or_row(v: Variable) -> Optional[Tuple[str, Variable]]:
    """('col', x) for x[:, None], ('row', y) for y[None, :] (DimShuffles or static length-1 matrices)."""
    if not isinstance(v.type, TensorType) or v.type.ndim != 2:
        return None
    node = v.owner
    if node is not None and isinstance(node.op, DimShuffle) and node.inputs[0].type.ndim == 1:
        if node.op.new_order == (0, "x"):
            return "col", node.inputs[0]
        if node.op.new_order == ("x", 0):
            return "row", node.inputs[0]
    rows, cols = v.type.shape
    if cols == 1 and rows != 1:
        return "col", DimShuffle(2, (0,))(v)
    if rows == 1 and cols != 1:
        return "row", DimShuffle(2, (1,))(v)
    return None


def _mul_leaves(fgraph: FunctionGraph, v: Variable, dtype: str, root: bool) -> List[Variable]:
    """The factors of a tree of muls computing in dtype (inner muls with no other client)."""
    if is_elemwise(v, ps.mul) and v.type.dtype == dtype and (root or single_client(fgraph, v)):
        return [leaf for i in v.owner.inputs for leaf in _mul_leaves(fgraph, i, dtype, False)]
    return [v]


def outer_term(fgraph: FunctionGraph, v: Variable, root: bool = False
               ) -> Optional[Tuple[Variable, Variable, Variable]]:
    """(alpha, x, y) if v = alpha * outer(x, y) (scalar factors anywhere in a mul tree), else None.

    root=True: v itself may have other clients (it is the node being replaced).
    """
    gnode = None if root else _owned_by(fgraph, v, Ger)
    if gnode is not None and not gnode.op.with_a:
        alpha, x, y = gnode.inputs
        return alpha, x, y
    if not is_elemwise(v, ps.mul) or (not root and not single_client(fgraph, v)):
        return None
    parts: dict = {"col": [], "row": []}
    scalars: Scalars = []
    for leaf in _mul_leaves(fgraph, v, v.type.dtype, True):
        s = scalar_of(leaf)
        kind = None if s is not None else _column_or_row(leaf)
        if s is not None:
            scalars.append(s)
        elif kind is not None:
            parts[kind[0]].append(kind[1])
        else:
            return None
    if len(parts["col"]) != 1 or len(parts["row"]) != 1:
        return None
    x, y = parts["col"][0], parts["row"][0]
    if not _blas_dtype(v, x, y):
        return None
    return _product(scalars, v.type.dtype), x, y


@node_rewriter([tm.add, tm.sub])
def local_ger(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """A + alpha*outer(x, y) -> Ger(A, alpha, x, y); A - alpha*outer(x, y) -> Ger(A, -alpha, x, y)."""
    out = node.outputs[0]
    is_sub = node.op.scalar_op == ps.sub
    if out.type.ndim != 2 or out.type.dtype not in BLAS_DTYPES:
        return None
    for ia, it in ([(0, 1)] if is_sub else [(0, 1), (1, 0)]):
        a, t = node.inputs[ia], node.inputs[it]
        term = outer_term(fgraph, t)
        if term is None or a.type.ndim != 2 or a.type.dtype != out.type.dtype:
            continue
        alpha, x, y = term
        new = Ger()(a, tm.neg(alpha) if is_sub else alpha, x, y)
        return [new] if out.type.is_super(new.type) else None
    return None


def _fusable_client(node: object) -> bool:
    return isinstance(node, Apply) and isinstance(node.op, (Elemwise, CAReduce, DimShuffle))


@node_rewriter([tm.mul])
def local_outer_to_ger(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """alpha * outer(x, y) materialized anyway (an output, or read by non-elementwise ops) -> Ger without A."""
    out = node.outputs[0]
    if out.type.ndim != 2 or any(_fusable_client(c) for c, _ in fgraph.clients.get(out, ())):
        return None
    term = outer_term(fgraph, out, root=True)
    if term is None:
        return None
    new = Ger(with_a=False)(*term)
    return [new] if out.type.is_super(new.type) else None


for _rw in (local_dot_to_gemv, local_gemv_scale, local_gemv_add_y, local_ger, local_outer_to_ger):
    register_specialize(_rw, "blas")


# ------------------------------------------------------------------------------------------------
# Inplace versions (called by the inplace phase)
# ------------------------------------------------------------------------------------------------

def _same_length(fgraph: FunctionGraph, a: Variable, da: int, b: Variable, db: int) -> bool:
    if a.type.shape[da] is not None and a.type.shape[da] == b.type.shape[db]:
        return True
    feature = getattr(fgraph, "shape_feature", None)
    return feature is not None and feature.same_shape(a, b, da, db)


def _covers(fgraph: FunctionGraph, target: Variable, dim: int, other: Variable, odim: int) -> bool:
    """target's length in dim is provably the broadcast of it with other's length in odim."""
    return other.type.shape[odim] == 1 or _same_length(fgraph, target, dim, other, odim)


def blas_inplace_version(fgraph: FunctionGraph, node: Apply, protected: Set[Variable]) -> Optional[Variable]:
    """The output of Gemv-with-y / Ger-with-A overwriting y / A, when that is safe."""
    op = node.op
    if isinstance(op, Gemv) and op.with_y and not op.inplace:
        y, _, a, _, _ = op.split(node.inputs)
        ok = _covers(fgraph, y, 0, a, 1 if op.trans else 0)
        new_op: Optional[object] = Gemv(op.trans, True, True) if ok else None
    elif isinstance(op, Ger) and op.with_a and not op.inplace:
        a, _, x, y = op.split(node.inputs)
        ok = _covers(fgraph, a, 0, x, 0) and _covers(fgraph, a, 1, y, 0)
        new_op = Ger(True, True) if ok else None
    else:
        return None
    target = node.inputs[0]
    if new_op is None or target.type != node.outputs[0].type or not may_overwrite(fgraph, node, target, protected):
        return None
    return new_op(*node.inputs)  # type: ignore[operator]


register_inplace_hook(blas_inplace_version)


__all__: Sequence[str] = ["local_dot_to_gemv", "local_gemv_scale", "local_gemv_add_y", "local_ger",
                          "local_outer_to_ger", "outer_term", "scalar_of", "blas_inplace_version"]
