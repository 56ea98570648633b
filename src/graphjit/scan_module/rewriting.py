"""Scan rewrites, registered in the tensor rewrite database (fast_run).

* ``scan_inner`` (position 48): the inner graph gets the fast_run rewrites too (not the in-place ones: its inputs
  are views of the loop's buffers; not scan_accumulate, whose ifelse an inner graph cannot lower); nested scans
  are reached by the same query.
* ``scan_inline_inner_graphs`` (position 0.27, tag ``inline_inner_graphs``: the modes whose linker compiles an
  OpFromGraph by inlining it, FAST_RUN and FAST_COMPILE): the OpFromGraph-like ops of an inner graph are expanded
  too (nested scans included), so a step calling an ``OpFromGraph(inline=False)`` compiles natively.
* ``scan_loop`` (position 48.5), in order, each to a fixed point:
  - push out of the loop what reads only non-sequences and constants (it becomes a non-sequence);
  - remove the outputs nothing reads (and the inputs then unused);
  - keep only the last state of an output read only as ``out[-1]`` (O(1) memory: a ring buffer when lowered);
  - turn a scan that only accumulates ``state + x_t`` (or ``*``) and is read as ``out[-1]`` into a sum (prod);
  - merge scans of the same n_steps that do not depend on each other (one loop).
* ``scan_accumulate`` (position 48.7, tag ``scan_accumulate`` to exclude it): a recurrent output that only
  accumulates per-step terms (``acc + f_t``, ``acc - f_t``, ``acc * f_t``, ``acc + alpha*outer(x_t, y_t)``: a
  BPTT gradient's running sum) and is kept as its last state becomes per-step outputs reduced after the loop (a
  sum, a product, one matrix product): scan_module/accumulators.py; then the outputs left unused go.
  (fast_compile runs these too; it leaves the inner graph as written.)
* ``scan_random_draws`` (position 48.6, scan_module/random_draws.py): a step's loop-invariant normal/uniform draw
  is made for every step at once before the loop.

The module re-exports ``rewrite_db`` and seals it again after registering (compile/mode.py's LazyDatabase names
this module, so a rewrite key names a pristine database by module: compile/rewrite_cache.py).
"""

from __future__ import annotations

from typing import Any, Dict, List

from graphjit.graph.basic import Apply, Constant, Variable, ancestors, clone_replace, graph_inputs, io_toposort
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import GraphRewriter
from graphjit.scan_module import accumulators
from graphjit.scan_module.info import KEEP_ALL, KEEP_LAST_OR_EMPTY
from graphjit.scan_module.op import Scan
from graphjit.scan_module.parts import Parts, rebuild, replace_outputs, scans, sequence_rows, with_info
from graphjit.tensor.basic import cast
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.math import minimum, prod as tprod, sum as tsum
from graphjit.tensor.rewriting import rewrite_db
from graphjit.tensor.rewriting.inner_graphs import InlineGraphs
from graphjit.tensor.subtensor import ScalarIndex, Subtensor
from graphjit.scalar import math as smath
from graphjit.scan_module.random_draws import ScanRandomDrawsRewriter


# ---------------------------------------------------------------- the inner graph
class ScanInnerRewriter(GraphRewriter):
    """Rewrite each Scan's inner graph with the fast_run rewrites (in-place ones excluded)."""

    name = "scan_inner"

    def apply(self, fgraph: FunctionGraph) -> None:
        """See the class doc."""
        for node in scans(fgraph):
            op = node.op
            if op.info.rewritten or node not in fgraph.apply_nodes:
                continue
            inner = op.fgraph.clone()
            # scan_accumulate stays out: its zero-step guard is an ifelse, which an inner graph cannot lower
            rewrite_db.query(include=["fast_run"], exclude=["inplace", "scan_accumulate"]).rewrite(inner)
            new = Scan(inner.inputs, inner.outputs, with_info(op.info, rewritten=True), op._mode_object)
            replace_outputs(fgraph, node, new.make_node(*node.inputs).outputs, "scan_inner")


class ScanInlineInnerGraphs(GraphRewriter):
    """Expand the OpFromGraph-like ops of each Scan's inner graph (nested scans too), as the outer graph's are."""

    name = "scan_inline_inner_graphs"
    _inline = InlineGraphs(False, "scan_inline_inner_graphs")

    def apply(self, fgraph: FunctionGraph) -> int:
        """Returns the number of Scans whose inner graph changed."""
        changed = 0
        for node in scans(fgraph):
            if node not in fgraph.apply_nodes:
                continue
            op = node.op
            inner = op.fgraph.clone()
            if not (self._inline.apply(inner) + self.apply(inner)):
                continue
            new = Scan(inner.inputs, inner.outputs, op.info, op._mode_object)
            replace_outputs(fgraph, node, new.make_node(*node.inputs).outputs, self.name)
            changed += 1
        return changed


