"""Small static graphs: temporaries on the native entry's stack, and when a graph is small enough to optimise whole.

A temporary whose static shape is known and small (at most STACK_TEMP_MAX_BYTES; STACK_TEMPS_MAX_TOTAL per
entry) lives in an ``alloca`` of the entry instead of a buffer cached across calls (ir/buffers.py): no slot, no
exchange with the cache, no reference count check, and its whole layout (lengths, strides, data pointer) is a
compile-time constant of the entry, so loops over it get fixed trip counts and LLVM keeps scalars in registers.
Only in a graph without Python fallback nodes (``perform`` could keep a view of it past the call); its struct
has no parent ndarray, so nothing returns it (a graph output is never a temporary; finish_outputs copies views).

A graph whose every tensor is small and static, of at most SMALL_GRAPH_MAX_NODES nodes, is optimised as one O3
module with its kernels (no light glue pipeline) and skips the shared drivers (loops/drivers.py): its call cost
is the point, its compile time is small anyway.  The constants live in limits.py, read at call time (they are
part of the linker's structural signature).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from graphjit.graph.basic import Apply, Variable
from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.layouts import is_native_tensor
from graphjit.link.llvm import limits


def _static_bytes(var: Variable) -> int | None:
    shape = var.type.shape
    if any(s is None for s in shape):
        return None
    return L.itemsize(var.type.dtype) * int(np.prod([int(s) for s in shape], dtype=np.int64))


class StackBudget:
    """What an entry has put on its stack so far (``enabled`` only without Python fallback nodes)."""

    def __init__(self) -> None:
        self.enabled = False
        self.bytes = 0
        self.count = 0
        self.vars: set[Variable] = set()    # the temporaries placed on the stack (no parent ndarray)

    def fits(self, var: Variable) -> bool:
        """var has a static shape small enough for the stack, and the entry's total stays in budget."""
        nbytes = _static_bytes(var) if self.enabled else None
        return (nbytes is not None and nbytes <= limits.STACK_TEMP_MAX_BYTES
                and self.bytes + nbytes <= limits.STACK_TEMPS_MAX_TOTAL)


def small_static_graph(fgraph: Any, order: Sequence[Apply], budget: StackBudget) -> bool:
    """At most SMALL_GRAPH_MAX_NODES nodes, and every tensor (inputs, results) small and static (module doc)."""
    if not budget.enabled or len(order) > limits.SMALL_GRAPH_MAX_NODES:
        return False
    variables = list(fgraph.inputs) + [v for node in order for v in node.outputs]
    return all(is_native_tensor(v) and budget.fits(v) for v in variables)
