"""The error a PyTensor graph with an op graphjit cannot translate raises."""

from __future__ import annotations

from typing import Any


class UntranslatedOpError(NotImplementedError):
    """A PyTensor op (named in the message, with the model variables it computes) has no graphjit translation."""

    def __init__(self, op: Any, where: str, reason: str = "no translation is registered") -> None:
        self.op = op
        super().__init__(f"graphjit.pytensor cannot translate the PyTensor op {op} ({type(op).__module__}."
                         f"{type(op).__name__}): {reason}. It computes {where}. Nothing falls back to Python: "
                         "register a translation (graphjit.pytensor.register) or compile with another mode.")
