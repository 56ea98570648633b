"""A recurrent output that only accumulates per-step terms becomes per-step outputs reduced after the loop.

A state ``acc`` of taps [-1], kept as its last state only (``out[-1]``, or a gradient's running sum), whose previous
value feeds nothing but its own update

* ``acc + f_t`` (any number of terms), ``acc - f_t``, ``acc * f_t``  -> the loop stores ``f_t`` per step (a
  nit-sot output) and the final value is ``init + sum(F, axis=0)`` (``init - ...``, ``init * prod(F, axis=0)``);
* ``Ger(acc, alpha, x_t, y_t)`` (``acc + alpha*outer(x_t, y_t)``: the BPTT gradient of a matrix non-sequence,
  ``acc += outer(d_t, h_{t-1})``) -> the loop stores ``x_t`` and ``y_t`` and the final value is
  ``init + alpha * dot(X.T, Y)``: one matrix product after the loop instead of a read-modify-write of the whole
  matrix every step.

A factor that is a sequence's row is read from the sequence itself (its first n_steps rows, checked), so a loop
left with nothing else to compute goes away.
``f_t`` may depend on anything the step computes (sequences, other states, non-sequences), not on ``acc``. The
stacks cost ``n_steps`` rows; sums are taken in the state's dtype (the order of the additions changes: results
agree with the loop to rounding). The final value keeps the loop's semantics at the edges: no step gives
``init`` (the stacked terms of no step have unknown lengths 0, so an ``ifelse`` picks ``init``), and a state
whose static shape does not rule out broadcasting is checked to keep its shape (``alloc`` to ``init``'s
shape, a ValueError as the loop's "a recurrent output keeps its shape").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.ifelse import ifelse
from graphjit.scalar import math as smath
from graphjit.scan_module.info import KEEP_ALL, KEEP_LAST, KEEP_LAST_OR_EMPTY
from graphjit.scan_module.op import Scan
from graphjit.scan_module.parts import Parts, sequence_rows
from graphjit.graph.rewriting.basic import replace_pairs
from graphjit.tensor.alloc import alloc
from graphjit.tensor.basic import cast
from graphjit.tensor.blas import dot
from graphjit.tensor.blas_vector import Ger
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.math import add, gt, minimum, mul, prod as tprod, sub, sum as tsum
from graphjit.tensor.shape import shape_i

_ELEMWISE = {id(smath.add): "add", id(smath.sub): "sub", id(smath.mul): "mul"}


@dataclass
class _Fold:
    """How recurrent output k accumulates: kind ("add", "sub", "mul", "ger") and the per-step factors."""

    k: int
    kind: str
    factors: List[Variable]          # inner variables stacked per step (one term; x and y for "ger")
    alpha: Optional[Variable]        # "ger": a constant alpha applied after the loop (None: folded into x)


def _single_use(fgraph: FunctionGraph, var: Variable, node: Apply) -> bool:
    """var is read once, by node (and is not an output of the inner graph)."""
    clients = fgraph.clients.get(var) or []
    return len(clients) == 1 and clients[0][0] is node


def _fold_of(op: Scan, k: int) -> Optional[_Fold]:
    """The accumulation recurrent output k does, if it does nothing else (see the module doc)."""
    info, fg = op.info, op.fgraph
    if info.rec_taps[k] != (-1,) or info.keep_of(k) not in (KEEP_LAST, KEEP_LAST_OR_EMPTY):
        return None
    prev, out = op.inner_inputs[info.inner_tap_inputs(k)[0]], op.inner_outputs[k]
    node = out.owner
    if node is None or getattr(node.op, "destroy_map", None) or out.type.dtype != prev.type.dtype:
        return None
    if not _single_use(fg, prev, node) or [c for c in fg.clients.get(out) or []] != [("output", k)]:
        return None
    if isinstance(node.op, Elemwise) and id(node.op.scalar_op) in _ELEMWISE and len(node.outputs) == 1:
        kind = _ELEMWISE[id(node.op.scalar_op)]
        others = [v for v in node.inputs if v is not prev]
        if len(others) != len(node.inputs) - 1 or not others or (kind == "sub" and node.inputs[0] is not prev):
            return None
        if kind != "add" and len(others) != 1:
            return None
        term = others[0] if len(others) == 1 else add(*others)
        return _Fold(k, kind, [term], None)
    if isinstance(node.op, Ger) and node.op.with_a and node.inputs[0] is prev:
        _, alpha, x, y = node.inputs
        if isinstance(alpha, Constant):
            return _Fold(k, "ger", [x, y], alpha)
        return _Fold(k, "ger", [alpha * x, y], None)
    return None


def _final(fold: _Fold, init: Variable, stacks: List[Variable], dtype: str) -> Variable:
    """The state after the loop from its initial value and the stacked per-step factors."""
    if fold.kind == "ger":
        xs, ys = stacks
        total = dot(xs.T, ys)
        if fold.alpha is not None and not _is_one(fold.alpha):
            total = total * fold.alpha
        return cast(init + total, dtype)
    stack = cast(stacks[0], dtype)
    if fold.kind == "mul":
        return cast(mul(init, tprod(stack, axis=0)), dtype)
    total = tsum(stack, axis=0)
    return cast(add(init, total) if fold.kind == "add" else sub(init, total), dtype)


def _is_one(v: Variable) -> bool:
    """v is a constant 1 (a factor not worth multiplying by)."""
    try:
        return bool((v.data == 1).all())
    except AttributeError:
        return False


def _keeps_shape(init: Variable, value: Variable) -> Variable:
    """value, checked at run time to have init's shape where the static types cannot tell (the loop raises
    when a state's shape changes; a broadcast after the loop would not)."""
    risky = any(s in (None, 1) and v != 1 for s, v in zip(init.type.shape, value.type.shape))
    return alloc(value, *[shape_i(init, d) for d in range(init.type.ndim)]) if risky else value