# ---------------------------------------------------------------- push out invariants
def _push_out(fgraph: FunctionGraph, node: Apply) -> bool:
    parts = Parts.of(node)
    inner_outs = [r[3] for r in parts.recs] + [m[0] for m in parts.nits] + [s[2] for s in parts.shared]
    inner_outs += [parts.cond] if parts.cond is not None else []
    outer_of = {i: o for o, i in parts.nonseqs}
    invariant = set(outer_of)
    variant = {s[1] for s in parts.seqs} | {i for r in parts.recs for i in r[2]} | {s[1] for s in parts.shared}
    hoist: Dict[Variable, Variable] = {}
    if not _closed(variant | invariant, inner_outs):
        return False
    for inner_node in io_toposort(list(variant | invariant), inner_outs):
        if all(v in invariant or isinstance(v, Constant) for v in inner_node.inputs) \
                and not getattr(inner_node.op, "destroy_map", None) and _pure(inner_node):
            invariant.update(inner_node.outputs)
        else:
            for v in inner_node.inputs:
                if v in invariant and v not in outer_of and not isinstance(v, Constant):
                    hoist.setdefault(v, None)
    for o in inner_outs:
        if o in invariant and o not in outer_of and not isinstance(o, Constant):
            hoist.setdefault(o, None)
    if not hoist:
        return False
    targets = list(hoist)
    outer_vals = clone_replace(targets, {i: o for i, o in outer_of.items()})
    placeholders = [t.type(t.name) for t in targets]
    mapping = dict(zip(targets, placeholders))
    new_outs = clone_replace(inner_outs, mapping)
    k = 0
    for r_i, r in enumerate(parts.recs):
        parts.recs[r_i] = r[:3] + (new_outs[k],) + r[4:]
        k += 1
    for m_i, m in enumerate(parts.nits):
        parts.nits[m_i] = (new_outs[k],) + m[1:]
        k += 1
    for s_i, s in enumerate(parts.shared):
        parts.shared[s_i] = s[:2] + (new_outs[k],) + s[3:]
        k += 1
    if parts.cond is not None:
        parts.cond = new_outs[k]
    parts.nonseqs += list(zip(outer_vals, placeholders))
    return rebuild(fgraph, parts, "scan_push_out")


def _closed(inputs: set, outputs: List[Variable]) -> bool:
    return all(v in inputs or isinstance(v, Constant) for v in graph_inputs(outputs, blockers=list(inputs)))


def _pure(node: Apply) -> bool:
    """Ops whose result depends only on their inputs (a random draw's generator is a shared state, never
    invariant, so only ops producing non-tensor values are refused here)."""
    return all(hasattr(o.type, "dtype") for o in node.outputs)


# ---------------------------------------------------------------- unused outputs and inputs
def _remove_unused(fgraph: FunctionGraph, node: Apply) -> bool:
    parts = Parts.of(node)
    used = lambda var: bool(fgraph.clients.get(var))  # noqa: E731
    changed = False
    nits = [m for m in parts.nits if used(m[1])]
    changed |= len(nits) != len(parts.nits)
    parts.nits = nits
    while True:
        others = lambda skip: ([r[3] for r in parts.recs if r is not skip] + [m[0] for m in parts.nits]  # noqa: E731
                               + [s[2] for s in parts.shared] + ([parts.cond] if parts.cond is not None else []))
        drop = next((r for r in parts.recs if not used(r[4])
                     and not set(r[2]) & set(graph_inputs(others(r)))), None)
        if drop is None:
            break
        parts.recs.remove(drop)
        changed = True
    if not parts.recs and not parts.nits and not parts.shared:
        return False            # nothing read at all: the node is dead and goes away by itself
    needed = set(graph_inputs([r[3] for r in parts.recs] + [m[0] for m in parts.nits] + [s[2] for s in parts.shared]
                              + ([parts.cond] if parts.cond is not None else [])))
    seqs = [s for s in parts.seqs if s[1] in needed]
    nonseqs = [s for s in parts.nonseqs if s[1] in needed]
    changed |= len(seqs) != len(parts.seqs) or len(nonseqs) != len(parts.nonseqs)
    parts.seqs, parts.nonseqs = seqs, nonseqs
    return rebuild(fgraph, parts, "scan_remove_unused") if changed else False


# ---------------------------------------------------------------- merge
def _merge(fgraph: FunctionGraph, a: Apply, b: Apply) -> bool:
    ia, ib = a.op.info, b.op.info
    if a.inputs[0] is not b.inputs[0] or ia.as_while or ib.as_while:
        return False
    if ia.truncate_gradient != ib.truncate_gradient or a.op._mode_object is not b.op._mode_object:
        return False
    if a in {v.owner for v in ancestors(b.inputs)} or b in {v.owner for v in ancestors(a.inputs)}:
        return False
    pa, pb = Parts.of(a), Parts.of(b)
    merged = Parts(pa.n, pa.seqs + pb.seqs, pa.recs + pb.recs, pa.nits + pb.nits, pa.shared + pb.shared,
                    pa.nonseqs + pb.nonseqs, None, with_info(ia, name=ia.name or ib.name, rewritten=ia.rewritten and
                                                        ib.rewritten), pa.mode)
    return rebuild(fgraph, merged, "scan_merge")


