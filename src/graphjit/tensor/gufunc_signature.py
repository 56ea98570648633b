"""Generalised-ufunc signatures ("(m,n),(n)->(m)"): parsing, printing, and the signature of an Apply node seen as
the core of a Blockwise (what ``vectorize_graph`` wraps a non-elementwise node with)."""

from __future__ import annotations

import re
from typing import Any, List, Tuple

from graphjit.graph.basic import Apply

Core = Tuple[str, ...]                  # the names of one operand's core dimensions
Signature = Tuple[Tuple[Core, ...], Tuple[Core, ...]]

_DIMS = r"\(\s*(?:\w+\s*(?:,\s*\w+\s*)*,?)?\s*\)"
_LIST = rf"{_DIMS}(?:\s*,\s*{_DIMS})*"
_SIGNATURE = re.compile(rf"^\s*({_LIST})\s*->\s*({_LIST})\s*$")


def _operands(text: str) -> Tuple[Core, ...]:
    return tuple(tuple(name.strip() for name in group.split(",") if name.strip())
                 for group in re.findall(r"\(([^()]*)\)", text))


def parse_signature(signature: str) -> Signature:
    """((input cores), (output cores)) of a numpy gufunc signature; ValueError if it is malformed."""
    if not isinstance(signature, str):
        raise TypeError(f"a signature is a string like '(m,n),(n)->(m)', got {signature!r}")
    match = _SIGNATURE.match(signature)
    if match is None:
        raise ValueError(f"not a valid gufunc signature: {signature!r} (expected e.g. '(m,n),(n)->(m)')")
    return _operands(match.group(1)), _operands(match.group(2))


def format_signature(ins: Tuple[Core, ...], outs: Tuple[Core, ...]) -> str:
    """The canonical text of a signature: '(m,n),(n)->(m)'."""
    def part(cores: Tuple[Core, ...]) -> str:
        return ",".join("(" + ",".join(core) + ")" for core in cores)
    return f"{part(ins)}->{part(outs)}"


class _Length:
    """A placeholder length handed to an op's infer_shape: it only passes through (any arithmetic raises)."""

    def __init__(self, name: str):
        self.name = name

    def _refuse(self, *args: Any) -> Any:
        raise TypeError("placeholder length")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __floordiv__ = __rfloordiv__ = _refuse
    __truediv__ = __mod__ = __neg__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = _refuse
    __int__ = __index__ = _refuse
    __hash__ = object.__hash__


def node_signature(node: Apply) -> str:
    """The signature of node when all of each input is core: input dims get their own names; an output dim
    that the op's infer_shape passes through unchanged from an input keeps that input's name, the others are
    output-only dims (their lengths come from the core's results)."""
    ins = tuple(tuple(f"i{i}_{d}" for d in range(v.type.ndim)) for i, v in enumerate(node.inputs))
    shapes = [tuple(_Length(name) for name in core) for core in ins]
    try:
        inferred = node.op.infer_shape(None, node, shapes)
    except Exception:      # noqa: BLE001  any refusal (arithmetic on a placeholder, no infer_shape) means "unknown"
        inferred = None
    outs: List[Core] = []
    for j, out in enumerate(node.outputs):
        got = list(inferred[j]) if inferred is not None and len(inferred[j]) == out.type.ndim else []
        outs.append(tuple(got[k].name if k < len(got) and isinstance(got[k], _Length) else f"o{j}_{k}"
                          for k in range(out.type.ndim)))
    return format_signature(ins, tuple(outs))


__all__ = ["parse_signature", "format_signature", "node_signature"]
