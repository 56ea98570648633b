"""Backpropagation through time: a Scan's L_op is another Scan running the step's vector-Jacobian product backwards.

The backward loop reads, step t = n-1 .. 0, the forward step's inputs (sequences, the states it read, rebuilt
from the stored outputs and the initial values), the gradients arriving on step t's outputs, and carries
* per recurrent output k, the gradient still owed to the states the next steps back will produce ("pending":
  the state itself for taps [-1], a stack of depth(k) states for deeper taps);
* per non-sequence, the sum of its gradients so far (kept as the last state only: O(1) memory).
It emits the gradient of each sequence element per step. truncate_gradient = k > 0 runs only the last k steps.

A while loop (``until``) ran k <= n_steps steps, the length of its outputs: the backward loop runs those k steps
(the condition gets no gradient: the number of steps is piecewise constant).  A step updating shared variables:
see scan_module/grad_shared.py (the updates are not differentiated through).

Scan.L_op calls scan_L_op, registered with scan_module/op.py when this module is imported (scan_module/__init__.py
imports it): the backward loop is built with scan(), whose module imports op.py.
"""

from __future__ import annotations

from typing import Any, List

from graphjit.autodiff import grad
from graphjit.graph.basic import Variable, clone_get_equiv, clone_replace, graph_inputs
from graphjit.graph.grad_markers import disconnected_type, grad_not_implemented
from graphjit.scan_module import grad_shared
from graphjit.scan_module.basic import scan
from graphjit.scan_module.info import KEEP_ALL, KEEP_LAST, KEEP_LAST_OR_EMPTY
from graphjit.scan_module.op import register_l_op
from graphjit.tensor.alloc import zeros_like
from graphjit.tensor.basic import cast
from graphjit.tensor.join import concatenate, stack
from graphjit.tensor.math import le, minimum, switch
from graphjit.tensor.subtensor import set_subtensor


def _is_float(v: Variable) -> bool:
    return getattr(v.type, "dtype", "").startswith(("float", "complex"))     # complex: dC/dx + i dC/dy


def scan_L_op(op: Any, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]) -> List[Any]:
    """The gradients of a Scan node's inputs given its outputs' (see the module doc)."""
    info = op.info
    if info.n_shared and not all(grad_shared.no_gradient(g) for g in grads[info.n_outs:]):
        return [grad_not_implemented(op, i, x, "the cost depends on the final value of a shared variable the "
                                     "scan step updates: updates are not differentiated through")
                for i, x in enumerate(inputs)]
    if info.n_outs == 0:
        return [disconnected_type() for _ in inputs]
    if any(info.keep_of(j) != KEEP_ALL for j in range(info.n_outs)):
        return _through_full_history(op, inputs, outputs, grads)
    try:
        return _Backward(op, inputs, outputs, grads).build()
    except grad_shared.CutNotStorable as e:
        return [grad_not_implemented(op, i, x, str(e)) for i, x in enumerate(inputs)]


def _history(op: Any, k: int, init: Variable, ys: Variable) -> Variable:
    """Recurrent output k's states, oldest first: the initial rows then every step's output."""
    d = op.info.depth(k)
    first = init[:d] if op.info.stacked_init(k) else init[None]
    return concatenate([first, ys], axis=0)


def _through_full_history(op: Any, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]
                          ) -> List[Any]:
    """Outputs kept as their last state only: differentiate the same loop storing every step, through the
    expression giving the kept value from the full history."""
    from_op = op.with_info(keep=())
    full = from_op.make_node(*inputs).outputs
    kept, gs = [], []
    for j in range(op.info.n_outs):
        keep, g = op.info.keep_of(j), grads[j]
        if keep == KEEP_ALL:
            kept.append(full[j])
        elif j < op.info.n_rec and keep == KEEP_LAST:
            kept.append(_history(op, j, inputs[op.info.outer_inits()[j]], full[j])[-1:])
        else:
            kept.append(full[j][-1:] if keep == KEEP_LAST_OR_EMPTY else full[j][-1:])
        gs.append(g)
    # an input appearing at several positions gets its whole gradient at the first only (the caller sums them);
    # the walk stops at the inputs (consider_constant): one computed from another must not pass its gradient on,
    # the caller does that
    unique = list(dict.fromkeys(inputs[1:]))
    result = grad(None, unique, known_grads=dict(zip(kept, gs)), consider_constant=unique,
                           disconnected_inputs="ignore", return_disconnected="Disconnected")
    first = dict(zip(unique, result))
    return [disconnected_type()] + [first.pop(v) if v in first else disconnected_type() for v in inputs[1:]]


