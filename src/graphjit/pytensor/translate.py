"""Walk a PyTensor FunctionGraph (or an inner graph) node by node into graphjit variables."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import numpy as np
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors
from pytensor.graph.null_type import NullType
from pytensor.scalar.basic import ScalarType
from pytensor.tensor.type import TensorType
from pytensor.tensor.type_other import NoneTypeT, SliceType

import graphjit.tensor as gt
from graphjit.pytensor.errors import UntranslatedOpError
from graphjit.pytensor.registry import lookup


def graphjit_input(var: Any) -> Any:
    """A graphjit input Variable standing for a PyTensor input (tensors; scalars become 0-d tensors)."""
    vtype = var.type
    if isinstance(vtype, TensorType):
        return gt.tensor(vtype.dtype, shape=vtype.shape, name=var.name)
    if isinstance(vtype, ScalarType):
        return gt.tensor(vtype.dtype, shape=(), name=var.name)
    raise UntranslatedOpError(vtype, f"the input {var}", "graphjit takes tensor and scalar inputs only")


def graphjit_constant(const: Any) -> Any:
    """The graphjit value of a PyTensor Constant: a tensor constant, a slice or None."""
    vtype, data = const.type, const.data
    if isinstance(vtype, (TensorType, ScalarType)):
        return gt.constant(np.asarray(data, dtype=vtype.dtype), dtype=vtype.dtype)
    if isinstance(vtype, NoneTypeT):
        return None
    if isinstance(vtype, SliceType):
        return slice(*(None if v is None else int(v) for v in (data.start, data.stop, data.step)))
    raise UntranslatedOpError(vtype, f"the constant {const}", "constants of this type are not translated")


def describe(node: Any, inputs: Sequence[Any] = ()) -> str:
    """Where a node sits, in the user's words: its named outputs and the named graph inputs it depends on."""
    names = [o.name for o in node.outputs if o.name]
    free = [v.name for v in ancestors(node.inputs, blockers=inputs)
            if v.owner is None and not isinstance(v, Constant) and v.name]
    parts = [f"{', '.join(map(str, node.outputs))}" + (f" (named {', '.join(names)})" if names else "")]
    if free:
        parts.append(f"from the model variables {', '.join(sorted(set(free)))}")
    return " ".join(parts)


def _check_output(node: Any, out: Any, value: Any) -> Any:
    """graphjit's output for a PyTensor output: same rank, cast to PyTensor's dtype where they differ."""
    if isinstance(out.type, (TensorType, ScalarType)):
        ndim = getattr(out.type, "ndim", 0)
        if value.ndim != ndim:
            raise UntranslatedOpError(node.op, describe(node),
                                      f"the translation gave a {value.ndim}-d result where PyTensor has {ndim}-d")
        if value.dtype != out.type.dtype:
            value = gt.cast(value, out.type.dtype)
    return value


def translate_node(node: Any, values: Sequence[Any]) -> List[Any]:
    """graphjit values for the outputs of one PyTensor Apply node, given its inputs' graphjit values."""
    fn = lookup(node.op)
    if fn is None:
        raise UntranslatedOpError(node.op, describe(node))
    try:
        result = fn(node.op, node, list(values))
    except UntranslatedOpError:
        raise
    except NotImplementedError as exc:
        raise UntranslatedOpError(node.op, describe(node), str(exc)) from exc
    outs = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(outs) != len(node.outputs):
        raise UntranslatedOpError(node.op, describe(node), f"{len(outs)} outputs for {len(node.outputs)}")
    return [_check_output(node, o, v) if not isinstance(o.type, NullType) else v
            for o, v in zip(node.outputs, outs)]


def translate_graph(inputs: Sequence[Any], outputs: Sequence[Any], nodes: Sequence[Any],
                    values: Sequence[Any]) -> List[Any]:
    """graphjit values of ``outputs``: ``inputs`` stand for ``values``; ``nodes`` in topological order."""
    env: Dict[Any, Any] = dict(zip(inputs, values))

    def value_of(var: Any) -> Any:
        if var in env:
            return env[var]
        if isinstance(var, Constant):
            env[var] = graphjit_constant(var)
            return env[var]
        raise UntranslatedOpError(var, f"the variable {var}", "it is neither an input nor computed by the graph")

    for node in nodes:
        for out, value in zip(node.outputs, translate_node(node, [value_of(v) for v in node.inputs])):
            env[out] = value
    return [value_of(o) for o in outputs]


def translate_fgraph(fgraph: Any) -> tuple:
    """(graphjit inputs, graphjit outputs) of a PyTensor FunctionGraph."""
    inputs = [graphjit_input(v) for v in fgraph.inputs]
    outputs = translate_graph(fgraph.inputs, fgraph.outputs, fgraph.toposort(), inputs)
    return inputs, outputs
