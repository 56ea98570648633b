"""A Scan node taken apart into its groups (sequences, recurrent and per-step outputs, shared states,
non-sequences) and rebuilt after a rewrite changed them (scan_module/rewriting.py, scan_module/accumulators.py)."""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional, Sequence, Tuple

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.basic import replace_pairs
from graphjit.scan_module.info import ScanInfo
from graphjit.scan_module.op import Scan
from graphjit.tensor.shape import reshape, shape_i


def scans(fgraph: FunctionGraph) -> List[Apply]:
    """The Scan nodes of fgraph, in topological order."""
    return [n for n in fgraph.toposort() if isinstance(n.op, Scan)]


def with_info(info: ScanInfo, **changes: Any) -> ScanInfo:
    """info with some fields changed."""
    return dataclasses.replace(info, **changes)


def replace_outputs(fgraph: FunctionGraph, node: Apply, new_outputs: Sequence[Optional[Variable]], why: str) -> bool:
    """Replace node's outputs by new_outputs (None: keep), validated; False if nothing was replaced."""
    pairs = [(o, n) for o, n in zip(node.outputs, new_outputs) if n is not None and o in fgraph.variables]
    return replace_pairs(fgraph, pairs, why) if pairs else False


@dataclasses.dataclass
class Parts:
    """A Scan node taken apart: per group, (outer input, inner inputs) and the outputs."""

    n: Variable
    seqs: List[Tuple[Variable, Variable]]
    recs: List[Tuple[Variable, Tuple[int, ...], List[Variable], Variable, Variable, int]]  # init, taps, ins, out, var, keep
    nits: List[Tuple[Variable, Variable, int]]                                             # inner out, outer var, keep
    shared: List[Tuple[Variable, Variable, Variable, Variable]]                            # outer, inner in, inner out, var
    nonseqs: List[Tuple[Variable, Variable]]
    cond: Optional[Variable]
    info: ScanInfo
    mode: Any

    @classmethod
    def of(cls, node: Apply) -> "Parts":
        """Split node."""
        op, info, ins, outs = node.op, node.op.info, node.inputs, node.outputs
        iin, iout = op.inner_inputs, op.inner_outputs
        seqs = [(ins[p], iin[k]) for k, p in enumerate(info.outer_seqs())]
        recs = [(ins[p], info.rec_taps[k], [iin[i] for i in info.inner_tap_inputs(k)], iout[k], outs[k],
                 info.keep_of(k)) for k, p in enumerate(info.outer_inits())]
        nits = [(iout[j], outs[j], info.keep_of(j)) for j in range(info.n_rec, info.n_outs)]
        shared = [(ins[p], iin[info.inner_shared()[k]], iout[info.n_outs + k], outs[info.n_outs + k])
                  for k, p in enumerate(info.outer_shared())]
        nonseqs = [(ins[p], iin[info.inner_nonseqs()[k]]) for k, p in enumerate(info.outer_nonseqs())]
        return cls(ins[0], seqs, recs, nits, shared, nonseqs, iout[-1] if info.as_while else None, info,
                   op._mode_object)

    def build(self) -> Tuple[Apply, List[Variable]]:
        """A new Scan node from the parts; also the old output variables in the new node's output order."""
        info = with_info(self.info, n_seqs=len(self.seqs), rec_taps=tuple(r[1] for r in self.recs),
                     n_nitsot=len(self.nits), n_shared=len(self.shared), n_nonseqs=len(self.nonseqs),
                     keep=tuple(r[5] for r in self.recs) + tuple(m[2] for m in self.nits))
        inner_in = ([s[1] for s in self.seqs] + [i for r in self.recs for i in r[2]] + [s[1] for s in self.shared]
                    + [s[1] for s in self.nonseqs])
        inner_out = ([r[3] for r in self.recs] + [m[0] for m in self.nits] + [s[2] for s in self.shared]
                     + ([self.cond] if self.cond is not None else []))
        op = Scan(inner_in, inner_out, info, self.mode)
        node = op.make_node(self.n, *[s[0] for s in self.seqs], *[r[0] for r in self.recs],
                            *[s[0] for s in self.shared], *[s[0] for s in self.nonseqs])
        old = [r[4] for r in self.recs] + [m[1] for m in self.nits] + [s[3] for s in self.shared]
        return node, old


def sequence_rows(seq: Variable, n: Variable) -> Variable:
    """seq's first n rows, checked to be n (a Scan checks its sequences' lengths; a slice alone would silently be
    shorter): a reshape to (n, ...) is a view when seq is contiguous, a C-ordered copy otherwise."""
    return reshape(seq[:n], [n] + [shape_i(seq, d) for d in range(1, seq.type.ndim)], ndim=seq.type.ndim)


def rebuild(fgraph: FunctionGraph, parts: Parts, why: str) -> bool:
    node, old = parts.build()
    pairs = [(o, n) for o, n in zip(old, node.outputs) if o in fgraph.variables and fgraph.clients.get(o)]
    return replace_pairs(fgraph, pairs, why) if pairs else True


__all__ = ["Parts", "scans", "with_info", "replace_outputs", "rebuild", "sequence_rows"]
