"""Ops the compiler inserts and every linker runs: DeepCopyOp keeps outputs from aliasing inputs or each other.

They live in the link layer so that backends can register their lowerings (compile is above link).
"""

from __future__ import annotations

import copy
from typing import Any, List, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.op import Op


class DeepCopyOp(Op):
    """Returns a fresh copy of its input (inserted on outputs that would alias other storage)."""

    __props__ = ()

    def make_node(self, x: Variable) -> Apply:
        """One output of x's Type."""
        if not isinstance(x, Variable):
            raise TypeError(f"DeepCopyOp needs a Variable, got {x!r}")
        return Apply(self, [x], [x.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: List[List[Any]]) -> None:
        """Copy the value (ndarray.copy for arrays, copy.deepcopy otherwise)."""
        x = inputs[0]
        output_storage[0][0] = x.copy() if isinstance(x, np.ndarray) else copy.deepcopy(x)

    def infer_shape(self, fgraph: Any, node: Apply, input_shapes: List[Any]) -> List[Any]:
        """Same shape as the input."""
        return list(input_shapes)


deep_copy_op = DeepCopyOp()
