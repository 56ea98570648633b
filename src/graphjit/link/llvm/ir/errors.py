"""Errors of native entries, worded in Python: the compiled code keeps only structure, never the user's text.

A native entry reports an error as a record {code, message index, node index, a, b, c} (layouts: gj_error).
The CPython wrapper hands that record to ``native_error`` (published as ``gj_native_error``), which asks the
wrapper's owner to describe it: a Function describes it with its own graph (the op's message template, the
Apply node, the line that created it), so modules shared between graphs of the same structure (the
in-memory map, the plans on disk) never show another graph's names or lines.
"""

from __future__ import annotations

import re

import numpy as np
from typing import Any, Callable, Sequence

from graphjit.link.llvm.ir import protocol as L     # no llvmlite: the load side words errors too

EXCEPTIONS: dict[int, type[BaseException]] = {L.GJ_ERR_INDEX: IndexError, L.GJ_ERR_VALUE: ValueError,
                                              L.GJ_ERR_ZERO_DIVISION: ZeroDivisionError,
                                              L.GJ_ERR_MEMORY: MemoryError, L.GJ_ERR_RUNTIME: RuntimeError,
                                              L.GJ_ERR_LINALG: np.linalg.LinAlgError,
                                              L.GJ_ERR_OVERFLOW: OverflowError}
_FIELD = re.compile(r"%%|%lld|%llu")


def fill(template: str, values: Sequence[int]) -> str:
    """The template (PyErr_Format style: %lld and %llu fields, %% for %) with its fields replaced by values."""
    it = iter(values)

    def field(m: Any) -> str:
        if m.group(0) == "%%":
            return "%"
        v = next(it, "?")
        return str(v % 2 ** 64) if m.group(0) == "%llu" and isinstance(v, int) else str(v)
    return _FIELD.sub(field, template)


def node_suffix(node: Any) -> str:
    """What an error adds about the Apply node that raised it: the node and the user's line that created it."""
    if node is None:
        return ""
    trace = node.outputs[0].trace if node.outputs else None
    return f"\nApply node that caused the error: {node}" + (f"\nCreated at: {trace}" if trace else "")


def describe(messages: Sequence[str], message_nodes: Sequence[int] | None, order: Sequence[Any] | None,
             code: int, msg: int, node: int, a: int, b: int, c: int) -> BaseException:
    """The exception of one error record, worded with a graph's message templates and nodes."""
    if not 0 <= msg < len(messages):
        return EXCEPTIONS.get(code, RuntimeError)(f"graphjit: native error {code} (message {msg}) at node {node}")
    if message_nodes is not None and message_nodes[msg] >= 0:
        node = message_nodes[msg]                  # a scalar op's message names its own node, not the loop's
    apply = order[node] if order is not None and 0 <= node < len(order) else None
    return EXCEPTIONS.get(code, RuntimeError)(fill(messages[msg], (a, b, c)) + node_suffix(apply))


def native_error(owner: Any, code: int, msg: int, node: int, a: int, b: int, c: int) -> None:
    """Called by a compiled wrapper (its self is owner) whose entry failed: raise the described exception."""
    describer: Callable[..., BaseException] | None = getattr(owner, "word_error", None)
    if describer is None:
        raise EXCEPTIONS.get(code, RuntimeError)(f"graphjit: native error {code} (message {msg}) at node {node}")
    raise describer(code, msg, node, a, b, c)
