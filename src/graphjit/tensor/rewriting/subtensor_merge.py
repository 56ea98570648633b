"""Merging x[idx1][idx2] into one x[idx] (canonicalize: ``local_subtensor_merge``).

An index is handled as a list of entries: ``("s", start, stop, step)`` a slice, ``("i", i)`` an integer,
``("n",)`` a new axis; a bound or integer is None, a Python int, or a Variable (a symbolic index input).
Each dimension of x[idx1] (a slice of a dimension of x, or a new axis) meets the entry of idx2 for it:

* a full slice on either side keeps the other entry as it is (symbolic ones included);
* constant entries on a dimension of static length n are composed exactly with Python ranges;
* constant entries on a dimension of unknown length are composed only when the result does not
  depend on the length: slices whose bounds count from the start (non-negative, positive steps) or
  from the end (negative, negative steps), then a forward slice, or an integer >= 0 whose element lies
  before the first slice's stop (so the merged index raises IndexError exactly when the pair did), or
  a plain reversal of a unit-step open-ended slice;
* anything else (symbolic bounds, an integer that may be out of range, ...) keeps the two Subtensors.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.tensor.subtensor import SCALAR, ScalarIndex, Slice, Subtensor

Ent = Tuple[Any, ...]
FULL: Ent = ("s", None, None, None)
_INF = float("inf")
_INT64_MAX = int(np.iinfo(np.int64).max)


def _value(b: Any) -> Any:
    """A bound as an int when it is a constant Variable."""
    if isinstance(b, Constant):
        return int(np.asarray(b.data))
    return b


def unpack(idx_list: Sequence[Any], inputs: Sequence[Variable]) -> List[Ent]:
    """A Subtensor's idx_list and index inputs as entries."""
    it = iter(inputs)

    def bound(b: Any) -> Any:
        return _value(next(it)) if isinstance(b, ScalarIndex) else b

    out: List[Ent] = []
    for e in idx_list:
        if e is None:
            out.append(("n",))
        elif isinstance(e, Slice):
            out.append(("s", bound(e.start), bound(e.stop), bound(e.step)))
        else:
            out.append(("i", bound(e)))
    return out


def pack(entries: Sequence[Ent]) -> Tuple[Tuple[Any, ...], List[Variable]]:
    """Entries as (idx_list, index inputs) for Subtensor; trailing full slices dropped."""
    entries = list(entries)
    while entries and entries[-1] == FULL:
        entries.pop()
    inputs: List[Variable] = []

    def bound(b: Any) -> Any:
        if isinstance(b, Variable):
            inputs.append(b)
            return SCALAR
        return b

    idx: List[Any] = []
    for e in entries:
        if e[0] == "n":
            idx.append(None)
        elif e[0] == "s":
            idx.append(Slice(bound(e[1]), bound(e[2]), bound(e[3])))
        else:
            idx.append(bound(e[1]))
    return tuple(idx), inputs


def is_full(e: Ent) -> bool:
    """A slice taking a whole dimension in order (:, ::1, 0:, ...)."""
    return (e[0] == "s" and (e[1] is None or (type(e[1]) is int and e[1] == 0))
            and (e[2] is None or (type(e[2]) is int and e[2] >= _INT64_MAX)) and e[3] in (None, 1))


def _constant(e: Ent) -> bool:
    return all(b is None or type(b) is int for b in e[1:])


def _range_slice(r: range) -> Ent:
    """A slice of a dimension giving exactly the elements of range r (a sub-range of range(n))."""
    if len(r) == 0:
        return ("s", 0, 0, None)
    stop = r.stop if r.stop >= 0 else None
    return ("s", r.start, stop, None if r.step == 1 else r.step)


def _compose_static(s1: Ent, e2: Ent, n: int) -> Optional[Ent]:
    r1 = range(n)[slice(*s1[1:])]
    if e2[0] == "i":
        i = e2[1]
        return ("i", r1[i]) if -len(r1) <= i < len(r1) else None
    return _range_slice(r1[slice(*e2[1:])])


def _progression(s1: Ent) -> Optional[Tuple[bool, int, float, int]]:
    """(forward, p, q, t): s1 as 'p, p+t, ... < q' counted from the start (forward) or from the end."""
    a, b, t = s1[1], s1[2], 1 if s1[3] is None else s1[3]
    if t > 0 and (a is None or a >= 0) and (b is None or b >= 0):
        return True, a or 0, _INF if b is None else b, t
    if t < 0 and (a is None or a < 0) and (b is None or b < 0):
        return False, 0 if a is None else -1 - a, _INF if b is None else -1 - b, -t
    return None


