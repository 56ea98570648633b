"""DebugMode: every node checked against its perform, in-place writes and aliases against what ops declare."""

from __future__ import annotations

from typing import Any, Optional

from graphjit.compile.instrumented_mode import InstrumentedMode
from graphjit.compile.mode import RewriterSpec, theano_optimizer
from graphjit.link.basic import Linker
from graphjit.link.node_hooks import DebugModeError, guard_mask

__all__ = ["DebugMode", "DebugModeError"]


class DebugMode(InstrumentedMode):
    """Theano's DebugMode (also the registered mode "DEBUG" / "DebugMode"); slow, for finding wrong results.

    The graph is compiled by the LLVM linker with a call back into Python after every unit it runs (a node, or
    a fused loop of elementwise nodes): the unit's inputs must be unchanged unless an op of it declares them in
    ``destroy_map``; every node's ``perform`` is run on copies of the same inputs and must write only inputs its
    op declares, return no array sharing memory with an input its op does not declare in ``view_map`` or
    ``destroy_map``, and agree with the compiled result (``Type.values_eq_approx``).  Then the whole graph runs
    again under the PerformLinker and the outputs are compared.  The first failure raises ``DebugModeError``
    naming the node and the line that created it.

    ``optimizer`` (Theano's keyword; ``rewriter`` is graphjit's) picks the rewrites, ``check_py_code=False``
    skips the perform comparisons, ``check_isfinite=True`` also raises on NaN/Inf as NanGuardMode does.
    """

    def __init__(self, optimizer: RewriterSpec = "fast_run", check_py_code: bool = True,
                 check_isfinite: bool = False, opt_level: int = 1, name: Optional[str] = None,
                 rewriter: RewriterSpec = None, **theano_options: Any) -> None:
        unknown = set(theano_options) - _IGNORED
        if unknown:
            raise TypeError(f"DebugMode: unknown keyword argument(s) {sorted(unknown)}")
        super().__init__(linker="debug", rewriter=rewriter if rewriter is not None else theano_optimizer(optimizer),
                         name=name)
        self.check_py_code = check_py_code
        self.check_isfinite = check_isfinite
        self.opt_level = opt_level

    def instrument(self, linker: Linker) -> Linker:
        """DebugMode's DebugLinker with this mode's settings."""
        cls = type(linker)
        return cls(opt_level=self.opt_level, check_py_code=self.check_py_code,
                   guard=guard_mask(True, True, False) if self.check_isfinite else 0)


# Theano's DebugMode options that have no meaning here (its C code, preallocated-output and stride checks)
_IGNORED = {"stability_patience", "check_c_code", "check_preallocated_output", "require_matching_strides",
            "linker"}
