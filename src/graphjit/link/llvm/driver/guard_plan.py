"""What NanGuardMode checks where in a fused loop group (the IR side: ir/callbacks.py).

Inside a group whose root is a float, every intermediate and every unchecked float input (no node computed it:
node_hooks.unchecked) is checked per element, and a failure replaces the root's element by a value the output
scan finds (callbacks.poison_value).  A group whose root is not a float cannot hold that value: fusion gives it
no float producer under the guard (loops/fusion.py), and its unchecked inputs are scanned before it runs.
"""

from __future__ import annotations

from typing import Sequence

from graphjit.graph.basic import Variable
from graphjit.link.node_hooks import GUARD_BIG, GUARD_INF, GUARD_NAN, unchecked

from graphjit.link.llvm.ir.layouts import is_native_tensor
from graphjit.link.llvm.loops.fusion import LoopGroup

ALL_CHECKS = GUARD_NAN | GUARD_INF | GUARD_BIG


def _float(var: Variable) -> bool:
    return var.type.dtype.startswith("float")


def checked_in_loop(group: LoopGroup, mask: int) -> list[Variable]:
    """The values the group's body checks per element (inputs first, then node outputs in order); none without
    a guard or for a root that is not a float."""
    if not mask or not _float(group.root):
        return []
    ins = [v for v in group.inputs if _float(v) and unchecked(v)]
    # a stored root is scanned after the loop; a reduced one is checked before it is accumulated
    outs = [n.outputs[0] for n in group.nodes if _float(n.outputs[0])
            and (group.reduce is not None or n.outputs[0] is not group.root)]
    return ins + outs


def pre_scanned(in_vars: Sequence[Variable], folded: Sequence[Variable]) -> list[Variable]:
    """The unchecked float native inputs of a unit that a scan before it checks (folded: checked in its loop)."""
    return [v for v in in_vars if unchecked(v) and is_native_tensor(v) and _float(v) and v not in folded]


def post_mask(group: LoopGroup | None, mask: int) -> int:
    """The checks of the scan after a unit: a reduction can turn the loop's poison value into another one
    (inf - inf), so it looks for all of them (the callback then keeps only what mask forbids)."""
    return ALL_CHECKS if group is not None and group.reduce is not None and mask else mask
