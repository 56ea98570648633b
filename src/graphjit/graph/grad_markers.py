"""The gradient markers ops return from L_op: disconnected, undefined, not implemented.

They live in the graph layer so that an op's gradient can name them without importing the
gradient layer above it; ``graphjit.gradient`` re-exports them (Theano's public names).
"""

from __future__ import annotations

from typing import Any, Optional

from graphjit.graph.basic import Variable
from graphjit.graph.type import NullType, Type


class DisconnectedType(Type):
    """The Type of the 'gradient' of a cost with respect to something it does not depend on."""

    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> Any:
        raise AssertionError("a DisconnectedType variable has no value; it only marks a disconnection")

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __str__(self) -> str:
        return "DisconnectedType"


disconnected_type = DisconnectedType()


def grad_undefined(op: Any, x_pos: int, x: Variable, comment: str = "") -> Variable:
    """A NullType variable: the gradient of op's output with respect to input x_pos is undefined."""
    var = NullType(f"the gradient of {op} with respect to input {x_pos} is undefined. {comment}")()
    var.tag.grad_undefined = True  # kept even where the output is an integer (seed case 3)
    return var


def grad_not_implemented(op: Any, x_pos: int, x: Variable, comment: str = "") -> Variable:
    """A NullType variable: that gradient exists but graphjit does not implement it."""
    return NullType(f"the gradient of {op} with respect to input {x_pos} is not implemented. "
                    f"{comment}")()
