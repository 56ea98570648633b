"""Shared-variable updates that overwrite the variable's own buffer: in-place Gemm and in-place Elemwise.

For every update ``W <- expr`` of the graph (``fgraph.update_mapping``) whose W may be overwritten (not a
protected input: the Supervisor protects inputs that are neither mutable nor shared state):

* ``update_gemm`` (tags fast_run, inplace, update_gemm): ``W - s*dot(a, b)``, ``W + s*dot(a, b)``, ``dot(a, b)*s + W``
  (scalar factors on either side, any number of them, the product of 2-d operands of W's dtype read by
  nothing else) becomes ``Gemm{inplace}(W, +-s, a, b, 1)``: one BLAS call accumulating into W;
* ``update_inplace`` (tags fast_run, inplace, update_inplace): an elementwise update reading W becomes in
  place: the chain of Elemwise nodes from the update down to the one reading W (each the only reader of the
  next, all of W's type) overwrites W.

W may have other readers: the DestroyHandler orders them before the destroyer and refuses the change (it is
then left alone) when that is impossible: W is also an output, something read after the update needs W, the
destroyer would read another alias of W.  Shapes need not be provable: an in-place Elemwise or Gemm whose
target turns out to have another shape than the result at run time returns a fresh array instead.
Registered at 74 and 74.5, before the general inplace phase (75).
"""

from __future__ import annotations

from typing import List, Optional, Set, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.destroyhandler import attach_destroy_handler
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import GraphRewriter, replace_pairs
from graphjit.scalar import math as ps
from graphjit.tensor import math as tm
from graphjit.tensor.basic import cast, constant
from graphjit.tensor.blas import Dot
from graphjit.tensor.blas_gemm import gemm_inplace
from graphjit.tensor.blas_vector import BLAS_DTYPES
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.rewriting.basic import is_elemwise, rewrite_db, single_client
from graphjit.tensor.rewriting.blas import scalar_of
from graphjit.tensor.rewriting.inplace import inplace_elemwise_op, protected_inputs
from graphjit.tensor.type import TensorType

_MAX_CHAIN = 8


def update_targets(fgraph: FunctionGraph) -> List[Tuple[Variable, Variable]]:
    """(update output, the input it updates) for every update whose input may be overwritten."""
    protected: Set[Variable] = protected_inputs(fgraph)
    pairs = []
    for j, k in sorted((getattr(fgraph, "update_mapping", None) or {}).items()):
        out, target = fgraph.outputs[j], fgraph.inputs[k]
        if target not in protected and isinstance(target.type, TensorType) and out.type == target.type:
            pairs.append((out, target))
    return pairs


class _UpdateRewriter(GraphRewriter):
    """Applies ``rewrite_update(fgraph, out, target)`` to every update, each change validated by the DestroyHandler."""

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        super().add_requirements(fgraph)
        attach_destroy_handler(fgraph)

    def rewrite_update(self, fgraph: FunctionGraph, out: Variable, target: Variable
                ) -> Optional[List[Tuple[Variable, Variable]]]:
        """The replacements making out overwrite target, or None."""
        raise NotImplementedError

    def apply(self, fgraph: FunctionGraph) -> int:
        """Rewrite each update; a change the DestroyHandler refuses is reverted and skipped."""
        done = 0
        for out, target in update_targets(fgraph):
            if out not in fgraph.outputs or out.owner is None:
                continue
            pairs = self.rewrite_update(fgraph, out, target)
            if pairs and replace_pairs(fgraph, pairs, self.name or "update_inplace"):
                done += 1
        return done


# ------------------------------------------------------------------------------------------------
# W +- s * dot(a, b) -> Gemm{inplace}
# ------------------------------------------------------------------------------------------------

def _scaled_dot(fgraph: FunctionGraph, v: Variable, dtype: str) -> Optional[Tuple[List[Variable], Apply]]:
    """(scalar factors, Dot node) if v = s1 * ... * dot(a, b) through muls and a dot read only there."""
    scalars: List[Variable] = []
    while is_elemwise(v, ps.mul) and len(v.owner.inputs) == 2 and single_client(fgraph, v):
        p, q = v.owner.inputs
        sp, sq = scalar_of(p), scalar_of(q)
        if sp is not None and q.type.ndim == 2:
            scalars.append(sp)
            v = q
        elif sq is not None and p.type.ndim == 2:
            scalars.append(sq)
            v = p
        else:
            return None
    node = v.owner
    if node is None or not isinstance(node.op, Dot) or not single_client(fgraph, v):
        return None
    if v.type.dtype != dtype or any(i.type.ndim != 2 or i.type.dtype != dtype for i in node.inputs):
        return None
    return scalars, node


