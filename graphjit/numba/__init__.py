"""numba interop: compiled Functions callable inside ``@numba.njit``; numba-compiled functions as graphjit Ops."""

from __future__ import annotations

from typing import Any

__all__ = ["as_op", "function_type"]


def function_type(fn: Any) -> Any:
    """The numba type of a compiled Function (what ``numba.typeof(fn)`` returns)."""
    from .overload import function_type as _function_type
    return _function_type(fn)


def as_op(*args: Any, **kwargs: Any) -> Any:
    """Wrap a numba-compiled function into a graphjit Op (see graphjit.numba.as_op.as_op)."""
    from .as_op import as_op as _as_op
    return _as_op(*args, **kwargs)


def _init_extension() -> None:
    """numba's entry point (``numba_extensions``): registers the typing of graphjit Functions."""
    from . import overload  # noqa: F401
