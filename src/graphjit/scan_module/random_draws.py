"""Random draws taken out of a scan step: the draws of every step made at once, before the loop.

A step drawing ``normal`` or ``uniform`` samples from a generator that is one of the loop's shared states (a
``RandomStream`` draw: the generator's update comes back in ``updates``) makes the loop depend on a numpy
``Generator``, which has no native layout: the Scan would run its Python ``perform``, one step at a time. When
the draw's parameters and size do not change between steps, the ``n_steps`` draws are made by one draw of size
``(n_steps,) + size`` before the loop, whose rows become a sequence of the loop; the loop no longer holds the
generator and compiles natively. numpy fills a sample in C order, one element at a time from the generator's
stream, so step ``t`` gets exactly the numbers the step-by-step loop draws, and the generator ends in the same
state (the outer draw's new generator replaces the loop's final one).

Only ``NormalRV`` and ``UniformRV`` (numpy computes each element as ``loc + scale * z`` or
``low + (high - low) * u`` from one stream value, whatever the size; the bounded integer draws buffer bits per
call), one draw per generator per step, in ``for`` loops (a ``while`` loop's length is known only once it ran).
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

from graphjit.graph.basic import Apply, Constant, Variable, clone_replace
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import GraphRewriter, replace_pairs
from graphjit.scan_module.op import Scan
from graphjit.tensor.join import stack
from graphjit.tensor.random import NormalRV, RandomGeneratorType, UniformRV

_BATCHABLE = (NormalRV, UniformRV)


@dataclasses.dataclass
class _Draw:
    """A hoistable draw of a Scan: shared state k, its RandomVariable node, its outer parameters and size."""

    k: int
    node: Apply
    params: List[Variable]
    size: Optional[Variable]


def _outer_of(node: Apply) -> Dict[Variable, Variable]:
    """Inner non-sequence input -> outer value."""
    info, inner = node.op.info, node.op.inner_inputs
    return {inner[i]: node.inputs[p] for i, p in zip(info.inner_nonseqs(), info.outer_nonseqs())}


def _invariant(var: Variable, outer_of: Dict[Variable, Variable]) -> Optional[Variable]:
    """var's outer value when it is a constant or a non-sequence, else None."""
    if isinstance(var, Constant):
        return var
    return outer_of.get(var)


def _find_draw(node: Apply, k: int) -> Optional[_Draw]:
    """Shared state k of node as a hoistable draw (see the module doc), or None."""
    op, info = node.op, node.op.info
    g_in = op.inner_inputs[info.inner_shared()[k]]
    g_out = op.inner_outputs[info.n_outs + k]
    if not isinstance(g_in.type, RandomGeneratorType):
        return None
    rv = g_out.owner
    if rv is None or type(rv.op) not in _BATCHABLE or rv.inputs[0] is not g_in or rv.outputs[0] is not g_out:
        return None
    clients = op.fgraph.clients
    if len(clients.get(g_in, ())) != 1 or len(clients.get(g_out, ())) != 1:
        return None                     # the generator is read twice in a step (two draws, or kept as a value)
    outer_of = _outer_of(node)
    rest = [_invariant(v, outer_of) for v in rv.inputs[1:]]
    if any(v is None for v in rest):
        return None
    size = rest[0] if rv.op.has_size else None
    params = rest[1:] if rv.op.has_size else rest
    if size is None and any(p.ndim for p in params):
        return None                     # a sample shaped by its parameters: left to the loop
    return _Draw(k, rv, params, size)


def _batched(node: Apply, draw: _Draw) -> tuple[Variable, Variable]:
    """The outer draw of every step's sample at once: (new generator, samples of shape (n_steps,) + size)."""
    n = node.inputs[0]
    g_outer = node.inputs[node.op.info.outer_shared()[draw.k]]
    lengths = [n]
    if draw.size is not None:
        lengths += [draw.size[i] for i in range(draw.size.type.shape[0])]
    op = draw.node.op
    batched = type(op)(**{name: getattr(op, name) for name in op.__props__} | {"has_size": True, "inplace": False})
    new_g, samples = batched.make_node(g_outer, stack(lengths), *draw.params).outputs
    return new_g, samples


def _hoist(fgraph: FunctionGraph, node: Apply, draw: _Draw) -> bool:
    """Rebuild node with draw's samples as one more sequence and without its generator."""
    op, info = node.op, node.op.info
    iin, iout = op.inner_inputs, op.inner_outputs
    new_g, samples = _batched(node, draw)
    sample = draw.node.outputs[1]
    row = sample.type(sample.name)
    shared_in = [iin[i] for j, i in enumerate(info.inner_shared()) if j != draw.k]
    shared_out = [iout[info.n_outs + j] for j in range(info.n_shared) if j != draw.k]
    kept = iout[:info.n_outs] + shared_out + ([iout[-1]] if info.as_while else [])
    new_inner_out = clone_replace(kept, {sample: row})
    n_taps = info.n_inner_rec_inputs
    new_inner_in = (iin[:info.n_seqs] + [row] + iin[info.n_seqs:info.n_seqs + n_taps] + shared_in
                    + [iin[i] for i in info.inner_nonseqs()])
    new_info = dataclasses.replace(info, n_seqs=info.n_seqs + 1, n_shared=info.n_shared - 1)
    new_op = Scan(new_inner_in, new_inner_out, new_info, op._mode_object)
    ins = node.inputs
    shared_outer = [ins[p] for j, p in enumerate(info.outer_shared()) if j != draw.k]
    new_node = new_op.make_node(ins[0], *[ins[p] for p in info.outer_seqs()], samples,
                                *[ins[p] for p in info.outer_inits()], *shared_outer,
                                *[ins[p] for p in info.outer_nonseqs()])
    news = list(new_node.outputs)
    old = node.outputs
    pairs = list(zip(old[:info.n_outs], news[:info.n_outs]))
    shared_news = iter(news[info.n_outs:])
    for j in range(info.n_shared):
        pairs.append((old[info.n_outs + j], new_g if j == draw.k else next(shared_news)))
    pairs = [(o, v) for o, v in pairs if o in fgraph.variables]
    return replace_pairs(fgraph, pairs, "scan_random_draws") if pairs else False


class ScanRandomDrawsRewriter(GraphRewriter):
    """Take each hoistable random draw out of its scan step (module doc)."""

    name = "scan_random_draws"

    def apply(self, fgraph: FunctionGraph) -> None:
        """See the module doc."""
        for _ in range(20):
            if not self._once(fgraph):
                return

    @staticmethod
    def _once(fgraph: FunctionGraph) -> bool:
        for node in fgraph.toposort():
            if not isinstance(node.op, Scan) or node.op.info.as_while:
                continue
            for k in range(node.op.info.n_shared):
                draw = _find_draw(node, k)
                if draw is not None and _hoist(fgraph, node, draw):
                    return True
        return False


__all__ = ["ScanRandomDrawsRewriter"]