def _alpha(scalars: List[Variable], sign: float, dtype: str) -> Variable:
    """sign times the product of the factors, a 0-d tensor of dtype."""
    value = sign
    rest = []
    for s in scalars:
        if isinstance(s, Constant):
            value = value * np.asarray(s.data).reshape(())
        else:
            rest.append(s)
    alpha: Variable = constant(np.asarray(value, dtype=dtype))
    for s in rest:
        alpha = tm.mul(alpha, cast(s, dtype))
    return alpha


class GemmUpdate(_UpdateRewriter):
    """``W +- s*dot(a, b)`` -> ``Gemm{inplace}(W, +-s, a, b, 1)`` (module doc)."""

    def rewrite_update(self, fgraph: FunctionGraph, out: Variable, target: Variable
                ) -> Optional[List[Tuple[Variable, Variable]]]:
        dtype = target.type.dtype
        if dtype not in BLAS_DTYPES or target.type.ndim != 2:
            return None
        if is_elemwise(out, ps.sub) and out.owner.inputs[0] is target:
            sign, terms = -1.0, [out.owner.inputs[1]]
        elif is_elemwise(out, ps.add) and len(out.owner.inputs) == 2 and target in out.owner.inputs:
            sign, terms = 1.0, [v for v in out.owner.inputs if v is not target]
        else:
            return None
        if len(terms) != 1:
            return None
        found = _scaled_dot(fgraph, terms[0], dtype)
        if found is None:
            return None
        scalars, dot = found
        new = gemm_inplace(target, _alpha(scalars, sign, dtype), *dot.inputs, constant(np.asarray(1, dtype)))
        return [(out, new)] if out.type.is_super(new.type) else None


# ------------------------------------------------------------------------------------------------
# elementwise update -> in-place Elemwise chain ending in W
# ------------------------------------------------------------------------------------------------

def _chain_to(fgraph: FunctionGraph, v: Variable, target: Variable, depth: int) -> Optional[List[Tuple[Apply, int]]]:
    """[(node, input index overwritten)] from v's node down to the node reading target, or None."""
    node = v.owner
    if (depth > _MAX_CHAIN or node is None or not isinstance(node.op, Elemwise) or node.op.inplace_pattern
            or len(node.outputs) != 1 or node.op.given_name or v.type != target.type):
        return None
    if target in node.inputs:
        i = node.inputs.index(target)
        return [(node, i)] if node.inputs.count(target) == 1 else None
    for i, inp in enumerate(node.inputs):
        if single_client(fgraph, inp):
            below = _chain_to(fgraph, inp, target, depth + 1)
            if below is not None:
                return [(node, i)] + below
    return None


class ElemwiseUpdate(_UpdateRewriter):
    """An elementwise update overwrites W: its chain of Elemwise nodes, each in place (module doc)."""

    def rewrite_update(self, fgraph: FunctionGraph, out: Variable, target: Variable
                ) -> Optional[List[Tuple[Variable, Variable]]]:
        chain = _chain_to(fgraph, out, target, 0)
        if chain is None:
            return None
        new: Optional[Variable] = None
        for node, i in reversed(chain):         # from the node reading W up to the update
            inputs = list(node.inputs)
            if new is not None:
                inputs[i] = new
            new = Apply(inplace_elemwise_op(node.op, i), inputs, [node.outputs[0].type()]).outputs[0]
        return [(out, new)]


update_gemm = GemmUpdate()
update_gemm.name = "update_gemm"
update_elemwise = ElemwiseUpdate()
update_elemwise.name = "update_inplace"
rewrite_db.register("update_gemm", update_gemm, "fast_run", "inplace", "update_gemm", position=74)
rewrite_db.register("update_inplace", update_elemwise, "fast_run", "inplace", "update_inplace", position=74.5)

__all__ = ["GemmUpdate", "ElemwiseUpdate", "update_gemm", "update_elemwise", "update_targets"]
