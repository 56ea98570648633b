"""Debugging hooks shared by the linkers: NaN/Inf/big checks, per-node Python hooks and the errors they raise.

A *unit* is what a linker runs as one step: one node under the PerformLinker; one node, or one fused loop group
(several elementwise nodes and the reduction ending them), under the LLVM linker.  A hooks object receives
``pre(index, nodes, in_vars, inputs)`` before a unit and ``post(index, nodes, in_vars, inputs, outputs)`` after
it: index is the toposort position of the unit's anchor (the node at whose place it runs), nodes its Apply nodes
in order, in_vars the Variables it reads (constants included), inputs their values, outputs the values of the
unit's results (its last node's outputs).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Apply, Constant, Variable

GUARD_NAN, GUARD_INF, GUARD_BIG = 1, 2, 4
GUARD_INPUT = 8                 # a native finding is in a unit's unchecked inputs (kind = GUARD_INPUT | bits)
BIG_THRESHOLD = 1e10            # big_is_error: an absolute value above this (Theano's threshold)


class NanGuardError(AssertionError, ValueError):
    """NanGuardMode found a NaN, an infinity or a huge value in a node's input or result.

    An AssertionError, as Theano's NanGuardMode raised (code written for Theano and PyTensor catches that), and a
    ValueError, as graphjit's first NanGuardMode raised."""


class DebugModeError(AssertionError):
    """DebugMode found a disagreement: native vs Python result, an undeclared in-place write, or an alias."""


def guard_mask(nan: bool, inf: bool, big: bool) -> int:
    """The bit set of the checks asked for (GUARD_NAN | GUARD_INF | GUARD_BIG)."""
    return (GUARD_NAN if nan else 0) | (GUARD_INF if inf else 0) | (GUARD_BIG if big else 0)


def bad_values(value: Any, mask: int) -> int:
    """The checks of mask that value fails (0: none); only floating-point and complex arrays are checked."""
    if not isinstance(value, (np.ndarray, np.generic)) or value.dtype.kind not in "fc" or value.size == 0:
        return 0
    found = 0
    if mask & GUARD_NAN and np.isnan(value).any():
        found |= GUARD_NAN
    if mask & GUARD_INF and np.isinf(value).any():
        found |= GUARD_INF
    if mask & GUARD_BIG and (np.abs(value[np.isfinite(value)]) > BIG_THRESHOLD).any():
        found |= GUARD_BIG
    return found


def _what(found: int) -> str:
    names = [n for bit, n in ((GUARD_NAN, "NaN"), (GUARD_INF, "an infinity"),
                              (GUARD_BIG, f"a value above {BIG_THRESHOLD:g} in magnitude")) if found & bit]
    return " and ".join(names)


def _shape(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return str(tuple(shape)) if shape is not None else type(value).__name__


def nan_guard_error(node: Apply, found: int, inputs: Sequence[Any], fused: Sequence[Apply] = (),
                    bad_input: Optional[Variable] = None) -> NanGuardError:
    """The NanGuardError naming node (or its input bad_input), what was found, its inputs' shapes and the line
    that created it."""
    trace = node.outputs[0].trace if node.outputs else None
    where = f"the input {bad_input} of {node}" if bad_input is not None else f"the output of {node}"
    lines = [f"NanGuardMode: {_what(found)} in {where}",
             "Input shapes: " + ", ".join(f"{v}: {_shape(x)}" for v, x in zip(node.inputs, inputs))]
    if len(fused) > 1:
        lines.append("(found in a fused loop of " + ", ".join(str(n.op) for n in fused) + ")")
    if trace:
        lines.append(f"Created at: {trace}")
    err = NanGuardError("\n".join(lines))
    err.node = node  # type: ignore[attr-defined]
    err.variable = bad_input if bad_input is not None else node.outputs[0]  # type: ignore[attr-defined]
    return err


def unchecked(var: Variable) -> bool:
    """Whether var's value is checked as an input of its readers: no node computed it (a graph input, a shared
    variable, a constant), so no output check saw it (Theano's rule)."""
    return var.owner is None


def input_guard_error(nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any],
                      mask: int) -> Optional[NanGuardError]:
    """The error naming the first unchecked input of the unit (nodes, reading in_vars) whose value inputs holds
    something mask forbids, and the first of nodes reading it; None when they are all clean."""
    for var, value in zip(in_vars, inputs):
        found = bad_values(value, mask) if unchecked(var) else 0
        if found:
            node = next(n for n in nodes if var in n.inputs)
            env = dict(zip(in_vars, inputs))
            values = [v.data if isinstance(v, Constant) else env.get(v) for v in node.inputs]
            return nan_guard_error(node, found, values, nodes, bad_input=var)
    return None


