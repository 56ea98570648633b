"""numpy.einsum built from existing ops: diagonals, then pairwise contractions (matmul where they are matrix
products, multiply-and-sum otherwise), so every step is native and has a gradient."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.blas import matmul
from graphjit.tensor.einsum_path import Label, Term, contraction_path, interleaved, parse_subscripts
from graphjit.tensor.join import stack
from graphjit.tensor.linalg.diag import extract_diag
from graphjit.tensor.elemwise_grad import SumToShape
from graphjit.tensor.math import eq, mul, or_, sum as tsum, switch
from graphjit.tensor.shape import reshape, shape_i
from graphjit.tensor.shape_base import MatchShape
from graphjit.tensor.variable import TensorVariable

Operand = Tuple[TensorVariable, Term]
_VIEW_DIAG_DTYPES = ("float32", "float64", "int32", "int64")   # ExtractDiag's native dtypes (a view)


def _permute(x: TensorVariable, labels: Term, order: Sequence[Label]) -> TensorVariable:
    """x's axes in order (labels x lacks become broadcast axes)."""
    pattern = [labels.index(lab) if lab in labels else "x" for lab in order]
    return x if pattern == list(range(x.ndim)) else x.dimshuffle(*pattern)


def _static_lengths(operands: Sequence[Operand]) -> Dict[Label, int]:
    """Each label's static length, numpy's broadcast of them; ValueError when they clash."""
    found: Dict[Label, int] = {}
    for k, (x, labels) in enumerate(operands):
        for lab, n in zip(labels, x.type.shape):
            if n is None or n == 1:
                continue
            if found.get(lab, n) != n:
                raise ValueError(f"einsum: operands could not be broadcast together: subscript {_name(lab)} "
                                 f"has length {found[lab]} and {n} (operand {k}, {x.describe()})")
            found[lab] = n
    return found


def _name(label: Label) -> str:
    return repr(label) if isinstance(label, str) else f"'...' dimension {label}"


def _diagonal(x: TensorVariable, labels: Term, k: int) -> Operand:
    """x's diagonals over every repeated label (numpy: their lengths must be equal, no broadcasting)."""
    while len(set(labels)) < len(labels):
        lab = next(lab for lab in labels if labels.count(lab) > 1)
        p = labels.index(lab)
        q = labels.index(lab, p + 1)
        x = _check_square(x, p, q, lab, k)
        rest = [d for d in range(x.ndim) if d not in (p, q)]
        x = x.dimshuffle(*rest, p, q)
        if x.dtype in _VIEW_DIAG_DTYPES:
            x = extract_diag(x)
        else:                               # elements 0, n + 1, 2n + 2... of the flattened n x n pair
            n = shape_i(x, x.ndim - 1)
            flat = reshape(x, [shape_i(x, d) for d in range(x.ndim - 2)] + [-1])
            x = flat[(slice(None),) * (x.ndim - 2) + (slice(None, None, n + 1),)]
        labels = tuple(labels[d] for d in rest) + (lab,)
    return x, labels


def _check_square(x: TensorVariable, p: int, q: int, lab: Label, k: int) -> TensorVariable:
    """x, its axes p and q checked equal in length (now when static, else at run time)."""
    np_, nq = x.type.shape[p], x.type.shape[q]
    if np_ is not None and nq is not None:
        if np_ != nq:
            raise ValueError(f"einsum: dimensions in operand {k} for collapsing subscript {_name(lab)} don't "
                             f"match ({np_} != {nq})")
        return x
    want = [shape_i(x, p) if d == q else shape_i(x, d) for d in range(x.ndim)]
    names = (f"einsum's operand {k}", f"its diagonal over subscript {_name(lab)} (axes {p} and {q})")
    return MatchShape(names)(x, stack(want))


def _drop_broadcast(operands: List[Operand]) -> List[Operand]:
    """Drop statically length-1 axes whose label another operand also has (numpy broadcasts them)."""
    out = []
    for k, (x, labels) in enumerate(operands):
        keep = []
        for d, lab in enumerate(labels):
            others = [(y, ls) for j, (y, ls) in enumerate(operands) if j != k and lab in ls]
            longer = any(y.type.shape[ls.index(lab)] != 1 for y, ls in others)
            first = all(j > k for j, (y, ls) in enumerate(operands) if j != k and lab in ls)
            if x.type.shape[d] == 1 and others and (longer or not first):
                continue
            keep.append(d)
        if len(keep) < x.ndim:
            x, labels = x.dimshuffle(*keep), tuple(labels[d] for d in keep)
        out.append((x, labels))
    return out


def _sum_away(x: TensorVariable, labels: Term, needed: set) -> Operand:
    """x summed over the labels nothing else needs."""
    axes = tuple(d for d, lab in enumerate(labels) if lab not in needed)
    if not axes:
        return x, labels
    return tsum(x, axis=axes, dtype=x.dtype), tuple(lab for lab in labels if lab in needed)


def _merge(x: TensorVariable, groups: Sequence[int]) -> TensorVariable:
    """x reshaped so each group of consecutive axes (group sizes given; 0 adds a length-1 axis) is one axis."""
    if all(g == 1 for g in groups):
        return x
    shape, d = [], 0
    for g in groups:
        length = constant(1, dtype="int64")
        for i in range(d, d + g):
            length = shape_i(x, i) if i == d else length * shape_i(x, i)
        shape.append(length)
        d += g
    return reshape(x, shape)


