"""NanGuardMode: every intermediate result checked for NaN, infinities and huge values, natively."""

from __future__ import annotations

from typing import Optional

from graphjit.compile.instrumented_mode import InstrumentedMode, require_instrumentable
from graphjit.compile.mode import LinkerSpec, RewriterSpec, theano_optimizer
from graphjit.link.basic import Linker
from graphjit.link.node_hooks import BIG_THRESHOLD, NanGuardError, guard_mask

__all__ = ["NanGuardMode", "NanGuardError", "BIG_THRESHOLD"]


class NanGuardMode(InstrumentedMode):
    """Theano's NanGuardMode: raise ``NanGuardError`` (an AssertionError, as Theano's, and a ValueError) when a
    node computes a NaN (nan_is_error), an infinity (inf_is_error) or a value above 1e10 in magnitude
    (big_is_error), or reads one from an input no node computed (a graph input, a shared variable, a constant:
    checked before the node runs, as Theano does, and named in the error).

    Under the LLVM linker (the default, Theano's linker names map to it) the checks are compiled into the fused
    function: inside a fused loop every intermediate is checked per element (a vector compare folded into the
    loop body), and every unit's float results are scanned natively after it; only when a check fails does the
    function call back into Python, which names the input holding the value, or the node inside the fused loop
    that produced it (by rerunning the loop's nodes' performs on its inputs), its inputs' shapes and the line
    that created it.  With ``linker="py"`` the same checks run in Python around every node.  Integer results
    are not checked (they hold no NaN).  Cost: about 1.1x FAST_RUN on benchmarks/nanguard_cost.py.
    """

    def __init__(self, nan_is_error: Optional[bool] = None, inf_is_error: Optional[bool] = None,
                 big_is_error: Optional[bool] = None, optimizer: RewriterSpec = "fast_run",
                 linker: LinkerSpec = None, name: Optional[str] = None, rewriter: RewriterSpec = None) -> None:
        super().__init__(linker=linker if linker is not None else "llvm",
                         rewriter=rewriter if rewriter is not None else theano_optimizer(optimizer), name=name)
        self.nan_is_error = True if nan_is_error is None else bool(nan_is_error)
        self.inf_is_error = True if inf_is_error is None else bool(inf_is_error)
        self.big_is_error = True if big_is_error is None else bool(big_is_error)

    def instrument(self, linker: Linker) -> Linker:
        """linker with native (or, for 'py', Python) checks after every unit."""
        mask = guard_mask(self.nan_is_error, self.inf_is_error, self.big_is_error)
        return require_instrumentable(linker, "NanGuardMode")(guard=mask)
