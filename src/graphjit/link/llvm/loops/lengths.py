"""Length proofs: what the graph proves about the lengths of its tensors, so that fused loops skip re-checking them.

Every dimension of every native tensor of the entry gets a *term*:

* an ``int``: the length is that constant (a static length of its Type, a constant's data, a ``SpecifyShape``, or
  what the ShapeFeature inferred as a constant when the rewriting attached one);
* the term of one of its node's inputs' lengths, when the op's ``infer_shape`` returns that length as it is (a
  softmax keeps its input's lengths, a product takes its operands' outer ones): ``infer_shape`` is called on
  placeholders that refuse arithmetic and comparison, so only a length passed through untouched proves anything;
  a length it returns as a 0-d integer of the graph (an Alloc's or a SumToShape's requested lengths) is that
  value's term: the term of the length it reads (``Shape_i``, an entry of a ``Shape`` or ``MakeVector``), else the
  value itself, so two lengths requested by the same variable are equal;
* an opaque tuple: one unknown length (a graph input's dimension, a computed value no rule below covers);
* a ``frozenset`` of such terms: numpy's broadcast of those lengths, *which an earlier check found compatible*
  (every member is 1 or one common length).  An Elemwise's output gets the union of its operands' terms; a
  DimShuffle permutes its input's (a new axis is 1); a CAReduce drops the reduced ones.

A term is a fact about a value once its producer has run (checks included), and it is read only where that value is
read, so a value computed in a branch proves nothing elsewhere.  What the loops use (loops/loop_shape.py's
``broadcast_shape``): an operand whose term's members are all members of the running loop length's term broadcasts
with it by construction, and the loop keeps its length; the checks that remain compare lengths nothing proves
compatible, which always includes two different graph inputs (DESIGN.md section 6: the inputs are checked).  An
``int`` term is also the loop's constant trip count.

Outputs of nodes that call back into Python are opaque, static lengths included (a ``perform`` is not trusted to
return what its Type or ``infer_shape`` says); a value computed from them is checked against them as usual.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import warnings

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise, normalize_axis
from graphjit.tensor.join import MakeVector
from graphjit.tensor.shape import Shape, Shape_i, SpecifyShape
from graphjit.tensor.subtensor import Subtensor
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
        if terms is None:
            terms = self._from_infer_shape(node, out, ins, opaque)
        if terms is None or len(terms) != out.type.ndim:
            terms = self._from_feature(out, opaque)
        # a static length always wins (the lowering produced that Type); a broadcast keeps its members when
        # they prove more than the constant does
        return tuple(t if s is None or constant_length(t) == s else s for t, s in zip(terms, out.type.shape))

    def _from_infer_shape(self, node: Apply, out: Variable, ins: list, opaque: tuple) -> tuple | None:
        """The lengths node.op.infer_shape passes through from its inputs (placeholders: _Length), else None."""
        infer = getattr(node.op, "infer_shape", None)
        if infer is None or any(t is None for t in ins):
            return None
        shapes = [tuple(_Length(t) for t in terms) for terms in ins]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = infer(None, node, shapes)[node.outputs.index(out)]
            found = list(found)
        except Exception:               # arithmetic or a comparison on a placeholder: nothing proven
            return None
        if len(found) != len(opaque):
            return None
        out_terms = []
        for entry, o in zip(found, opaque):
            if isinstance(entry, _Length):
                out_terms.append(entry.term)
            elif isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
                out_terms.append(int(entry))
            elif isinstance(entry, Variable) and getattr(entry.type, "ndim", None) == 0 \
                    and np.dtype(entry.type.dtype).kind in "iu":
                out_terms.append(self._value_term(entry, o))
            else:
                out_terms.append(o)
        return tuple(out_terms)

    def _value_term(self, var: Variable, opaque: Term, depth: int = 4) -> Term:
        """The term of a length given as a 0-d integer value (an Alloc's, a SumToShape's target): its constant, the
        term of the length it reads (Shape_i, an entry of a Shape or MakeVector), else the value itself (two lengths
        given by the same variable are equal)."""
        if isinstance(var, Constant):
            data = np.asarray(var.data)
            return int(data) if data.ndim == 0 and data.dtype.kind in "iu" and int(data) >= 0 else opaque
        node = var.owner
        if node is not None and depth > 0:
            if isinstance(node.op, Shape_i):
                source = self.terms.get(node.inputs[0])
                if source is not None and node.op.i < len(source):
                    return source[node.op.i]
            elif isinstance(node.op, Subtensor) and len(node.op.idx_list) == 1 \
                    and isinstance(node.op.idx_list[0], (int, np.integer)) and node.inputs[0].owner is not None:
                k, vector = int(node.op.idx_list[0]), node.inputs[0].owner
                if isinstance(vector.op, MakeVector) and 0 <= k < len(vector.inputs):
                    return self._value_term(vector.inputs[k], opaque, depth - 1)
                if isinstance(vector.op, Shape):
                    source = self.terms.get(vector.inputs[0])
                    if source is not None and 0 <= k < len(source):
                        return source[k]
        return ("val", var)

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


class _Length:
    """A length handed to an op's infer_shape: passed through, it is proven; any arithmetic, comparison or truth
    test on it raises (and the op's output proves nothing)."""

    __slots__ = ("term",)

    def __init__(self, term: Term) -> None:
        self.term = term

    def _refuse(self, *args: Any) -> Any:
        raise TypeError("a length placeholder takes no arithmetic or comparison")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __index__ = __int__ = _refuse  # type: ignore
    __hash__ = None  # type: ignore[assignment]