def _split(parts: Parts, fold: _Fold, n: Variable) -> Tuple[Tuple, List[object]]:
    """Take recurrent output fold.k out of parts; per factor, its stack read from a sequence, or the position of
    the per-step output added for it among the nit-sot outputs."""
    rec = parts.recs.pop(fold.k)
    seq_of = {inner: outer for outer, inner in parts.seqs}
    where: List[object] = []
    for f in fold.factors:
        if f in seq_of:
            where.append(sequence_rows(seq_of[f], n))
        else:
            parts.nits.append((f, None, KEEP_ALL))
            where.append(len(parts.nits) - 1)
    return rec, where


def to_per_step(fgraph: FunctionGraph, node: Apply) -> bool:
    """Rewrite the first accumulating recurrent output of node (the module doc); True if one was."""
    op = node.op
    if op.info.as_while:
        return False
    for k in range(op.info.n_rec):
        fold = _fold_of(op, k)
        if fold is not None and fgraph.clients.get(node.outputs[k]):
            return _apply(fgraph, node, fold)
    return False


def _apply(fgraph: FunctionGraph, node: Apply, fold: _Fold) -> bool:
    """Rebuild node without recurrent output fold.k, its factors stacked per step, and put the reduction after
    the loop in place of that output."""
    parts = Parts.of(node)
    n = node.inputs[0]
    (init, _, _, _, old, keep), where = _split(parts, fold, n)
    pairs = []
    if parts.recs or parts.nits or parts.shared:
        new_node, olds = parts.build()
        pairs = [(o, v) for o, v in zip(olds, new_node.outputs) if o is not None and fgraph.clients.get(o)]
        where = [new_node.outputs[len(parts.recs) + w] if isinstance(w, int) else w for w in where]
    dtype = old.type.dtype
    value = _keeps_shape(init, _final(fold, init, where, dtype))
    if any(None in s.type.shape[1:] for s in where):      # no step: unknown stacked lengths are 0, not init's
        value = ifelse(gt(n, 0), value, cast(init, dtype))
    value = value[None] if keep == KEEP_LAST else value[None][:minimum(n, 1)]
    value = old.type.convert_variable(value)
    if value is None:
        return False
    return replace_pairs(fgraph, pairs + [(old, value)], "scan_accumulate_per_step")


__all__ = ["to_per_step"]
