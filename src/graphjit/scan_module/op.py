"""The Scan op: a loop whose body is an inner FunctionGraph; PY perform and shapes (gradients:
scan_module/grad.py, registered here; forward mode: scan_module/rop.py)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.compile_hook import build_function
from graphjit.graph.op import Op
from graphjit.scan_module import empty
from graphjit.scan_module.info import KEEP_ALL, KEEP_LAST, ScanInfo
from graphjit.scan_module.inner import graph_key, inner_fgraph
from graphjit.scan_module.rop import scan_R_op
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.type import TensorType

# Scan's L_op builds the backward loop with scan() (scan_module/basic.py, which imports this module):
# scan_module/grad.py registers it here when imported, and scan_module/__init__.py, which runs before any of the
# package's modules, imports grad.py.
_L_OP: Dict[str, Callable[..., List[Variable]]] = {}


def register_l_op(l_op: Callable[..., List[Variable]]) -> None:
    """Set the function computing a Scan node's L_op: ``l_op(op, inputs, outputs, output_grads)``."""
    _L_OP["l_op"] = l_op


class Scan(Op):
    """Runs an inner graph n_steps times, feeding outputs back (see ScanInfo for the inputs' order)."""

    __props__ = ("info", "key", "mode")

    def __init__(self, inputs: Sequence[Variable], outputs: Sequence[Variable], info: ScanInfo,
                 mode: Any = None):
        self.fgraph = inner_fgraph(inputs, outputs)
        self.info = info
        _check_states(self.fgraph.inputs, self.fgraph.outputs, info)
        self.mode = _mode_token(mode)
        self._mode_object = mode
        self.key = graph_key(self.fgraph)
        self._fn: Any = None

    def __getstate__(self) -> dict:
        caches = ("_fn", "_native_plan", "_empty_shape_fns", "_native_empty_plans")     # rebuilt on use
        return {k: v for k, v in self.__dict__.items() if k not in caches} | {"_fn": None}

    def __str__(self) -> str:
        keep = "" if not any(self.info.keep) else ",keep=" + "".join(str(k) for k in self.info.keep)
        kind = "while" if self.info.as_while else "for"
        return f"Scan{{{self.info.name or 'scan'},{kind}{keep}}}"

    @property
    def inner_inputs(self) -> List[Variable]:
        """The inner graph's inputs (ScanInfo's order)."""
        return self.fgraph.inputs

    @property
    def inner_outputs(self) -> List[Variable]:
        """The inner graph's outputs (recurrent, nit-sot, shared states, then the until condition)."""
        return self.fgraph.outputs

    def with_info(self, **changes: Any) -> "Scan":
        """The same loop with some ScanInfo fields changed (rewrites use it)."""
        fields = {f: getattr(self.info, f) for f in self.info.__dataclass_fields__}
        fields.update(changes)
        return Scan(self.inner_inputs, self.inner_outputs, ScanInfo(**fields), self._mode_object)

    # ---------------------------------------------------------------- node
    def make_node(self, *outer: Any) -> Apply:
        info = self.info
        n_in = 1 + info.n_seqs + info.n_rec + info.n_shared + info.n_nonseqs
        if len(outer) != n_in:
            raise TypeError(f"{self}: expected {n_in} inputs, got {len(outer)}")
        n_steps = as_tensor_variable(outer[0])
        if n_steps.ndim != 0 or not n_steps.dtype.startswith(("int", "uint")):
            raise TypeError(f"{self}: n_steps must be an integer scalar, got {n_steps.describe()}")
        n_steps = cast(n_steps, "int64") if n_steps.dtype != "int64" else n_steps
        ins = [n_steps] + [as_tensor_variable(v) if not isinstance(v, Variable) else v for v in outer[1:]]
        inner = self.inner_inputs
        for k, pos in enumerate(info.outer_seqs()):
            self._check(ins[pos], inner[k], 1, f"sequence {k}")
        for k, pos in enumerate(info.outer_inits()):
            tap_input = inner[info.inner_tap_inputs(k)[0]]
            self._check(ins[pos], tap_input, 1 if info.stacked_init(k) else 0, f"initial state of output {k}")
        for k, pos in enumerate(info.outer_shared()):
            if ins[pos].type != inner[info.inner_shared()[k]].type:
                raise TypeError(f"{self}: shared state {k} has type {ins[pos].type}, the step expects "
                                f"{inner[info.inner_shared()[k]].type}")
        for k, pos in enumerate(info.outer_nonseqs()):
            self._check(ins[pos], inner[info.inner_nonseqs()[k]], 0, f"non-sequence {k}")
        return Apply(self, ins, self._output_types(ins))

    def _check(self, outer: Variable, inner: Variable, extra: int, what: str) -> None:
        ot, it = outer.type, inner.type
        if isinstance(it, TensorType):
            if not isinstance(ot, TensorType) or ot.dtype != it.dtype or ot.ndim != it.ndim + extra:
                want = f"{it.dtype} with {it.ndim + extra} dimension(s)"
                raise TypeError(f"{self}: {what} ({outer.describe()}) must be a {want}")
        elif ot != it:
            raise TypeError(f"{self}: {what} ({outer}) has type {ot}, expected {it}")

    def _output_types(self, ins: List[Variable]) -> List[Any]:
        info, outs = self.info, self.inner_outputs
        types = []
        for j in range(info.n_outs):
            t = outs[j].type
            keep = info.keep_of(j)
            first = None if keep != KEEP_LAST else 1
            if j < info.n_rec:
                t = self.inner_inputs[info.inner_tap_inputs(j)[0]].type
            types.append(TensorType(t.dtype, (first,) + tuple(t.shape))())
        for pos in info.outer_shared():
            types.append(ins[pos].type())
        return types

    # ---------------------------------------------------------------- PY
    def step_function(self) -> Any:
        """The inner graph compiled once (op.mode, else PY): f(*inner inputs) -> list of inner outputs."""
        if self._fn is None:
            mode = self._mode_object if self._mode_object is not None else "PY"
            self._fn = build_function(self.inner_inputs, list(self.inner_outputs), mode=mode,
                                      on_unused_input="ignore")
        return self._fn

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        from_scan = _Run(self, node, inputs)
        results = from_scan.run()
        for cell, value in zip(out, results):
            cell[0] = value

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        info = self.info
        n = node.inputs[0]
        result: List[Optional[tuple]] = []
        for j in range(info.n_outs):
            keep = info.keep_of(j)
            if info.as_while or j >= info.n_rec or keep != KEEP_ALL:
                result.append(None)     # known only when the loop has run
                continue
            init = shapes[info.outer_inits()[j]]
            result.append((n,) + tuple(init[1:] if info.stacked_init(j) else init))
        result += [None] * info.n_shared
        return result

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        n_out = len(node.outputs)
        rows = [[False] * n_out]                       # n_steps
        rows += [[True] * n_out for _ in range(len(node.inputs) - 1)]
        return rows

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             grads: Sequence[Variable]) -> List[Variable]:
        """Backpropagation through time (scan_module/grad.py)."""
        return _L_OP["l_op"](self, list(inputs), list(outputs), list(grads))

    def R_op(self, inputs: Sequence[Variable], eval_points: Sequence[Optional[Variable]]) -> List[Optional[Variable]]:
        """Forward mode: one loop carrying the tangents beside the states (scan_module/rop.py)."""
        return scan_R_op(self, list(inputs), list(eval_points))


