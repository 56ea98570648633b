"""The compiler hook: how layers below compile/ turn a graph into a callable.

``Variable.eval``, ``verify_grad`` and the Jacobian loop op need ``graphjit.function``, which lives
above them. compile/function.py registers it here when it is imported (``import graphjit`` does that),
so the graph layer calls it without importing the compile layer.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

_builder: Optional[Callable[..., Any]] = None


def set_function_builder(builder: Callable[..., Any]) -> None:
    """Register the function(inputs, outputs, **kwargs) that compiles graphs (compile/function.py)."""
    global _builder
    _builder = builder


def build_function(inputs: Any, outputs: Any, **kwargs: Any) -> Any:
    """Compile outputs from inputs with the registered builder (graphjit.function's arguments)."""
    if _builder is None:
        raise RuntimeError("no function builder is registered: import graphjit (compile/function.py "
                           "registers graphjit.function) before compiling a graph")
    return _builder(inputs, outputs, **kwargs)