# ---------------------------------------------------------------- last state only
def _read_as_last(fgraph: FunctionGraph, var: Variable) -> bool:
    clients = fgraph.clients.get(var) or []
    if not clients:
        return False
    for client, i in clients:
        if client == "output" or not isinstance(client.op, Subtensor) or i != 0 or len(client.op.idx_list) != 1:
            return False
        entry = client.op.idx_list[0]
        if isinstance(entry, ScalarIndex):
            idx = client.inputs[1]
            if not (isinstance(idx, Constant) and int(idx.data) == -1):
                return False
        elif entry != -1:
            return False
    return True


def _keep_last(fgraph: FunctionGraph, node: Apply) -> bool:
    info = node.op.info
    if info.as_while:
        return False
    keep = [info.keep_of(j) for j in range(info.n_outs)]
    for j in range(info.n_outs):
        if keep[j] == KEEP_ALL and _read_as_last(fgraph, node.outputs[j]):
            keep[j] = KEEP_LAST_OR_EMPTY
    if keep == [info.keep_of(j) for j in range(info.n_outs)]:
        return False
    new = node.op.with_info(keep=tuple(keep)).make_node(*node.inputs)
    return replace_outputs(fgraph, node, new.outputs, "scan_keep_last")


# ---------------------------------------------------------------- a scan that only accumulates
_FOLDS = {id(smath.add): tsum, id(smath.mul): tprod}


def _to_reduction(fgraph: FunctionGraph, node: Apply) -> bool:
    info, op = node.op.info, node.op
    if (info.n_seqs != 1 or info.rec_taps != ((-1,),) or info.n_nitsot or info.n_shared or info.as_while
            or info.keep_of(0) != KEEP_LAST_OR_EMPTY):
        return False
    out, (x_t, state) = op.inner_outputs[0], op.inner_inputs[:2]
    owner = out.owner
    if owner is None or not isinstance(owner.op, Elemwise) or id(owner.op.scalar_op) not in _FOLDS:
        return False
    if set(owner.inputs) != {x_t, state} or len(owner.inputs) != 2 or x_t.type != state.type \
            or out.type.dtype != state.type.dtype:
        return False
    n, seq, init = node.inputs[0], node.inputs[1], node.inputs[2]
    folded = _FOLDS[id(owner.op.scalar_op)](sequence_rows(seq, n), axis=0)
    total = owner.op(init, cast(folded, init.dtype))
    value = cast(total, out.type.dtype)[None][:minimum(n, 1)]
    if value.type != node.outputs[0].type:
        return False
    return replace_outputs(fgraph, node, [value], "scan_to_reduction")


class ScanLoopRewriter(GraphRewriter):
    """The loop rewrites of the module doc, each to a fixed point."""

    name = "scan_loop"

    def apply(self, fgraph: FunctionGraph) -> None:
        """See the module doc."""
        for step in (_push_out, _remove_unused, _keep_last, _to_reduction):
            self._each(fgraph, step)
        self._merge_all(fgraph)

    @staticmethod
    def _each(fgraph: FunctionGraph, step: Any) -> None:
        for _ in range(20):
            if not any(step(fgraph, n) for n in scans(fgraph) if n in fgraph.apply_nodes):
                return

    @staticmethod
    def _merge_all(fgraph: FunctionGraph) -> None:
        for _ in range(20):
            nodes = scans(fgraph)
            if not any(_merge(fgraph, a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]
                       if a in fgraph.apply_nodes and b in fgraph.apply_nodes):
                return


class ScanAccumulateRewriter(GraphRewriter):
    """Accumulating recurrent outputs become per-step outputs reduced after the loop (scan_module/accumulators.py),
    then the outputs and inputs left unused go."""

    name = "scan_accumulate"

    def apply(self, fgraph: FunctionGraph) -> None:
        """See the class doc."""
        for step in (accumulators.to_per_step, _remove_unused):
            ScanLoopRewriter._each(fgraph, step)


rewrite_db.register("scan_inline_inner_graphs", ScanInlineInnerGraphs(), "inline_inner_graphs", position=0.27)
rewrite_db.register("scan_inner", ScanInnerRewriter(), "fast_run", "scan", position=48)
rewrite_db.register("scan_loop", ScanLoopRewriter(), "fast_run", "fast_compile", "scan", position=48.5)
rewrite_db.register("scan_random_draws", ScanRandomDrawsRewriter(), "fast_run", "fast_compile", "scan",
                    position=48.6)      # scan_module/random_draws.py: a step's draws made before the loop
rewrite_db.register("scan_accumulate", ScanAccumulateRewriter(), "fast_run", "fast_compile", "scan", "scan_accumulate",
                    position=48.7)
rewrite_db.seal()   # sealed again with the scan rewrites: a pristine database includes them (compile/mode.py)

__all__ = ["rewrite_db", "ScanInnerRewriter", "ScanLoopRewriter", "ScanAccumulateRewriter"]
