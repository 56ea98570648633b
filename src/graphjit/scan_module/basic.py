"""scan() and until: Theano's loop constructor, building a Scan node from a Python step function."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from graphjit.graph.basic import Constant, Variable, ancestors, clone_replace, graph_inputs
from graphjit.graph.shared import SharedVariable
from graphjit.scan_module.info import ScanInfo
from graphjit.scan_module.op import Scan
from graphjit.tensor.basic import as_tensor_variable, cast, NotScalarConstantError
from graphjit.tensor.elemwise import get_scalar_constant_value
from graphjit.tensor.math import minimum
from graphjit.tensor.type import TensorType


class until:  # noqa: N801  (Theano's name)
    """Returned by a scan step (alone or beside its outputs): stop after the step where condition is true."""

    def __init__(self, condition: Any):
        cond = as_tensor_variable(condition)
        if cond.ndim != 0:
            raise TypeError(f"until: the condition must be a scalar, got {cond.describe()}")
        self.condition = cond if cond.dtype == "bool" else cast(cond, "bool")


def _as_list(x: Any) -> List[Any]:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _sequence_specs(sequences: Any) -> List[Tuple[Variable, List[int]]]:
    specs = []
    for i, s in enumerate(_as_list(sequences)):
        if isinstance(s, dict):
            if "input" not in s:
                raise ValueError(f"scan: sequences[{i}] is a dict without 'input'")
            var, taps = s["input"], s.get("taps", [0])
        else:
            var, taps = s, [0]
        var = as_tensor_variable(var)
        taps = [0] if taps is None else [int(t) for t in _as_list(taps)]
        if var.ndim < 1:
            raise ValueError(f"scan: sequences[{i}] ({var.describe()}) must have at least one dimension")
        if not taps:
            raise ValueError(f"scan: sequences[{i}] ({var.describe()}) has no taps")
        if var.name is None:
            var.name = f"sequences[{i}]"
        specs.append((var, taps))
    return specs


def _output_specs(outputs_info: Any) -> List[Optional[Tuple[Variable, List[int]]]]:
    specs: List[Optional[Tuple[Variable, List[int]]]] = []
    for i, o in enumerate(_as_list(outputs_info)):
        if isinstance(o, dict):
            init, taps = o.get("initial"), o.get("taps", [-1])
            if init is None:
                specs.append(None)
                continue
        elif o is None:
            specs.append(None)
            continue
        else:
            init, taps = o, [-1]
        init = as_tensor_variable(init)
        taps = [int(t) for t in _as_list(taps)]
        if len(set(taps)) != len(taps):
            raise ValueError(f"scan: outputs_info[{i}] ({init.describe()}) has taps {taps}: each tap once")
        if not taps or any(t >= 0 for t in taps):
            raise ValueError(f"scan: outputs_info[{i}] ({init.describe()}) has taps {taps}: output taps must be "
                             "negative (a step reads earlier values of its outputs)")
        if taps != [-1] and init.ndim < 1:
            raise ValueError(f"scan: outputs_info[{i}] ({init.describe()}) with taps {taps} needs an initial "
                             f"value stacking {-min(taps)} past states along a first dimension")
        specs.append((init, taps))
    return specs


def _slice_sequence(var: Variable, taps: List[int], go_backwards: bool) -> List[Variable]:
    """One outer sequence per tap, each read at tap 0, counted as Theano counts taps.

    The window of a step always spans tap 0 (lo = min(taps, 0), hi = max(taps, 0)): step t reads
    ``var[t - lo + k]`` for tap k, and a sequence of length L gives L - (hi - lo) steps. So taps [-2, -1] on 5 rows
    run 3 steps, the first reading rows 0 and 1. go_backwards reverses each tap's slice, so tap -1 still names the
    row before tap 0 in the sequence's own order.
    """
    lo, hi = min(min(taps), 0), max(max(taps), 0)
    out = []
    for k in taps:
        start, stop = k - lo, hi - k
        # a constant negative stop, not shape[0] - stop: a sequence shorter than the window gives no step
        piece = var if start == 0 and stop == 0 else var[start:(-stop if stop else None)]
        if go_backwards:
            piece = piece[::-1]
        piece.name = var.name if len(taps) == 1 and k == 0 and not go_backwards else f"{var.name}[t{k:+d}]".replace(
            "[t+0]", "[t]")
        out.append(piece)
    return out


def _parse_step_result(result: Any) -> Tuple[List[Any], Dict[Any, Any], Optional[Variable]]:
    """(outputs, updates, until condition) from what a step function returned (Theano's forms)."""
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    outputs: List[Any] = []
    updates: Dict[Any, Any] = {}
    cond = None
    for it in items:
        if isinstance(it, until):
            cond = it.condition
        elif isinstance(it, dict):
            updates.update(it)
        elif isinstance(it, (list, tuple)) and it and all(isinstance(p, tuple) and len(p) == 2
                                                         and isinstance(p[0], SharedVariable) for p in it):
            updates.update(dict(it))
        elif isinstance(it, (list, tuple)):
            outputs.extend(it)
        elif it is not None:
            outputs.append(it)
    return outputs, updates, cond


def _n_steps(n_steps: Any, seqs: List[Variable]) -> Variable:
    if n_steps is None:
        if not seqs:
            raise ValueError("scan: give n_steps when there are no sequences")
        n = seqs[0].shape[0]
        for s in seqs[1:]:
            n = minimum(n, s.shape[0])
        return n
    n = as_tensor_variable(n_steps)
    if n.ndim != 0 or not n.dtype.startswith(("int", "uint")):
        raise TypeError(f"scan: n_steps must be an integer scalar, got {n.describe()}")
    try:
        value = int(get_scalar_constant_value(n))
    except NotScalarConstantError:
        return n
    if value < 0:
        raise ValueError(f"scan: n_steps is negative ({value})")
    return n


def _match_state(i: int, out: Any, init: Variable, stacked: bool) -> Variable:
    """The step's output i, checked against its state: same number of dimensions and same dtype (Theano's rule:
    the state's dtype is kept, never changed by a silent cast)."""
    out = as_tensor_variable(out)
    want_ndim = init.ndim - (1 if stacked else 0)
    if out.ndim != want_ndim:
        raise TypeError(f"scan: the step's output {i} ({out.describe()}) has {out.ndim} dimension(s); its "
                        f"initial value ({init.describe()}) gives states of {want_ndim}")
    if out.dtype != init.dtype:
        raise TypeError(
            f"scan: the step's output {i} is {out.dtype} but its state (outputs_info[{i}], {init.describe()}) is "
            f"{init.dtype}; a state keeps one dtype from step to step. Cast the initial state "
            f"(outputs_info[{i}] = cast(..., '{out.dtype}')) or the step's result (cast(result, '{init.dtype}'))")
    return out


def _step_shared_states(outs: List[Variable], updates: Dict[Any, Any]) -> Dict[SharedVariable, Variable]:
    """Shared variables updated by the step: explicit updates, and default updates computed in the step
    (a random stream's generator drawn from inside it)."""
    states: Dict[SharedVariable, Variable] = {}
    for sv, new in updates.items():
        if not isinstance(sv, SharedVariable):
            raise TypeError(f"scan: the step returned an update of {sv!r}, which is not a shared variable")
        states[sv] = sv.type.filter_variable(new) if hasattr(sv.type, "filter_variable") else new
    pending = [v for v in outs] + list(states.values())
    seen = set(states)
    while pending:
        step_nodes = {v.owner for v in ancestors(pending) if v.owner is not None}
        pending = []
        for v in graph_inputs(outs + list(states.values())):
            if isinstance(v, SharedVariable) and v not in seen and v.default_update is not None \
                    and v.default_update.owner in step_nodes:
                states[v] = v.default_update
                seen.add(v)
                pending.append(v.default_update)
    return states


def scan(fn: Callable[..., Any], sequences: Any = None, outputs_info: Any = None, non_sequences: Any = None,
         n_steps: Any = None, truncate_gradient: int = -1, go_backwards: bool = False, mode: Any = None,
         name: Optional[str] = None, profile: bool = False, allow_gc: Any = None, strict: bool = False,
         return_list: bool = False) -> Tuple[Any, Dict[SharedVariable, Variable]]:
    """Loop fn over sequences, feeding outputs back; returns (outputs, updates) as Theano's scan.

    fn receives, in order: each sequence's taps, each fed-back output's taps, then the non_sequences. It
    returns its outputs, optionally with a dict of shared-variable updates and an ``until(cond)``.
    """
    seq_specs = _sequence_specs(sequences)
    out_specs = _output_specs(outputs_info)
    nonseqs = [v if isinstance(v, Variable) else as_tensor_variable(v) for v in _as_list(non_sequences)]
    outer_seqs, seq_args = [], []
    for var, taps in seq_specs:
        for piece in _slice_sequence(var, taps, go_backwards):
            outer_seqs.append(piece)
            seq_args.append(TensorType(var.dtype, var.type.shape[1:])(piece.name))
    n = _n_steps(n_steps, outer_seqs)
    rec = [(i, spec) for i, spec in enumerate(out_specs) if spec is not None]
    tap_args: List[Variable] = []
    for i, (init, taps) in rec:
        stacked = taps != [-1]
        state_type = TensorType(init.dtype, init.type.shape[1:]) if stacked else init.type
        tap_args += [state_type(f"{init.name or f'outputs_info[{i}]'}[t{t}]") for t in taps]
    result = fn(*seq_args, *tap_args, *nonseqs)
    outs, updates, cond = _parse_step_result(result)
    if out_specs and len(outs) != len(out_specs):
        raise ValueError(f"scan: the step returned {len(outs)} output(s) but outputs_info has {len(out_specs)} "
                         "entries (use None for an output that is not fed back)")
    if not out_specs:
        out_specs = [None] * len(outs)
    outs = [as_tensor_variable(o) for o in outs]
    rec_outs = [_match_state(i, outs[i], init, taps != [-1]) for i, (init, taps) in rec]
    nit_outs = [o for o, spec in zip(outs, out_specs) if spec is None]
    states = _step_shared_states(rec_outs + nit_outs + ([cond] if cond is not None else []), updates)
    return _build(fn_name=name, n=n, outer_seqs=outer_seqs, seq_args=seq_args, rec=rec, tap_args=tap_args,
                  rec_outs=rec_outs, nit_outs=nit_outs, states=states, nonseqs=nonseqs, cond=cond,
                  out_specs=out_specs, truncate_gradient=truncate_gradient, mode=mode, strict=strict,
                  return_list=return_list)


def _build(fn_name: Optional[str], n: Variable, outer_seqs: List[Variable], seq_args: List[Variable],
           rec: list, tap_args: List[Variable], rec_outs: List[Variable], nit_outs: List[Variable],
           states: Dict[SharedVariable, Variable], nonseqs: List[Variable], cond: Optional[Variable],
           out_specs: list, truncate_gradient: int, mode: Any, strict: bool, return_list: bool) -> Any:
    shared_vars = list(states)
    shared_args = [sv.type(sv.name) for sv in shared_vars]
    explicit = [v for v in nonseqs if not isinstance(v, Constant)]
    explicit_args = [v.type(v.name) for v in explicit]
    inner_outs = rec_outs + nit_outs + [states[sv] for sv in shared_vars] + ([cond] if cond is not None else [])
    blockers = set(seq_args) | set(tap_args) | set(explicit) | set(shared_vars)
    free = [v for v in graph_inputs(inner_outs, blockers=list(blockers))
            if v not in blockers and not isinstance(v, Constant)]
    if strict and free:
        raise ValueError("scan(strict=True): the step reads " + ", ".join(str(v) for v in free)
                         + " without receiving them as non_sequences")
    free_args = [v.type(v.name) for v in free]
    replace = dict(zip(explicit + shared_vars + free, explicit_args + shared_args + free_args))
    inner_outs = clone_replace(inner_outs, replace) if replace else inner_outs
    info = ScanInfo(n_seqs=len(seq_args), rec_taps=tuple(tuple(taps) for _, (_, taps) in rec),
                    n_nitsot=len(nit_outs), n_shared=len(shared_vars), n_nonseqs=len(explicit) + len(free),
                    as_while=cond is not None, truncate_gradient=int(truncate_gradient), name=fn_name or "")
    op = Scan(seq_args + tap_args + shared_args + explicit_args + free_args, inner_outs, info, mode)
    inits = [init for _, (init, _) in rec]
    node = op.make_node(n, *outer_seqs, *inits, *shared_vars, *explicit, *free)
    results = list(node.outputs)
    rec_res, nit_res = results[:len(rec)], results[len(rec):info.n_outs]
    finals = results[info.n_outs:]
    ordered, r, m = [], iter(rec_res), iter(nit_res)
    for spec in out_specs:
        ordered.append(next(m) if spec is None else next(r))
    updates: Dict[SharedVariable, Variable] = {}
    for sv, final in zip(shared_vars, finals):
        updates[sv] = final
        if sv.default_update is not None and sv.default_update is states[sv]:
            sv.default_update = final          # the step's own update would read the loop's variables
    if len(ordered) == 1 and not return_list:
        return ordered[0], updates
    return ordered, updates
