"""numba interop: compiled Functions callable inside ``@numba.njit``; numba-compiled functions as graphjit Ops."""

from __future__ import annotations

from graphjit.numba.as_op import as_op
from graphjit.numba.overload import function_type

__all__ = ["as_op", "function_type"]


def _init_extension() -> None:
    """numba's entry point (``numba_extensions``): importing this package registered the typing (overload.py)."""