def replay(nodes: Sequence[Apply], inputs: Dict[Variable, Any]) -> Dict[Variable, Any]:
    """Run the performs of nodes in order on inputs (values of the variables they read); every value computed."""
    env = dict(inputs)
    for node in nodes:
        values = [v.data if isinstance(v, Constant) else env[v] for v in node.inputs]
        cells: List[List[Any]] = [[None] for _ in node.outputs]
        params = (node.op.get_params(node),) if node.op.params_type is not None else ()
        node.op.perform(node, [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in values],
                        cells, *params)
        for var, cell in zip(node.outputs, cells):
            env[var] = cell[0]
    return env


def locate_bad(nodes: Sequence[Apply], inputs: Dict[Variable, Any], mask: int) -> Optional[tuple]:
    """(node, found, its input values): the first of nodes whose perform produces bad values from inputs."""
    env = dict(inputs)
    try:
        env = replay(nodes, env)
    except Exception:               # noqa: BLE001 - the native result is what is reported then
        return None
    for node in nodes:
        for var in node.outputs:
            found = bad_values(env.get(var), mask)
            if found:
                return node, found, [v.data if isinstance(v, Constant) else env[v] for v in node.inputs]
    return None


class NanGuardHooks:
    """Hooks checking every unit's unchecked inputs and its outputs (the PY linker's NanGuardMode; the LLVM
    linker checks natively)."""

    def __init__(self, mask: int) -> None:
        self.mask = mask

    def pre(self, index: int, nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any]) -> None:
        """Raise NanGuardError if an input no node computed (unchecked) holds a value the mask forbids."""
        err = input_guard_error(nodes, in_vars, inputs, self.mask)
        if err is not None:
            raise err

    def post(self, index: int, nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any],
             outputs: Sequence[Any]) -> None:
        """Raise NanGuardError if an output of the unit holds a value the mask forbids."""
        for value in outputs:
            found = bad_values(value, self.mask)
            if found:
                err = unit_guard_error(nodes, in_vars, inputs, found, self.mask)
                if err is not None:
                    raise err


def unit_guard_error(nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any], found: int,
                     mask: int) -> Optional[NanGuardError]:
    """The error of a unit in which a native check found the GUARD_* bits found: names the unchecked input
    holding bad values, else the first node of the unit that produces them, else its last node.

    found may hold bits mask lacks (a fused loop marks an element whose intermediate failed a check with a
    value the output scan looks for, ir/callbacks.py): None when the values then hold nothing mask forbids."""
    err = input_guard_error(nodes, in_vars, inputs, mask)
    if err is not None:
        return err
    env = dict(zip(in_vars, inputs))
    hit = locate_bad(nodes, env, mask) if len(nodes) > 1 else None
    if hit is not None:
        node, found, values = hit
        return nan_guard_error(node, found, values, nodes)
    found &= mask
    if not found:
        return None
    last = nodes[-1]
    values = [v.data if isinstance(v, Constant) else env.get(v) for v in last.inputs]
    return nan_guard_error(last, found, values, nodes)


class HookChain:
    """Several hooks objects called in order (e.g. DebugMode's checks and a user's monitor)."""

    def __init__(self, *hooks: Any) -> None:
        self.hooks = [h for h in hooks if h is not None]

    def pre(self, index: int, nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any]) -> None:
        """Call every pre hook."""
        for h in self.hooks:
            h.pre(index, nodes, in_vars, inputs)

    def post(self, index: int, nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any],
             outputs: Sequence[Any]) -> None:
        """Call every post hook."""
        for h in self.hooks:
            h.post(index, nodes, in_vars, inputs, outputs)
