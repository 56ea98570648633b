"""Fusion: group maximal chains of lowerable Elemwise nodes, and the CAReduce consuming them, into loop groups.

A group computes one value per element of its loop (its *root*) from its *inputs*; every other value of the
group is used only inside it, so it is never materialised.  A group ends either by storing the root (an
elementwise result) or by reducing it (a CAReduce whose only reader-free input is the root).  DimShuffles are
not group members: they lower to views (no pass over memory), which the loop reads with stride-0 broadcasting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.scalar import math as smath
from graphjit.tensor.elemwise import CAReduce, Elemwise, normalize_axis

from graphjit.link.llvm.ir.layouts import is_native_tensor
from graphjit.link.llvm.ir.protocol import NATIVE_DTYPES
from graphjit.link.llvm.scalar.lower import can_lower_scalar

REDUCE_OPS = (smath.add, smath.mul, smath.maximum, smath.minimum, smath.and_, smath.or_)


def fusable_elemwise(node: Apply) -> bool:
    """An Elemwise the generic scalar lowering supports on these dtypes."""
    if not isinstance(node.op, Elemwise) or len(node.outputs) != 1:
        return False
    if not all(is_native_tensor(v) for v in node.inputs + node.outputs):
        return False
    in_dtypes = [v.type.dtype for v in node.inputs]
    return can_lower_scalar(node.op.scalar_op, in_dtypes, node.outputs[0].type.dtype)


def lowerable_careduce(node: Apply) -> bool:
    """A CAReduce over at least one axis with a supported op and dtypes."""
    op = node.op
    if not isinstance(op, CAReduce) or not any(op.scalar_op is r for r in REDUCE_OPS):
        return False
    x, out = node.inputs[0], node.outputs[0]
    if not (is_native_tensor(x) and is_native_tensor(out)) or x.type.ndim == 0:
        return False
    if op.acc_dtype is not None and op.acc_dtype not in NATIVE_DTYPES:
        return False
    acc = op.acc_dtype or out.type.dtype
    if (x.type.dtype.startswith("complex") or acc.startswith("complex")) and not (
            op.scalar_op in (smath.add, smath.mul, smath.maximum, smath.minimum)
            and can_lower_scalar(op.scalar_op, [acc, acc], acc)):
        return False
    return len(normalize_axis(op.axis, x.type.ndim)) > 0


@dataclass
class LoopGroup:
    """Elemwise nodes fused into one loop nest, optionally ending in a reduction."""

    nodes: list[Apply]
    root: Variable
    reduce: Apply | None
    inputs: list[Variable] = field(default_factory=list)

    @property
    def anchor(self) -> Apply:
        """The node at whose place in the toposort the group is emitted."""
        return self.reduce if self.reduce is not None else self.root.owner

    @property
    def output(self) -> Variable:
        """The one value the group materialises."""
        return self.reduce.outputs[0] if self.reduce is not None else self.root


def _only_read_by(fgraph: Any, var: Variable, members: set) -> bool:
    clients = fgraph.clients.get(var, [])
    return bool(clients) and all(c != "output" and c in members for c, _ in clients)


# A group's loop body is one basic block per element: LLVM's scheduling and register allocation of a block
# grow faster than its length (a chain of 2000 elementwise ops: codegen 0.6 s for 1000, 2.0 s for 2000), so
# longer chains are cut into groups of at most this many nodes, each one more pass over memory (W9).
MAX_GROUP_NODES = 256


def _is_float(var: Variable) -> bool:
    return var.type.dtype.startswith("float")


# Scalar ops a vector loop computes in a few cycles: recomputing one per element costs less than a loop of its own.
_CHEAP_OPS = (smath.add, smath.sub, smath.mul, smath.neg, smath.abs, smath.sqr, smath.identity, smath.second,
              smath.lt, smath.gt, smath.le, smath.ge, smath.eq, smath.neq, smath.and_, smath.or_, smath.xor,
              smath.invert, smath.switch, smath.minimum, smath.maximum, smath.sign, smath.copysign, smath.floor,
              smath.ceil, smath.trunc, smath.clip)


def _scalar_op_in(node: Apply, ops: tuple) -> bool:
    """Whether the elementwise node's scalar op is one of ops (the op instances themselves)."""
    return any(node.op.scalar_op is c for c in ops)


def _invariant_costly(producer: Apply, root_var: Variable) -> bool:
    """A costly producer (a call, a division...) whose value is broadcast along a dimension of the loop: fused, it
    would be recomputed for every element of that dimension, so it gets a loop of its own (computed once)."""
    if _scalar_op_in(producer, _CHEAP_OPS) or isinstance(producer.op.scalar_op, smath.Cast):
        return False
    return any(p and not r for p, r in zip(producer.outputs[0].type.broadcastable, root_var.type.broadcastable))