class _Backward:
    """Builds the backward Scan of one forward node."""

    def __init__(self, op: Any, inputs: List[Variable], outputs: List[Variable], grads: List[Variable]):
        self.op, self.info = op, op.info
        self.inputs, self.outputs = inputs, outputs
        self.grads = [g if g is not None and getattr(g.type, "dtype", None) else zeros_like(o)
                      for g, o in zip(grads[:op.info.n_outs], outputs[:op.info.n_outs])]
        # a while loop ran as many steps as its outputs have rows (all of them: keep is KEEP_ALL here)
        self.n = outputs[0].shape[0] if op.info.as_while else inputs[0]
        self.cut: List[Variable] = []          # grad_shared: forward values recorded per step
        self.diff_shared = [i for i, p in enumerate(op.info.outer_shared()) if _is_float(inputs[p])]

    def _window(self, seq: Variable, start: Variable) -> Variable:
        """seq[start + n - nb : start + n]: the steps the backward loop visits (all, or the last nb)."""
        return seq[start + self.n - self.nb:start + self.n]

    def build(self) -> List[Any]:
        info, ins = self.info, self.inputs
        tr = info.truncate_gradient
        self.nb = minimum(self.n, tr) if tr > 0 else self.n
        zero = self.n - self.n
        seqs = [self._window(ins[p], zero) for p in info.outer_seqs()]
        hist_taps = []
        for k in range(info.n_rec):
            h = _history(self.op, k, ins[info.outer_inits()[k]], self.outputs[k])
            d = info.depth(k)
            hist_taps += [self._window(h, zero + (d + tap)) for tap in info.rec_taps[k]]
        out_grads = [self._window(g, zero) for g in self.grads]
        # the forward's own step outputs, so the gradient reads y_t instead of recomputing it (tanh's gradient
        # needs only its output: the step's product then drops out of the backward loop)
        self.reused = [j for j in range(info.n_outs) if _is_float(self.outputs[j])]
        out_grads += [self._window(self.outputs[j], zero) for j in self.reused]
        pending0 = [self._pending_init(k) for k in range(info.n_rec)]
        nonseqs = [ins[p] for p in info.outer_nonseqs()]
        self.diff_nonseqs = [i for i, v in enumerate(nonseqs) if _is_float(v)]
        acc0 = [zeros_like(nonseqs[i]) for i in self.diff_nonseqs]
        shared0 = [zeros_like(ins[info.outer_shared()[i]]) for i in self.diff_shared]
        cut_seqs = []
        if info.n_shared:
            self.cut = grad_shared.find_cut(self, seqs + hist_taps + out_grads, pending0, nonseqs)
            cut_seqs = [self._window(c, zero) for c in grad_shared.record(self.op, ins, self.cut)]
        n_seq_args = len(seqs) + len(hist_taps) + len(out_grads) + len(cut_seqs)
        outs, _ = scan(lambda *a: self._step(list(a), n_seq_args, nonseqs),
                                   sequences=seqs + hist_taps + out_grads + cut_seqs,
                                   outputs_info=pending0 + acc0 + shared0 + [None] * len(seqs),
                                   non_sequences=nonseqs, n_steps=self.nb, go_backwards=True,
                                   name=f"grad_of_{info.name or 'scan'}", return_list=True)
        outs = _keep_last(outs, info.n_rec + len(acc0) + len(shared0))
        return self._input_grads(outs, nonseqs)

    def _pending_init(self, k: int) -> Variable:
        init = self.inputs[self.info.outer_inits()[k]]
        state = init[0] if self.info.stacked_init(k) else init
        if self.info.depth(k) == 1:
            return zeros_like(state)
        return zeros_like(init[:self.info.depth(k)])

    def _step(self, args: List[Variable], n_seq_args: int, nonseqs: List[Variable]) -> List[Variable]:
        info = self.info
        n_s, n_t, n_y = info.n_seqs, info.n_inner_rec_inputs, len(self.reused)
        xs, taps = args[:n_s], args[n_s:n_s + n_t]
        gouts = args[n_s + n_t:n_s + n_t + info.n_outs]
        ys = args[n_s + n_t + info.n_outs:n_s + n_t + info.n_outs + n_y]
        cuts = args[n_s + n_t + info.n_outs + n_y:n_seq_args]
        n_acc, n_sh = len(self.diff_nonseqs), len(self.diff_shared)
        carried = args[n_seq_args:n_seq_args + info.n_rec + n_acc + n_sh]
        pend, accs = carried[:info.n_rec], carried[info.n_rec:info.n_rec + n_acc]
        gs = self.step_grads(xs, taps, gouts, ys, pend, nonseqs, cuts)
        g_xs, g_taps = gs[:n_s], gs[n_s:n_s + n_t]
        g_ps, g_sh = gs[n_s + n_t:n_s + n_t + n_acc], gs[n_s + n_t + n_acc:]
        new_pend = [self._shift(k, pend[k], [g_taps[i - n_s] for i in info.inner_tap_inputs(k)], taps, n_s)
                    for k in range(info.n_rec)]
        new_acc = [a + g for a, g in zip(accs, g_ps)]
        # a shared state's gradient is that of the value read by the first step (later reads are updated
        # values, not differentiated through): the backward loop visits the first step last
        new_states = [_as_dtype(v, s.dtype) for v, s in zip(new_pend + new_acc + list(g_sh), carried)]
        return new_states + list(g_xs)

    def step_grads(self, xs: List[Variable], taps: List[Variable], gouts: List[Variable], ys: List[Variable],
                   pend: List[Variable], nonseqs: List[Variable], cuts: Any) -> Any:
        """The gradients of one step's sequences, taps, differentiable non-sequences and shared states.
        cuts None: the forward variables (depending on shared states) these gradients read (grad_shared)."""
        info = self.info
        n_s, n_t = info.n_seqs, info.n_inner_rec_inputs
        inner = self.op.inner_inputs
        replace = dict(zip(inner[:n_s + n_t], xs + taps))
        replace.update({inner[p]: nonseqs[k] for k, p in enumerate(info.inner_nonseqs())})
        outs, equiv = _clone(list(self.op.inner_outputs[:info.n_outs]), replace)
        known = {}
        for j, o in enumerate(outs):
            if not _is_float(o):
                continue                    # integer outputs carry no gradient
            g = gouts[j]
            if j < info.n_rec:
                g = g + (pend[j] if info.depth(j) == 1 else pend[j][0])
            known[o] = g
        shared_in = [inner[p] for p in info.inner_shared()]
        wrt = [v for v in xs + taps if _is_float(v)] + [nonseqs[i] for i in self.diff_nonseqs]
        wrt += [shared_in[i] for i in self.diff_shared]
        # consider_constant: a non-sequence computed from another (W and 2 * W) passes nothing on to it here
        got = iter(grad(None, wrt, known_grads=known, consider_constant=wrt, disconnected_inputs="ignore",
                                 return_disconnected="zero") if known and wrt else [zeros_like(v) for v in wrt])
        gs = [next(got) if _is_float(v) else zeros_like(v) for v in xs + taps]
        gs += list(got)
        stored = {outs[j]: y for j, y in zip(self.reused, ys) if outs[j].type == y.type and outs[j].owner}
        if cuts is None:
            return grad_shared.cut_of(gs, stored, equiv, shared_in)
        stored.update({equiv[c]: v for c, v in zip(self.cut, cuts)})
        gs = clone_replace(gs, stored) if stored else gs
        if shared_in and set(shared_in) & set(graph_inputs(gs)):
            raise grad_shared.CutNotStorable("the backward step of a scan updating shared variables would read a "
                                             "shared state that could not be recorded per step")
        return gs

    def _shift(self, k: int, pend: Variable, g_taps: List[Variable], taps: List[Variable], n_s: int) -> Variable:
        d = self.info.depth(k)
        by_tap = dict(zip(self.info.rec_taps[k], g_taps))
        if d == 1:
            return by_tap[-1]
        rows = []
        for i in range(d):
            row = pend[i + 1] if i + 1 < d else zeros_like(pend[0])
            if -(i + 1) in by_tap:
                row = row + by_tap[-(i + 1)]
            rows.append(row)
        return stack(rows)

    def _input_grads(self, outs: List[Variable], nonseqs: List[Variable]) -> List[Any]:
        info, ins = self.info, self.inputs
        n_acc = len(self.diff_nonseqs)
        n_carried = info.n_rec + n_acc + len(self.diff_shared)
        pend, accs, gseqs = outs[:info.n_rec], outs[info.n_rec:info.n_rec + n_acc], outs[n_carried:]
        result: List[Any] = [disconnected_type()]
        for i, p in enumerate(info.outer_seqs()):
            if not _is_float(ins[p]):
                result.append(disconnected_type())
                continue
            full = zeros_like(ins[p])
            result.append(set_subtensor(full[self.n - self.nb:self.n], gseqs[i][::-1]))
        tr = info.truncate_gradient
        for k, p in enumerate(info.outer_inits()):
            if not _is_float(ins[p]):
                result.append(disconnected_type())
                continue
            g = pend[k]
            if tr > 0:
                g = switch(le(self.n, tr), g, zeros_like(g))
            if info.stacked_init(k):
                d = info.depth(k)
                g = set_subtensor(zeros_like(ins[p])[:d], g[::-1]) if d > 1 else \
                    set_subtensor(zeros_like(ins[p])[:1], g[None])
            result.append(g)
        shared_of = dict(zip(self.diff_shared, outs[info.n_rec + n_acc:info.n_rec + n_acc + len(self.diff_shared)]))
        for i in range(info.n_shared):
            g = shared_of.get(i)
            if g is not None and tr > 0:
                g = switch(le(self.n, tr), g, zeros_like(g))
            result.append(disconnected_type() if g is None else g)
        acc_of = dict(zip(self.diff_nonseqs, accs))
        for i, v in enumerate(nonseqs):
            result.append(acc_of[i] if i in acc_of else disconnected_type())
        return result


def _clone(outputs: List[Variable], replace: dict) -> tuple:
    """clone_replace(outputs, replace) and the map from every original Variable to its copy."""
    memo: dict = dict(replace)
    for v in graph_inputs(outputs, blockers=list(replace)):
        memo.setdefault(v, v)
    memo = clone_get_equiv(list(memo), outputs, copy_inputs=False, copy_orphans=False, memo=memo)
    return [memo[o] for o in outputs], memo


def _as_dtype(v: Variable, dtype: str) -> Variable:
    """v in a backward state's dtype (a gradient has its variable's dtype; scan() refuses any other)."""
    return v if v.dtype == dtype else cast(v, dtype)


def _keep_last(outs: List[Variable], n_last: int) -> List[Variable]:
    """The first n_last outputs of the backward Scan kept as their last state only (KEEP_LAST): index 0 of
    each is the final carried value (the initial one when no step ran)."""
    node = outs[0].owner
    op = node.op
    keep = tuple(KEEP_LAST if j < n_last else KEEP_ALL for j in range(op.info.n_outs))
    new = op.with_info(keep=keep).make_node(*node.inputs).outputs
    return [new[j][0] if j < n_last else new[j] for j in range(len(outs))]



register_l_op(scan_L_op)
