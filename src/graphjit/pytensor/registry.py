"""The translation registry: a PyTensor Op class (or, for Elemwise, a scalar Op class) to its graphjit builder."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

# A translation takes the PyTensor op, its Apply node and the graphjit values of the node's inputs (tensors,
# slices or None), and returns the graphjit value of each output (a sequence, or the value of a single output).
Translation = Callable[[Any, Any, Sequence[Any]], Any]

OPS: Dict[type, Translation] = {}
SCALAR_OPS: Dict[type, Callable[[Any], Any]] = {}


def register(*op_classes: type) -> Callable[[Translation], Translation]:
    """Decorator: translate PyTensor ops of these classes (and their subclasses) with the decorated function."""
    def decorate(fn: Translation) -> Translation:
        for cls in op_classes:
            OPS[cls] = fn
        return fn
    return decorate


def register_scalar(op_class: type, make: Callable[[Any], Any]) -> None:
    """Translate PyTensor scalar ops of this class: ``make(scalar_op)`` returns graphjit's scalar op."""
    SCALAR_OPS[op_class] = make


def _by_mro(table: Dict[type, Any], op: Any) -> Optional[Any]:
    for cls in type(op).__mro__:
        found = table.get(cls)
        if found is not None:
            return found
    return None


def lookup(op: Any) -> Optional[Translation]:
    """The translation of a PyTensor op (its class or nearest registered base class), or None."""
    return _by_mro(OPS, op)


def lookup_scalar(scalar_op: Any) -> Optional[Callable[[Any], Any]]:
    """The graphjit scalar-op maker of a PyTensor scalar op, or None."""
    return _by_mro(SCALAR_OPS, scalar_op)
