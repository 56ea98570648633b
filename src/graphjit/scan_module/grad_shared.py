"""The gradient of a scan whose step updates shared variables (a random generator, a counter, a float state).

What is differentiated: the cost as a function of the sequences, initial states, non-sequences and the shared
variables' values *before* the loop, with every update treated as a constant (as if wrapped in
``disconnected_grad``).  So the value a step reads from a shared state is a constant except at the first step,
where it is the shared variable's own value: the gradient with respect to a float shared variable is the
gradient through the first step's read.  Gradients arriving on the shared states' final values (a cost reading
``updates[sv]``) are not implemented.

How: the backward step needs, per step, the forward values that depend on the shared states (a random draw, the
state itself).  A dry run of the backward step finds the forward variables its gradients read that depend on a
shared state (the "cut"); a second forward Scan, the same loop with the cut as extra nit-sot outputs, records
them, and the backward step reads them as sequences.  Replayed from the same initial shared values the second
loop draws the same numbers (random ops copy their generator unless rewritten in place, which the outer graph
prevents: the original loop also reads the generator).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Set

from graphjit.graph.basic import Variable, io_toposort
from graphjit.graph.grad_markers import DisconnectedType
from graphjit.scalar import math as ps
from graphjit.tensor.basic import NotScalarConstantError
from graphjit.tensor.elemwise import get_scalar_constant_value
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.type import TensorType


class CutNotStorable(Exception):
    """The backward step reads a non-tensor value computed from a shared state (it cannot be recorded)."""


def no_gradient(g: Any) -> bool:
    """Whether g (the gradient arriving on a shared state's final value) is absent or a constant zero."""
    if g is None or isinstance(getattr(g, "type", None), DisconnectedType):
        return True
    while g.owner is not None and isinstance(g.owner.op, Elemwise) and g.owner.op.scalar_op == ps.second:
        g = g.owner.inputs[1]               # zeros_like(x) is second(x, 0)
    try:
        return float(get_scalar_constant_value(g)) == 0.0
    except (NotScalarConstantError, TypeError, ValueError):
        return False


def _element(v: Variable) -> Variable:
    """A placeholder for one step's element of sequence v."""
    return TensorType(v.type.dtype, v.type.shape[1:])()


def find_cut(backward: Any, seq_like: List[Variable], pending0: List[Variable],
             nonseqs: List[Variable]) -> List[Variable]:
    """The forward inner variables the backward step reads that depend on a shared state (a dry run of it)."""
    info = backward.info
    n_s, n_t = info.n_seqs, info.n_inner_rec_inputs
    elems = [_element(v) for v in seq_like]
    xs, taps = elems[:n_s], elems[n_s:n_s + n_t]
    gouts, ys = elems[n_s + n_t:n_s + n_t + info.n_outs], elems[n_s + n_t + info.n_outs:]
    pend = [v.type() for v in pending0]
    return backward.step_grads(xs, taps, gouts, ys, pend, nonseqs, None)


def cut_of(grads: List[Variable], stored: Dict[Variable, Variable], equiv: Dict[Any, Any],
           shared_in: List[Variable]) -> List[Variable]:
    """Walking up from grads: the first forward variables (copies in equiv) depending on a shared state, as
    the original inner variables; CutNotStorable when one is not a tensor."""
    copy_of = {v: k for k, v in equiv.items() if isinstance(v, Variable)}
    depends: Set[Variable] = set(shared_in)
    for node in io_toposort(list(shared_in), grads):
        if any(i in depends for i in node.inputs):
            depends.update(node.outputs)
    cut: List[Variable] = []
    seen: Set[Variable] = set()
    stack = list(grads)
    while stack:
        v = stack.pop()
        if v in seen or v in stored or v not in depends:
            continue
        seen.add(v)
        if v in copy_of:
            if not isinstance(v.type, TensorType):
                raise CutNotStorable(f"the backward step of a scan updating shared variables would read {v} "
                                     f"({v.type}), computed from a shared state, which cannot be recorded per step")
            cut.append(copy_of[v])
        elif v.owner is not None:
            stack.extend(v.owner.inputs)
    return cut


def record(op: Any, inputs: List[Variable], cut: List[Variable]) -> List[Variable]:
    """The cut's values at every step: the same loop with the cut as extra nit-sot outputs."""
    if not cut:
        return []
    info = op.info
    outs = list(op.inner_outputs)
    new_info = dataclasses.replace(info, n_nitsot=info.n_nitsot + len(cut), keep=(),
                                   name=f"{info.name or 'scan'}_recorded")
    recorded = type(op)(op.inner_inputs, outs[:info.n_outs] + cut + outs[info.n_outs:], new_info, op._mode_object)
    node = recorded.make_node(*inputs)
    return list(node.outputs[info.n_outs:info.n_outs + len(cut)])