def _check_states(inputs: Sequence[Variable], outputs: Sequence[Variable], info: ScanInfo) -> None:
    """A recurrent output and the taps reading it back have one dtype (Theano's inner-graph check): the loop
    never casts a state between steps."""
    for k in range(info.n_rec):
        out = outputs[k]
        for pos in info.inner_tap_inputs(k):
            tap = inputs[pos]
            if getattr(out.type, "dtype", None) != getattr(tap.type, "dtype", None):
                raise TypeError(f"Scan{{{info.name or 'scan'}}}: recurrent output {k} is {out.type} but its "
                                f"state, read back as {tap}, is {tap.type}; they must have the same dtype")


def _mode_token(mode: Any) -> Any:
    """What a Scan's mode contributes to its identity: a name as given; a Mode by its linker, rewriter and tags
    (objects among them by identity), so loops meant to compile differently never merge."""
    if mode is None or isinstance(mode, str):
        return mode
    linker = getattr(mode, "_linker_name", None) or getattr(mode, "_linker", None)
    parts = (linker, getattr(mode, "provided_rewriter", None), getattr(mode, "include", None),
             getattr(mode, "exclude", None), getattr(mode, "require", None))
    try:
        hash(parts)
    except TypeError:
        return ("mode", id(mode))
    return (type(mode).__name__,) + parts


