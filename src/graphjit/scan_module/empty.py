"""The shapes of a zero-step loop's ``outputs_info=None`` outputs: (0, *the shape one step would produce).

No step ran, so the step's output has no value; its shape comes from the step graph's shape inference over the
inputs (a sequence's element has the sequence's row shape, a state the initial value's shape, a non-sequence
its own).  When that shape depends on values the step computes (``x[:x.sum()]``), it cannot be known: ValueError.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Variable, ancestors, applys_between
from graphjit.graph.compile_hook import build_function
from graphjit.tensor.shape_feature import symbolic_shape_of


def shape_graph(op: Any, j: int) -> Optional[Variable]:
    """Inner output j's shape as an int64 vector over the inner inputs (their shapes and values, not what the
    step computes), None when it depends on computed values (a native loop can emit the same graph)."""
    out = op.inner_outputs[j]
    vec = symbolic_shape_of(out, op.inner_inputs)
    computed = set(applys_between(op.inner_inputs, [out]))
    return None if any(v.owner in computed for v in ancestors([vec])) else vec


def _shape_function(op: Any, j: int) -> Any:
    """f(*inner input values) -> the shape of inner output j, compiled once (cached on the op)."""
    cache = op.__dict__.setdefault("_empty_shape_fns", {})
    if j not in cache:
        vec = shape_graph(op, j)
        cache[j] = None if vec is None else build_function(op.inner_inputs, vec, mode="PY",
                                                           on_unused_input="ignore")
    return cache[j]


def empty_output_shape(op: Any, j: int, where: str, inner_args: Sequence[Any]) -> tuple:
    """The shape of output j's rows when no step ran; inner_args: the inner inputs' values (placeholders of
    the right shapes for sequence elements)."""
    static = op.inner_outputs[j].type.shape
    if all(s is not None for s in static):
        return tuple(static)
    fn = _shape_function(op, j)
    if fn is None:
        raise ValueError(f"{where}: the loop ran no step and the shape of output {j} depends on values its step "
                         "computes: it cannot be known (give its step a shape that depends only on its inputs)")
    return tuple(int(s) for s in np.asarray(fn(*inner_args)))


def placeholder_args(info: Any, seqs: List[Any], history: List[List[Any]], shared: List[Any],
                     nonseqs: List[Any]) -> List[Any]:
    """The inner inputs' values for a step that does not run: zeros shaped as a sequence's rows."""
    args = [np.zeros(np.shape(s)[1:], dtype=np.asarray(s).dtype) for s in seqs]
    for k in range(info.n_rec):
        d = info.depth(k)
        args += [history[k][d + tap] for tap in info.rec_taps[k]]
    return args + list(shared) + list(nonseqs)
