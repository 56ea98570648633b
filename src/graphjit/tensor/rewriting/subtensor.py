"""Subtensor rewrites: useless slices, x[a][b] merged, indexing an Alloc or a shape, lifting through Elemwise.

* ``local_useless_subtensor`` (canonicalize): x[:], x[::1], x[0:, :] ... (every entry a full slice) -> x;
* ``local_subtensor_merge`` (canonicalize): x[idx1][idx2] -> x[idx] (subtensor_merge.py);
* ``local_subtensor_of_alloc`` (canonicalize): alloc(v, *shape)[idx] -> alloc(v[idx'], *new shape): only
  the kept part is filled. Integer indices must be checkable (indexing v itself, or a constant within a
  static length) so the IndexError is kept; a length v may broadcast at run time keeps the rewrite off;
* ``local_subtensor_of_shape_slice`` (canonicalize, shape): shape(x)[a:b] -> the vector of the selected
  Shape_i, make_vector(...)[a:b] -> make_vector of the selected inputs (constant bounds);
* ``local_subtensor_lift`` (specialize): f(x, y)[idx] -> f(x[idx'], y[idx']) for an Elemwise f read only
  by this Subtensor, when idx selects fewer elements (an integer or a partial slice): the elementwise
  work shrinks to the kept part. Each operand is indexed in the dimensions where it provably has the
  result's length; where it is statically 1 (broadcast) it keeps the dimension (or its element 0).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.tensor.alloc import Alloc
from graphjit.tensor.join import MakeVector, make_vector
from graphjit.tensor.rewriting.basic import (is_elemwise, register_canonicalize, register_specialize,
                                             single_client)
from graphjit.tensor.rewriting.subtensor_merge import (FULL, Ent, pad_entries, is_full, local_subtensor_merge,
                                                       pack, unpack)
from graphjit.tensor.shape import Shape, shape_i
from graphjit.tensor.slice_length import as_length, length_variable, slice_length
from graphjit.tensor.subtensor import Subtensor

# ------------------------------------------------------------------------------------------------
# useless
# ------------------------------------------------------------------------------------------------


@node_rewriter([Subtensor])
def local_useless_subtensor(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """x[:], x[::1], x[0:, :] (every entry a full slice, no new axis) -> x."""
    x = node.inputs[0]
    entries = unpack(node.op.idx_list, node.inputs[1:])
    if all(is_full(e) for e in entries) and x.type == node.outputs[0].type:
        return [x]
    return None


# ------------------------------------------------------------------------------------------------
# shape(x)[a:b], make_vector(...)[a:b]
# ------------------------------------------------------------------------------------------------

@node_rewriter([Subtensor])
def local_subtensor_of_shape_slice(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """shape(x)[a:b:c] -> make_vector(Shape_i...), make_vector(v0, v1, ...)[a:b:c] -> make_vector(selected)."""
    v = node.inputs[0]
    entries = unpack(node.op.idx_list, node.inputs[1:])
    if v.owner is None or len(entries) != 1 or entries[0][0] != "s" or is_full(entries[0]):
        return None
    bounds = entries[0][1:]
    if any(b is not None and type(b) is not int for b in bounds):
        return None
    if isinstance(v.owner.op, Shape):
        x = v.owner.inputs[0]
        picked = [shape_i(x, d) for d in range(x.type.ndim)[slice(*bounds)]]
    elif isinstance(v.owner.op, MakeVector):
        picked = list(v.owner.inputs)[slice(*bounds)]
    else:
        return None
    new = make_vector(picked, dtype=v.type.dtype)
    return [new] if node.outputs[0].type.is_super(new.type) else None


# ------------------------------------------------------------------------------------------------
# alloc(v, *shape)[idx]
# ------------------------------------------------------------------------------------------------

def _alloc_entry(e: Ent, length: Variable, vlen: Optional[int], n: Optional[int]) -> Optional[Tuple]:
    """(entry for v or None if v has no such dim, the new length or None if dropped); None: give up.

    vlen: v's static length in this dimension ("absent" dims are passed as -1), n: the static length.
    """
    real = vlen is not None and vlen != -1 and vlen != 1 and vlen == n  # v spans the dimension
    if not real and vlen not in (-1, 1):
        return None          # v may be 1 or the full length at run time
    if e[0] == "i":
        if real:
            return e, None
        if type(e[1]) is int and n is not None and -n <= e[1] < n:
            return (("i", 0) if vlen == 1 else None), None
        return None
    if isinstance(e[3], Variable) and not real:
        return None          # a zero step must still raise: only v's own indexing would check it
    values = iter([b for b in e[1:] if isinstance(b, Variable)])
    new_len = slice_length(*[as_length(next(values)) if isinstance(b, Variable) else b for b in e[1:]],
                           as_length(length))
    return (e if real else (FULL if vlen == 1 else None)), new_len


@node_rewriter([Subtensor])
def local_subtensor_of_alloc(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """alloc(v, *shape)[idx] -> alloc(v[idx'], *new shape): only the kept part is filled."""
    a = node.inputs[0]
    if a.owner is None or not isinstance(a.owner.op, Alloc):
        return None
    v, *lengths = a.owner.inputs
    pad = len(lengths) - v.type.ndim
    entries = pad_entries(unpack(node.op.idx_list, node.inputs[1:]), len(lengths))
    v_entries: List[Ent] = []
    new_lengths: List[Any] = []
    d = 0
    for e in entries:
        if e[0] == "n":
            new_lengths.append(1)
            if d > pad:
                v_entries.append(e)
            continue
        vlen = v.type.shape[d - pad] if d >= pad else -1
        res = _alloc_entry(e, lengths[d], vlen, a.type.shape[d])
        if res is None:
            return None
        ve, nl = res
        if ve is not None:
            v_entries.append(ve)
        if nl is not None:
            new_lengths.append(nl)
        d += 1
    idx, inputs = pack(v_entries)
    value = Subtensor(idx)(v, *inputs) if idx else v
    new = Alloc()(value, *[length_variable(n) for n in new_lengths])
    out = node.outputs[0]
    return [new] if new.type.ndim == out.type.ndim and new.type.dtype == out.type.dtype else None


# ------------------------------------------------------------------------------------------------
# lift through Elemwise
# ------------------------------------------------------------------------------------------------

def _spans(fgraph: FunctionGraph, node: Apply, k: int, d: int) -> bool:
    """Input k of an Elemwise node provably has the output's length in dimension d."""
    inputs = node.inputs
    s = inputs[k].type.shape[d]
    if s is not None and s == node.outputs[0].type.shape[d]:
        return True
    if all(j == k or other.type.shape[d] == 1 for j, other in enumerate(inputs)):
        return True
    feature = getattr(fgraph, "shape_feature", None)
    return feature is not None and feature.same_shape(inputs[k], node.outputs[0], d, d)


def _operand_entries(fgraph: FunctionGraph, node: Apply, k: int, entries: Sequence[Ent]) -> Optional[List[Ent]]:
    """The index of operand k for the lifted node, or None if it may broadcast where indexed."""
    out_static = node.outputs[0].type.shape
    own: List[Ent] = []
    d = 0
    for e in entries:
        if e[0] == "n":
            own.append(e)
            continue
        broadcast = node.inputs[k].type.shape[d] == 1 and out_static[d] != 1
        if broadcast:
            own.append(("i", 0) if e[0] == "i" else FULL)
        elif is_full(e) or _spans(fgraph, node, k, d):
            own.append(e)
        else:
            return None
        d += 1
    return own


@node_rewriter([Subtensor])
def local_subtensor_lift(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """f(x, y)[idx] -> f(x[idx'], y[idx']) for an Elemwise f read only here, when idx selects less."""
    e = node.inputs[0]
    if not is_elemwise(e) or len(e.owner.outputs) != 1 or not single_client(fgraph, e):
        return None
    enode = e.owner
    entries = pad_entries(unpack(node.op.idx_list, node.inputs[1:]), e.type.ndim)
    if all(x[0] == "n" or is_full(x) for x in entries):
        return None          # nothing left out: no work saved
    operands = []
    for k, inp in enumerate(enode.inputs):
        own = _operand_entries(fgraph, enode, k, entries)
        if own is None:
            return None
        idx, inputs = pack(own)
        operands.append(Subtensor(idx)(inp, *inputs) if idx else inp)
    new = enode.op(*operands)
    out = node.outputs[0]
    if new.type.ndim != out.type.ndim or new.type.dtype != out.type.dtype:
        return None
    return [new]


for _rw in (local_useless_subtensor, local_subtensor_merge, local_subtensor_of_alloc):
    register_canonicalize(_rw, "subtensor")
register_canonicalize(local_subtensor_of_shape_slice, "shape", "subtensor")
register_specialize(local_subtensor_lift, "subtensor")

__all__ = ["local_useless_subtensor", "local_subtensor_merge", "local_subtensor_of_alloc",
           "local_subtensor_of_shape_slice", "local_subtensor_lift"]
