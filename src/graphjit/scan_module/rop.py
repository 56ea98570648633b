"""Forward mode through a Scan: R_op builds one loop carrying the tangents beside the states.

The new loop's step is the old step plus the Jacobian-vector product of its outputs (``Rop`` inside the
step) given the tangents of its inputs.  Tangent inputs exist for the float sequences and non-sequences given an
eval point, every float recurrent output (its initial tangent the eval point or zeros), and a float shared state
given an eval point: its tangent enters the first step only (updates are not differentiated through, as in the
gradient, grad_shared.py).  A while loop keeps its condition, so both loops run the same steps.  The tangents
are exact: truncate_gradient, a backpropagation setting, does not apply.
"""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional

from graphjit.autodiff import rop_unchecked
from graphjit.graph.basic import Variable, clone_replace
from graphjit.scan_module.info import KEEP_LAST
from graphjit.tensor.alloc import zeros_like
from graphjit.tensor.basic import cast


def _is_float(v: Variable) -> bool:
    return getattr(v.type, "dtype", "").startswith("float")


def _like(point: Variable, x: Variable) -> Variable:
    """An eval point with x's dtype (make_node checks dtypes)."""
    return point if point.type.dtype == x.type.dtype else cast(point, x.type.dtype)


class _Tangents:
    """The tangent loop of one Scan node (see the module doc)."""

    def __init__(self, op: Any, inputs: List[Variable], points: List[Optional[Variable]]):
        self.op, self.info, self.inputs, self.points = op, op.info, inputs, points
        info = self.info
        self.seqs = [k for k, p in enumerate(info.outer_seqs()) if points[p] is not None and _is_float(inputs[p])]
        self.recs = [k for k, p in enumerate(info.outer_inits()) if _is_float(inputs[p])]
        self.nonseqs = [k for k, p in enumerate(info.outer_nonseqs())
                        if points[p] is not None and _is_float(inputs[p])]
        self.shared = [k for k, p in enumerate(info.outer_shared()) if points[p] is not None and _is_float(inputs[p])]
        self.nits = [j for j in range(info.n_rec, info.n_outs) if _is_float(op.inner_outputs[j])]

    def build(self) -> List[Optional[Variable]]:
        info, op = self.info, self.op
        inner = list(op.inner_inputs)
        fresh = [v.type() for v in inner]
        outs = clone_replace(list(op.inner_outputs), dict(zip(inner, fresh)))
        t_seq = [fresh[k].type() for k in self.seqs]
        t_tap = {k: [fresh[i].type() for i in info.inner_tap_inputs(k)] for k in self.recs}
        t_sh = [fresh[info.inner_shared()[k]].type() for k in self.shared]
        t_ns = [fresh[info.inner_nonseqs()[k]].type() for k in self.nonseqs]
        wrt = [fresh[k] for k in self.seqs] + [fresh[info.inner_shared()[k]] for k in self.shared]
        wrt += [fresh[info.inner_nonseqs()[k]] for k in self.nonseqs]
        pts = t_seq + t_sh + t_ns
        for k in self.recs:
            wrt += [fresh[i] for i in info.inner_tap_inputs(k)]
            pts += t_tap[k]
        diff = [outs[j] for j in self.recs] + [outs[j] for j in self.nits]
        tangents = list(rop_unchecked(diff, wrt, pts)) if diff and wrt else [zeros_like(o) for o in diff]
        t_rec, t_nit = tangents[:len(self.recs)], tangents[len(self.recs):]
        n_s, n_t = info.n_seqs, info.n_inner_rec_inputs
        new_in = fresh[:n_s] + t_seq + fresh[n_s:n_s + n_t] + [v for k in self.recs for v in t_tap[k]] + t_sh
        new_in += [fresh[i] for i in info.inner_shared()] + [fresh[i] for i in info.inner_nonseqs()] + t_ns
        t_rec = [_like(t, outs[j]) for t, j in zip(t_rec, self.recs)]
        new_out = outs[:info.n_rec] + t_rec + [zeros_like(v) for v in t_sh] + outs[info.n_rec:info.n_outs]
        new_out += [_like(t, outs[j]) for t, j in zip(t_nit, self.nits)] + outs[info.n_outs:]
        return self._apply(new_in, new_out)

    def _keep(self) -> tuple:
        info = self.info
        if not info.keep:
            return ()
        k = info.keep
        return (k[:info.n_rec] + tuple(k[j] for j in self.recs) + (KEEP_LAST,) * len(self.shared)
                + k[info.n_rec:info.n_outs] + tuple(k[j] for j in self.nits))

    def _apply(self, new_in: List[Variable], new_out: List[Variable]) -> List[Optional[Variable]]:
        info, ins, pts = self.info, self.inputs, self.points
        new_info = dataclasses.replace(
            info, n_seqs=info.n_seqs + len(self.seqs),
            rec_taps=info.rec_taps + tuple(info.rec_taps[k] for k in self.recs) + ((-1,),) * len(self.shared),
            n_nitsot=info.n_nitsot + len(self.nits), n_nonseqs=info.n_nonseqs + len(self.nonseqs),
            keep=self._keep(), rewritten=False, name=f"{info.name or 'scan'}_tangents")
        loop = type(self.op)(new_in, new_out, new_info, self.op._mode_object)
        seq_p, init_p = list(info.outer_seqs()), list(info.outer_inits())
        sh_p, ns_p = list(info.outer_shared()), list(info.outer_nonseqs())
        outer = [ins[0]] + [ins[p] for p in seq_p] + [_like(pts[seq_p[k]], ins[seq_p[k]]) for k in self.seqs]
        outer += [ins[p] for p in init_p]
        outer += [zeros_like(ins[init_p[k]]) if pts[init_p[k]] is None else _like(pts[init_p[k]], ins[init_p[k]])
                  for k in self.recs]
        outer += [_like(pts[sh_p[k]], ins[sh_p[k]]) for k in self.shared]
        outer += [ins[p] for p in sh_p] + [ins[p] for p in ns_p]
        outer += [_like(pts[ns_p[k]], ins[ns_p[k]]) for k in self.nonseqs]
        res = loop.make_node(*outer).outputs
        n_r, n_sh = info.n_rec + len(self.recs), len(self.shared)
        t_rec = dict(zip(self.recs, res[info.n_rec:n_r]))
        nit_start = n_r + n_sh + info.n_nitsot
        t_nit = dict(zip(self.nits, res[nit_start:nit_start + len(self.nits)]))
        result: List[Optional[Variable]] = [t_rec.get(j) for j in range(info.n_rec)]
        result += [t_nit.get(j) for j in range(info.n_rec, info.n_outs)]
        return result + [None] * info.n_shared


def scan_R_op(op: Any, inputs: List[Variable], eval_points: List[Optional[Variable]]) -> List[Optional[Variable]]:
    """The tangents of a Scan node's outputs given its inputs' (see the module doc)."""
    return _Tangents(op, inputs, eval_points).build()
