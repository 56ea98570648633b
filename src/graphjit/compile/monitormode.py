"""MonitorMode: a user's functions called before and after every node, with its inputs and outputs."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from graphjit.compile.instrumented_mode import InstrumentedMode, require_instrumentable
from graphjit.compile.mode import LinkerSpec, RewriterSpec, theano_optimizer
from graphjit.graph.basic import Apply, Variable
from graphjit.link.basic import Linker

__all__ = ["MonitorMode", "MonitoredThunk"]

MonitorFn = Callable[[int, Apply, "MonitoredThunk"], Any]


class MonitoredThunk:
    """What pre_func/post_func get as ``fn``: ``inputs`` and ``outputs`` as lists of one-element cells (Theano's
    storage), ``nodes`` the nodes run as one unit (several for a fused loop under the LLVM linker)."""

    __slots__ = ("inputs", "outputs", "nodes", "input_variables")

    def __init__(self, nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any],
                 outputs: Sequence[Any]) -> None:
        self.nodes: List[Apply] = list(nodes)
        self.input_variables: List[Variable] = list(in_vars)
        self.inputs: List[List[Any]] = [[v] for v in inputs]
        self.outputs: List[List[Any]] = [[v] for v in outputs]


class _MonitorHooks:
    def __init__(self, pre_func: Optional[MonitorFn], post_func: Optional[MonitorFn]) -> None:
        self.pre_func, self.post_func = pre_func, post_func

    def pre(self, index: int, nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any]) -> None:
        if self.pre_func is not None:
            node = nodes[-1]
            self.pre_func(index, node, MonitoredThunk(nodes, in_vars, inputs, [None] * len(node.outputs)))

    def post(self, index: int, nodes: Sequence[Apply], in_vars: Sequence[Variable], inputs: Sequence[Any],
             outputs: Sequence[Any]) -> None:
        if self.post_func is not None:
            self.post_func(index, nodes[-1], MonitoredThunk(nodes, in_vars, inputs, outputs))


class MonitorMode(InstrumentedMode):
    """Theano's MonitorMode: ``pre_func(i, node, fn)`` before and ``post_func(i, node, fn)`` after every node
    (i its toposort position, fn a MonitoredThunk: ``fn.inputs[k][0]``, ``fn.outputs[k][0]``).

    The default linker is ``"py"``: every node runs its perform and is seen, as in Theano.  With an LLVM linker
    (``linker="llvm"`` or Theano's ``"cvm"``/``"c"``) the compiled function calls back into Python around every
    *unit* it runs: a fused loop of elementwise nodes is one call, whose ``node`` is the loop's last node,
    ``fn.nodes`` all of them and ``fn.inputs`` the loop's inputs (its intermediate values never exist in memory).
    Values handed to the functions under the LLVM linker are views of the compiled function's memory, valid
    during the call: copy what you keep.
    """

    def __init__(self, pre_func: Optional[MonitorFn] = None, post_func: Optional[MonitorFn] = None,
                 optimizer: RewriterSpec = "fast_run", linker: LinkerSpec = None, name: Optional[str] = None,
                 rewriter: RewriterSpec = None) -> None:
        for what, fn in (("pre_func", pre_func), ("post_func", post_func)):
            if fn is not None and not callable(fn):
                raise TypeError(f"MonitorMode: {what} must be callable, got {fn!r}")
        super().__init__(linker=linker if linker is not None else "py",
                         rewriter=rewriter if rewriter is not None else theano_optimizer(optimizer), name=name)
        self.pre_func, self.post_func = pre_func, post_func

    def instrument(self, linker: Linker) -> Linker:
        """linker calling pre_func/post_func around every node (unit)."""
        return require_instrumentable(linker, "MonitorMode")(hooks=_MonitorHooks(self.pre_func, self.post_func))