def _from_progression(forward: bool, p: int, q: float, t: int) -> Ent:
    if forward:
        return ("s", p, None if q == _INF else int(q), None if t == 1 else t)
    return ("s", -1 - p, None if q == _INF else -1 - int(q), -t)


def _compose_free(s1: Ent, e2: Ent) -> Optional[Ent]:
    """Constant entries on a dimension of unknown length, when the result does not depend on it."""
    prog = _progression(s1)
    if prog is None:
        return None
    forward, p, q, t = prog
    if e2[0] == "i":
        i = e2[1]
        if i < 0 or p + i * t >= q:    # then x's own bounds check is the slice's
            return None
        return ("i", p + i * t) if forward else ("i", -1 - (p + i * t))
    a2, b2, t2 = e2[1], e2[2], 1 if e2[3] is None else e2[3]
    if t2 > 0 and (a2 is None or a2 >= 0) and (b2 is None or b2 >= 0):
        q2 = _INF if b2 is None else p + b2 * t
        return _from_progression(forward, p + (a2 or 0) * t, min(q, q2), t * t2)
    if a2 is None and b2 is None and t2 == -1 and t == 1 and q == _INF:
        if forward:     # x[p:][::-1]: from the end down to p
            return ("s", None, p - 1 if p > 0 else None, -1)
        return ("s", None, -p if p > 0 else None, None)   # x[-1-p::-1][::-1]: from 0 up to n-1-p
    return None


def compose(s1: Ent, e2: Ent, n: Optional[int]) -> Optional[Ent]:
    """The entry of x's dimension (length n, None if unknown) for slice s1 then entry e2, or None."""
    if e2[0] == "s" and is_full(e2):
        return s1
    if is_full(s1):
        return e2
    if not _constant(s1) or not _constant(e2):
        return None
    if n is not None:
        return _compose_static(s1, e2, n)
    return _compose_free(s1, e2)


def compose_new_axis(e2: Ent) -> Optional[List[Ent]]:
    """The entries replacing a new axis (length 1) indexed by e2, or None."""
    if e2[0] == "i":
        return [] if type(e2[1]) is int and e2[1] in (0, -1) else None
    if is_full(e2) or (_constant(e2) and len(range(1)[slice(*e2[1:])]) == 1):
        return [("n",)]
    return None


def pad_entries(entries: Sequence[Ent], ndim: int) -> List[Ent]:
    """The entries padded with full slices up to ndim indexed dimensions."""
    used = sum(e[0] != "n" for e in entries)
    return list(entries) + [FULL] * (ndim - used)


def merge_indices(static: Sequence[Optional[int]], idx1: Sequence[Ent], idx2: Sequence[Ent]
                  ) -> Optional[List[Ent]]:
    """One index equal to idx1 then idx2 on a tensor of static shape static, or None."""
    e1 = pad_entries(idx1, len(static))
    e2 = pad_entries(idx2, sum(e[0] != "i" for e in e1))
    out: List[Ent] = []
    j = d = 0
    for ent in e1:
        if ent[0] == "i":
            out.append(ent)
            d += 1
            continue
        while e2[j][0] == "n":
            out.append(e2[j])
            j += 1
        nxt = e2[j]
        j += 1
        if ent[0] == "n":
            res = compose_new_axis(nxt)
        else:
            one = compose(ent, nxt, static[d])
            res = None if one is None else [one]
            d += 1
        if res is None:
            return None
        out.extend(res)
    return out + e2[j:]


@node_rewriter([Subtensor])
def local_subtensor_merge(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """x[idx1][idx2] -> x[idx] (see the module docstring for when the index can be composed)."""
    y, *inputs2 = node.inputs
    inner = y.owner
    if inner is None or not isinstance(inner.op, Subtensor):
        return None
    x, *inputs1 = inner.inputs
    merged = merge_indices(x.type.shape, unpack(inner.op.idx_list, inputs1),
                           unpack(node.op.idx_list, inputs2))
    if merged is None:
        return None
    idx, inputs = pack(merged)
    new = Subtensor(idx)(x, *inputs) if idx else x
    out = node.outputs[0]
    if new.type.ndim != out.type.ndim or new.type.dtype != out.type.dtype:
        return None
    return [new]
