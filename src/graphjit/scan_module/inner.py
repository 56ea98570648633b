"""The inner graph of a Scan: its structural key (what makes two Scan ops equal) and its compiled step function."""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np

from graphjit.graph.basic import Constant, Variable, ancestors, clone_replace
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.op import Op
from graphjit.tensor.elemwise import folded_broadcast
from graphjit.tensor.type import TensorType


def type_token(t: Any) -> Any:
    """A hashable, picklable description of a Type."""
    if type(t) is TensorType:
        return ("tensor", t.dtype, t.shape)
    return t


def op_token(op: Op) -> Any:
    """An op as (class, props) when it has __props__, else the op itself (identity)."""
    if hasattr(op, "__props__"):
        return (type(op), tuple(_value_token(p) for p in op._props()))
    return op


def _value_token(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return _data_token(v)
    if isinstance(v, Op):
        return op_token(v)
    return v


def _data_token(data: Any) -> Any:
    # numbers by their bytes too: 0.0 == -0.0 and nan != nan, but neither pair computes the same
    if isinstance(data, (np.ndarray, np.generic, float, complex)):
        data = np.asarray(data)
        return (data.dtype.str, data.shape, hashlib.sha1(np.ascontiguousarray(data).tobytes()).hexdigest())
    try:
        hash(data)
        return (type(data).__name__, data)
    except TypeError:
        return ("id", id(data))


def graph_key(fgraph: FunctionGraph) -> tuple:
    """The structure of fgraph: input types, nodes (op token, wiring, output types), outputs; hashable."""
    where: dict[Variable, tuple] = {v: ("in", k) for k, v in enumerate(fgraph.inputs)}
    nodes = []
    for i, node in enumerate(fgraph.toposort()):
        refs = []
        for v in node.inputs:
            if v in where:
                refs.append(where[v])
            elif isinstance(v, Constant):
                refs.append(("const", type_token(v.type), _data_token(v.data)))
            else:
                raise ValueError(f"inner graph reads {v}, which is not one of its inputs")
        nodes.append((op_token(node.op), tuple(refs), tuple(type_token(o.type) for o in node.outputs)))
        for j, o in enumerate(node.outputs):
            where[o] = ("node", i, j)
    outs = tuple(where.get(v) or ("const", type_token(v.type), _data_token(getattr(v, "data", None)))
                 for v in fgraph.outputs)
    return tuple(type_token(v.type) for v in fgraph.inputs), tuple(nodes), outs


def inner_fgraph(inputs: Sequence[Variable], outputs: Sequence[Variable]) -> FunctionGraph:
    """A FunctionGraph over copies of inputs and outputs (the Scan op owns it).

    A constant broadcast by Elemwise (the DimShuffle of 1.0 in a step's ``a * x + 1``) is folded into one
    pre-shaped constant: the loop's rewrites (which leave the inner graph as written in fast_compile) see a
    constant, not an invariant to push out of the loop.
    """
    folded = {}
    for v in ancestors(outputs, blockers=inputs):
        c = folded_broadcast(v)
        if c is not None:
            folded[v] = c
    if folded:
        outputs = clone_replace(list(outputs), folded)
    return FunctionGraph(list(inputs), list(outputs), clone=True)