class _Run:
    """One execution of a Scan node in Python (the reference semantics)."""

    def __init__(self, op: Scan, node: Apply, inputs: Sequence[Any]):
        self.op, self.node, self.info = op, node, op.info
        self.inputs = list(inputs)

    def _where(self) -> str:
        return f"{self.op} (scan{' ' + repr(self.info.name) if self.info.name else ''})"

    def run(self) -> List[Any]:
        info, ins = self.info, self.inputs
        n = int(ins[0])
        if n < 0:
            raise ValueError(f"{self._where()}: n_steps is negative ({n})")
        seqs = [ins[p] for p in info.outer_seqs()]
        for k, s in enumerate(seqs):
            if s.shape[0] < n:
                var = self.node.inputs[1 + k]
                raise ValueError(f"{self._where()}: sequence {k} ({var.describe()}) has {s.shape[0]} steps, "
                                 f"fewer than n_steps = {n}")
        history = [self._initial_history(k) for k in range(info.n_rec)]
        shared = [ins[p] for p in info.outer_shared()]
        nonseqs = [ins[p] for p in info.outer_nonseqs()]
        stored: List[List[Any]] = [[] for _ in range(info.n_outs)]
        fn = self.op.step_function() if n else None
        done = 0
        for t in range(n):
            args = [s[t] for s in seqs]
            for k in range(info.n_rec):
                d = info.depth(k)
                args += [history[k][d + tap] for tap in info.rec_taps[k]]
            args += shared + nonseqs
            outs = fn(*args)
            outs = outs if isinstance(outs, (list, tuple)) else [outs]
            for j in range(info.n_outs):
                value = self._checked(j, outs[j], history, t)
                if j < info.n_rec:
                    history[j] = history[j][1:] + [value]
                if info.keep_of(j) == KEEP_ALL:
                    stored[j].append(value)
                else:
                    stored[j] = [value]
            shared = list(outs[info.n_outs:info.n_outs + info.n_shared])
            done = t + 1
            if info.as_while and bool(np.asarray(outs[-1])):
                break
        empty_args = None if n else empty.placeholder_args(info, seqs, history, shared, nonseqs)
        return self._outputs(stored, history, shared, done, empty_args)

    def _initial_history(self, k: int) -> List[Any]:
        info = self.info
        init = np.asarray(self.inputs[info.outer_inits()[k]])
        d = info.depth(k)
        if not info.stacked_init(k):
            return [init]
        if init.shape[0] < d:
            var = self.node.inputs[info.outer_inits()[k]]
            raise ValueError(f"{self._where()}: the initial value of output {k} ({var.describe()}) has "
                             f"{init.shape[0]} rows; taps {list(info.rec_taps[k])} need {d}")
        return [init[i] for i in range(d)]

    def _checked(self, j: int, value: Any, history: List[List[Any]], t: int) -> Any:
        var = self.node.outputs[j]
        value = np.asarray(value)
        if value.dtype != var.type.dtype:
            value = value.astype(var.type.dtype)
        if j < self.info.n_rec:
            want = history[j][-1].shape
            if value.shape != want:
                raise ValueError(f"{self._where()}: step {t} returned shape {value.shape} for output {j}, "
                                 f"whose state has shape {want}: a recurrent output keeps its shape")
        return np.array(value, copy=True)

    def _outputs(self, stored: List[List[Any]], history: List[List[Any]], shared: List[Any],
                 done: int, empty_args: Optional[List[Any]] = None) -> List[Any]:
        info = self.info
        results = []
        for j in range(info.n_outs):
            var = self.node.outputs[j]
            keep = info.keep_of(j)
            if stored[j]:
                results.append(np.stack(stored[j]).astype(var.type.dtype, copy=False))
            elif j < info.n_rec and keep == KEEP_LAST:
                results.append(np.asarray(history[j][-1])[None].astype(var.type.dtype))
            else:
                shape = history[j][-1].shape if j < info.n_rec else empty.empty_output_shape(
                    self.op, j, self._where(), empty_args)
                results.append(np.zeros((0,) + tuple(shape), dtype=var.type.dtype))
        return results + list(shared)
