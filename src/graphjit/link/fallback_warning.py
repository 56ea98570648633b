"""FallbackWarning: a compiled graph runs some node through its Python perform. Defined here, outside the LLVM
backend, so that ``graphjit.FallbackWarning`` (and a warnings filter naming it) loads no llvmlite; the backend warns
with it (link/llvm/ir/fallback.py, which also exports it under its old path)."""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence

from graphjit.graph.basic import Apply

_REASONS: List[Callable[[Apply], Optional[str]]] = []


def register_reason(reason: Callable[[Apply], Optional[str]]) -> Callable[[Apply], Optional[str]]:
    """Let a lowering module say why a node it could lower is not (reason(node) -> text or None)."""
    _REASONS.append(reason)
    return reason


class FallbackWarning(UserWarning):
    """A node of a graph compiled by the LLVM linker runs its Python perform (the op has no lower)."""


def fallback_message(nodes: Sequence[Apply], ops: Sequence[str]) -> str:
    """The warning's text: how many nodes, the ops named, and each op's native alternative where it has one
    (an op class says so with a ``native_alternative`` string attribute)."""
    hints = sorted({f"{op}: {alt}" for op, alt in ((str(n.op), getattr(n.op, "native_alternative", None))
                                                   for n in nodes) if alt and op in ops})
    why = sorted({f"{n.op}: {text}" for n in nodes if str(n.op) in ops for text in (r(n) for r in _REASONS) if text})
    text = f"graphjit LLVM linker: {len(nodes)} node(s) run their Python perform (no lower): {', '.join(ops)}"
    return (text + (f" (native alternative: {'; '.join(hints)})" if hints else "")
            + (f" (why: {'; '.join(why)})" if why else ""))
