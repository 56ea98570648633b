"""graphjit as a PyTensor backend: importing this package registers the PyTensor mode "GRAPHJIT".

``pytensor.function(..., mode="GRAPHJIT")`` (and PyMC's ``compile_kwargs={"mode": "GRAPHJIT"}``) rewrites the
graph with PyTensor's canonicalize/stabilize/specialize passes, translates every op to graphjit's and compiles
the whole graph into one native function. See docs/pytensor.md.
"""

from __future__ import annotations

from pytensor.compile.mode import Mode, predefined_modes, register_mode

from graphjit.pytensor import math_ops, scalar_ops, shape_ops  # noqa: F401  (they fill the registry)
from graphjit.pytensor.errors import UntranslatedOpError
from graphjit.pytensor.function import GraphjitFunction, GraphjitFunctionMaker, install
from graphjit.pytensor.linker import GraphjitLinker, make_mode
from graphjit.pytensor.registry import register, register_scalar
from graphjit.pytensor.translate import translate_fgraph

MODE_NAME = "GRAPHJIT"

if MODE_NAME not in predefined_modes:
    register_mode(MODE_NAME, make_mode())
install()


def mode() -> Mode:
    """The PyTensor mode registered as "GRAPHJIT"."""
    return predefined_modes[MODE_NAME]


__all__ = ["GraphjitFunction", "GraphjitFunctionMaker", "GraphjitLinker", "MODE_NAME", "UntranslatedOpError",
           "make_mode", "mode", "register", "register_scalar", "translate_fgraph"]
