"""Length proofs: what the graph proves about the lengths of its tensors, so that fused loops skip re-checking them.

Every dimension of every native tensor of the entry gets a *term*:

* an ``int``: the length is that constant (a static length of its Type, a constant's data, a ``SpecifyShape``, or
  what the ShapeFeature inferred as a constant when the rewriting attached one);
* an opaque tuple: one unknown length (a graph input's dimension, a computed value no rule below covers);
* a ``frozenset`` of such terms: numpy's broadcast of those lengths, *which an earlier check found compatible*
  (every member is 1 or one common length).  An Elemwise's output gets the union of its operands' terms; a
  DimShuffle permutes its input's (a new axis is 1); a CAReduce drops the reduced ones.

A term is a fact about a value once its producer has run (checks included), and it is read only where that value is
read, so a value computed in a branch proves nothing elsewhere.  What the loops use (loops/nest.py's
``broadcast_shape``): an operand whose term's members are all members of the running loop length's term broadcasts
with it by construction, and the loop keeps its length; the checks that remain compare lengths nothing proves
compatible, which always includes two different graph inputs (DESIGN.md section 6: the inputs are checked).  An
``int`` term is also the loop's constant trip count.

Outputs of nodes that call back into Python are opaque, static lengths included (a ``perform`` is not trusted to
return what its Type or ``infer_shape`` says); a value computed from them is checked against them as usual.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise, normalize_axis
from graphjit.tensor.shape import Shape_i, SpecifyShape
from graphjit.tensor.type import TensorType

Term = Any                 # int | tuple (opaque) | frozenset (a proven-compatible broadcast)
MAX_MEMBERS = 16           # a broadcast term with more members becomes opaque (bounded work in long chains)


def members(term: Term) -> frozenset:
    """The lengths term is the broadcast of (1 contributes nothing)."""
    if isinstance(term, frozenset):
        return term
    return frozenset() if term == 1 else frozenset((term,))


def broadcast(terms: Iterable[Term], opaque: Term) -> Term:
    """The term of numpy's broadcast of lengths with these terms (after the check that they are compatible)."""
    found: set = set()
    for t in terms:
        found |= members(t)
    if not found:
        return 1
    if len(found) == 1:
        return next(iter(found))
    if len(found) > MAX_MEMBERS:
        return opaque
    return frozenset(found)


def constant_length(term: Term) -> int | None:
    """The length's value when the term proves it: an int, or a broadcast holding exactly one length other than 1."""
    if isinstance(term, int):
        return term
    if isinstance(term, frozenset):
        ints = {t for t in term if isinstance(t, int)}
        if len(ints) == 1:
            return next(iter(ints))
    return None


def covers(big: Term, small: Term) -> bool:
    """True if a length with term small provably broadcasts with one with term big to big's length."""
    return members(small) <= members(big)


class Lengths:
    """The terms of the native tensors of one FunctionGraph (module doc); built once per entry in toposort order."""

    def __init__(self, fgraph: Any, order: Sequence[Apply], untrusted: Iterable[Apply] = ()) -> None:
        self.terms: dict[Variable, tuple] = {}
        self._feature = getattr(fgraph, "shape_feature", None)
        skip = set(untrusted)
        for k, var in enumerate(fgraph.inputs):
            if isinstance(var.type, TensorType):
                self.terms[var] = tuple(s if s is not None else ("in", k, d) for d, s in enumerate(var.type.shape))
        for i, node in enumerate(order):
            for j, out in enumerate(node.outputs):
                if isinstance(out.type, TensorType):
                    opaque = tuple(("v", i, j, d) for d in range(out.type.ndim))
                    self.terms[out] = opaque if node in skip else self._infer(node, out, opaque)

    def of(self, var: Variable) -> tuple | None:
        """var's terms, one per dimension (None: not a tensor of this graph)."""
        terms = self.terms.get(var)
        if terms is None and isinstance(var, Constant) and isinstance(var.type, TensorType):
            terms = self.terms[var] = tuple(int(s) for s in np.shape(var.data))
        return terms

    def _infer(self, node: Apply, out: Variable, opaque: tuple) -> tuple:
        ins = [self.of(v) for v in node.inputs]
        terms = None
        op = node.op
        if isinstance(op, Elemwise) and all(t is not None and len(t) == out.type.ndim for t in ins):
            terms = tuple(broadcast([t[d] for t in ins], opaque[d]) for d in range(out.type.ndim))
        elif isinstance(op, DimShuffle) and ins[0] is not None:
            terms = tuple(1 if d == "x" else ins[0][d] for d in op.new_order)
        elif isinstance(op, CAReduce) and ins[0] is not None:
            axes = normalize_axis(op.axis, len(ins[0]))
            terms = tuple(t for d, t in enumerate(ins[0]) if d not in axes)
        elif isinstance(op, SpecifyShape) and ins[0] is not None:
            terms = tuple(w if w is not None else t for t, w in zip(ins[0], op.shape))
        if terms is None or len(terms) != out.type.ndim:
            terms = self._from_feature(out, opaque)
        # a static length always wins (the lowering produced that Type); a broadcast keeps its members when
        # they prove more than the constant does
        return tuple(t if s is None or constant_length(t) == s else s for t, s in zip(terms, out.type.shape))

    def _from_feature(self, var: Variable, opaque: tuple) -> tuple:
        """What an attached ShapeFeature proves: constant lengths, and lengths of variables already termed."""
        shape = self._feature.shape_of.get(var) if self._feature is not None else None
        if shape is None or len(shape) != len(opaque):
            return opaque
        out = []
        for s, o in zip(shape, opaque):
            term = o
            if isinstance(s, Constant):
                term = int(np.asarray(s.data))
            elif s.owner is not None and isinstance(s.owner.op, Shape_i) and s.owner.inputs[0] is not var:
                source = self.terms.get(s.owner.inputs[0])
                if source is not None and s.owner.op.i < len(source):
                    term = source[s.owner.op.i]
            out.append(term)
        return tuple(out)