def _absorb(fgraph: Any, root: Apply, assigned: Any, guard: bool = False) -> list[Apply]:
    """root plus every fusable producer whose output only root's group reads (to a fixpoint), at most
    MAX_GROUP_NODES of them; assigned: the nodes already in a group (anything supporting ``in``).

    guard (NanGuardMode): a group whose root is not a float takes no float producer (the loop marks a failed
    check of an intermediate in its root, ir/callbacks.py, which then must be able to hold a NaN)."""
    members = {root}
    order = [root]
    root_var = root.outputs[0]
    ndim = root_var.type.ndim
    refuse_floats = guard and not _is_float(root.outputs[0])
    todo = [root]
    # a worklist: each member's inputs are looked at when it joins; a producer refused because another of
    # its readers was not a member yet is looked at again when that reader joins (it is one of its inputs)
    while todo:
        m = todo.pop()
        for v in m.inputs:
            p = v.owner
            if (p is None or p in members or p in assigned or not fusable_elemwise(p)
                    or v.type.ndim != ndim or not _only_read_by(fgraph, v, members)
                    or (refuse_floats and _is_float(v)) or _invariant_costly(p, root_var)):
                continue
            if len(members) >= MAX_GROUP_NODES:
                return order
            members.add(p)
            order.append(p)
            todo.append(p)
    return order


def plan_groups(fgraph: Any, order: Sequence[Apply], guard: bool = False) -> dict[Apply, LoopGroup]:
    """Map each fused node (anchor and members) to its group; reverse toposort, greedy and maximal (guard: as
    NanGuardMode's entries fuse, _absorb)."""
    position = {n: i for i, n in enumerate(order)}
    owner: dict[Apply, LoopGroup] = {}
    for node in reversed(order):
        if node in owner:
            continue
        if lowerable_careduce(node):
            x = node.inputs[0]
            p = x.owner
            nodes = []
            if (p is not None and p not in owner and fusable_elemwise(p)
                    and _only_read_by(fgraph, x, {node})):
                nodes = _absorb(fgraph, p, owner, guard)
            group = LoopGroup(nodes, x, node)
        elif fusable_elemwise(node):
            group = LoopGroup(_absorb(fgraph, node, owner, guard), node.outputs[0], None)
        else:
            continue
        group.nodes.sort(key=position.__getitem__)
        group.inputs = group_inputs(group)
        for n in group.nodes + ([group.reduce] if group.reduce is not None else []):
            owner[n] = group
    if not guard:
        _duplicate_cheap_groups(fgraph, owner, position)
    return owner


# A group of a few cheap nodes read only by other groups is recomputed inside each of them instead of being a loop
# of its own: a loop costs a kernel call, an allocation and a pass over memory (about as much as a 100-element
# pass of a dozen cheap ops); at most this many nodes, read by at most this many groups, of a static size of at
# most this many elements (a large or unknown size keeps its buffer: memory traffic, not calls, is its cost).
MAX_DUPLICATED_NODES = 4
MAX_DUPLICATED_READERS = 4
MAX_DUPLICATED_ELEMENTS = 1 << 14
# what a duplicated group may hold: the cheap ops and the one-instruction divisions and square root
_DUPLICABLE_OPS = _CHEAP_OPS + (smath.true_div, smath.reciprocal, smath.sqrt)


def _small(var: Variable) -> bool:
    shape = var.type.shape
    return all(s is not None for s in shape) and int(np.prod(shape, dtype=np.int64)) <= MAX_DUPLICATED_ELEMENTS


def _materialised(var: Variable, owner: dict) -> bool:
    """var exists in memory whatever the plan: not computed inside a loop group, or the output of its group."""
    node = var.owner
    return node is None or node not in owner or owner[node].output is var


def _duplicate_cheap_groups(fgraph: Any, owner: dict, position: dict) -> None:
    """Merge every small group of cheap ops (no reduction) whose value only other groups read into each reader
    (producers first, so a chain of them collapses into its readers); owner is updated in place."""
    groups = sorted({id(g): g for g in owner.values()}.values(), key=lambda g: position[g.anchor])
    for group in groups:
        root = group.root
        if (group.reduce is not None or not group.nodes or len(group.nodes) > MAX_DUPLICATED_NODES or not _small(root)
                or not all(_scalar_op_in(n, _DUPLICABLE_OPS) for n in group.nodes)
                or not all(_materialised(v, owner) for v in group.inputs)):
            continue
        clients = fgraph.clients.get(root, [])
        readers = {id(owner[c]): owner[c] for c, _ in clients if c != "output" and c in owner
                   and owner[c] is not group and (c in owner[c].nodes or c is owner[c].reduce)}
        if (not clients or len(readers) > MAX_DUPLICATED_READERS
                or any(c == "output" or c not in owner or owner[c] is group for c, _ in clients)):
            continue
        for reader in readers.values():
            reader.nodes = sorted(set(reader.nodes).union(group.nodes), key=position.__getitem__)
            reader.inputs = group_inputs(reader)
        for n in group.nodes:
            owner[n] = next(iter(readers.values()))


def group_inputs(group: LoopGroup) -> list[Variable]:
    """The group's inputs: what its nodes read that none of them produces, in first-use order (no nodes: its root)."""
    produced = {o for n in group.nodes for o in n.outputs}
    seen: dict[Variable, None] = {}
    if not group.nodes:
        return [group.root]
    for n in group.nodes:
        for v in n.inputs:
            if v not in produced and v not in seen:
                seen[v] = None
    return list(seen)


def is_scalar_constant(var: Variable) -> bool:
    """A Constant with one element: folded into the loop body as an immediate."""
    return isinstance(var, Constant) and getattr(var.data, "size", 2) == 1