def _contract(a: Operand, b: Operand, needed: set) -> Operand:
    """The contraction of two operands keeping the needed labels: a matrix product when each side keeps a
    label of its own, else a multiply and a sum."""
    (x, la), (y, lb) = a, b
    batch = [lab for lab in la if lab in lb and lab in needed]
    summed = [lab for lab in la if lab in lb and lab not in needed]
    free_a = [lab for lab in la if lab not in lb]
    free_b = [lab for lab in lb if lab not in la]
    if not summed or (not free_a and not free_b):
        order = batch + free_a + free_b + summed
        prod = mul(_permute(x, la, order), _permute(y, lb, order))
        return _sum_away(prod, tuple(order), needed)
    nb = len(batch)
    x = _permute(x, la, batch + free_a + summed)
    y = _permute(y, lb, batch + summed + free_b)
    x, y = _broadcast_summed(x, y, nb + len(free_a), nb, len(summed))
    y = _check_summed(x, y, nb, len(free_a), len(summed))
    if nb == 0 and len(summed) == 1 and len(free_a) <= 1 and len(free_b) <= 1:
        z = matmul(x, y)                    # a Dot: the Gemm/Gemv/Ger rewrites see it
    else:
        xm = _merge(x, [1] * nb + [len(free_a), len(summed)])
        ym = _merge(y, [1] * nb + [len(summed), len(free_b)])
        z = matmul(xm, ym)
        if len(free_a) != 1 or len(free_b) != 1:   # split the merged kept axes again
            z = reshape(z, [shape_i(z, d) for d in range(nb)] +
                        [shape_i(x, d) for d in range(nb, nb + len(free_a))] +
                        [shape_i(y, d) for d in range(y.ndim - len(free_b), y.ndim)])
    return z, tuple(batch + free_a + free_b)


def _broadcast_summed(x: TensorVariable, y: TensorVariable, px: int, py: int, ns: int
                      ) -> Tuple[TensorVariable, TensorVariable]:
    """x and y (summed axes from px and py), each summed over the summed axes whose length is 1 in the other
    at run time: numpy broadcasts them, the matrix product would refuse them.  A view when no length is 1."""
    pairs = [(px + i, py + i) for i in range(ns)
             if x.type.shape[px + i] is None or y.type.shape[py + i] is None]
    if not pairs:
        return x, y
    one = constant(1, dtype="int64")
    either = {dx: or_(eq(shape_i(x, dx), one), eq(shape_i(y, dy), one)) for dx, dy in pairs}
    return _sum_to_one(x, either), \
        _sum_to_one(y, {dy: either[dx] for dx, dy in pairs})


def _sum_to_one(x: TensorVariable, when: Dict[int, Any]) -> TensorVariable:
    """x summed (keeping the axis) over each axis d whose condition when[d] holds at run time."""
    one = constant(1, dtype="int64")
    target = [switch(when[d], one, shape_i(x, d)) if d in when else shape_i(x, d) for d in range(x.ndim)]
    static = tuple(None if d in when else n for d, n in enumerate(x.type.shape))
    return SumToShape(static)(x, stack(target))


def _check_summed(x: TensorVariable, y: TensorVariable, nb: int, nfa: int, ns: int) -> TensorVariable:
    """y, its summed axes checked against x's at run time when several are merged into one (matmul checks
    one itself; merged, lengths (2, 3) and (3, 2) would pass)."""
    xs = x.type.shape[nb + nfa:]
    ys = y.type.shape[nb:nb + ns]
    if ns < 2 or all(p is not None and q is not None for p, q in zip(xs, ys)):
        return y
    want = [shape_i(y, d) for d in range(nb)] + [shape_i(x, nb + nfa + i) for i in range(ns)] + \
        [shape_i(y, d) for d in range(nb + ns, y.ndim)]
    return MatchShape(("einsum: the right operand of a contraction",
                       "the left operand's matching dimension"))(y, stack(want))


def einsum(subscripts: Any, *operands: Any, optimize: Any = "greedy") -> TensorVariable:
    """numpy.einsum(subscripts, *operands) (or numpy's interleaved sublists): implicit or explicit ('->')
    output, '...', repeated subscripts (diagonals); optimize picks the order of the pairwise contractions
    (False, True/'greedy', 'optimal' or a numpy path) and never changes the result beyond rounding."""
    if not isinstance(subscripts, str):
        subscripts, operands = interleaved((subscripts,) + operands)
    xs = [as_tensor_variable(o) for o in operands]
    terms, output = parse_subscripts(subscripts, [x.ndim for x in xs])
    dtype = str(np.result_type(*[np.dtype(x.dtype) for x in xs])) if xs else "float64"
    ops: List[Operand] = list(zip([x if x.dtype == dtype else cast(x, dtype) for x in xs], terms))
    ops = [_diagonal(x, labels, k) for k, (x, labels) in enumerate(ops)]
    sizes = _static_lengths(ops)
    ops = _drop_broadcast(ops)
    ops = [_sum_away(x, labels, _needed(ops, k, output)) for k, (x, labels) in enumerate(ops)]
    for step in contraction_path([labels for _, labels in ops], output, sizes, optimize):
        group = [ops[k] for k in step]
        ops = [op for k, op in enumerate(ops) if k not in step]
        while len(group) > 1:
            rest = ops + group[2:]
            group = [_contract(group[0], group[1], _needed_by(rest, output))] + group[2:]
        ops.append(group[0])
    x, labels = _sum_away(*ops[0], set(output))
    return _permute(x, labels, output)


def _needed(ops: Sequence[Operand], k: int, output: Term) -> set:
    return _needed_by([op for j, op in enumerate(ops) if j != k], output)


def _needed_by(ops: Sequence[Operand], output: Term) -> set:
    needed = set(output)
    for _, labels in ops:
        needed.update(labels)
    return needed


__all__ = ["einsum"]
