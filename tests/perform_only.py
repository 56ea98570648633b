"""A test-only tensor Op with a Python perform and no lowering: what a fallback node looks like."""

from __future__ import annotations

import numpy as np

import graphjit.tensor as gt
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op


class PlusOne(Op):
    """x + 1, with only perform (no lowering): FAST_RUN calls back into Python for it."""

    __props__ = ()

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        out[0][0] = np.asarray(inputs[0] + 1.0)
