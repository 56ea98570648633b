"""Blockwise rewrites (canonicalize): a Blockwise whose core op can take the loop dimensions itself is replaced by
that op, so the graph keeps its ordinary, natively lowered form.

* ``local_blockwise_unwrap``: a Blockwise with no loop dimensions is its core op; a Blockwise of an Elemwise is
  the Elemwise on the inputs aligned (broadcastable dims padded between loop and core parts); of a DimShuffle or a
  CAReduce, the op with its axes shifted past the loop dimensions; of a linear-algebra op that batches over
  leading dimensions with numpy's broadcasting (``SELF_BATCHING``, checked against Blockwise's perform in
  tests/tensor/test_blockwise.py), that op on the batched inputs (its one LAPACK loop, no inner graph). Where
  the op refuses the batched inputs (CholInvDiag wants operands of equal batch ranks) the Blockwise stays.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import node_rewriter
from graphjit.tensor.blockwise import Blockwise, align_batch
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from graphjit.tensor.linalg import (LU, QR, SVD, Cholesky, CholInvDiag, ChoSolve, Det, Eigh, Inv, LUFactor, LUSolve,
                                    SlogDet, Solve, SolveTriangular)
from graphjit.tensor.rewriting.basic import register_canonicalize

# linear-algebra ops whose leading dimensions are a batch broadcast as Blockwise broadcasts its loop dimensions
SELF_BATCHING = (Cholesky, Inv, Det, SlogDet, Eigh, SVD, QR, LU, LUFactor, LUSolve, Solve, SolveTriangular,
                 ChoSolve, CholInvDiag)


def _unwrapped(node: Apply) -> Optional[Sequence[Variable]]:
    op, inputs = node.op, list(node.inputs)
    core = op.core_op
    loops = [x.type.ndim - len(c) for x, c in zip(inputs, op.inputs_sig)]
    if not any(loops) or isinstance(core, SELF_BATCHING):
        return core.make_node(*inputs).outputs
    if type(core) is Elemwise:
        return core.make_node(*align_batch(inputs, loops, [len(c) for c in op.inputs_sig], loops)).outputs
    nb = max(loops)
    if type(core) is DimShuffle:
        order = tuple(range(nb)) + tuple(d if d == "x" else d + nb for d in core.new_order)
        return [DimShuffle(inputs[0].type.ndim, order)(inputs[0])]
    if type(core) is CAReduce:
        axis = range(len(op.inputs_sig[0])) if core.axis is None else core.axis
        return [CAReduce(core.scalar_op, tuple(a + nb for a in axis), core.dtype, core.acc_dtype)(inputs[0])]
    return None


@register_canonicalize
@node_rewriter([Blockwise])
def local_blockwise_unwrap(fgraph: FunctionGraph, node: Apply) -> Optional[List[Variable]]:
    """Blockwise(core) -> core itself where it takes the loop dimensions (see the module doc)."""
    try:
        outs = _unwrapped(node)
    except (TypeError, ValueError):     # the core op refuses the batched inputs: keep the Blockwise
        return None
    if outs is None or len(outs) != len(node.outputs):
        return None
    result = []
    for old, new in zip(node.outputs, outs):
        if new.type.dtype != old.type.dtype or new.type.ndim != old.type.ndim:
            return None
        try:
            result.append(new if new.type == old.type else old.type.filter_variable(new))
        except TypeError:
            return None
    return result
