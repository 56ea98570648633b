"""ArgSpec: how a native entry takes one argument or output (an array in numba's layout, a scalar, an object).

Plans on disk store these (cache/plans.py), so the load side imports this module; it needs no llvmlite: only
``layout()``, which IR building calls, reads the IR layouts (through the package's lazy ``layouts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphjit.link import llvm as _llvm      # lazy attribute: layouts (the IR side)
from graphjit.link.llvm.ir.protocol import dtype_name


@dataclass(frozen=True)
class ArgSpec:
    """One argument or output of a native entry: ('array', dtype, ndim, shape), ('scalar', dtype) or
    ('object', 'object'): any Python object passed as a PyObject* (the native entry gets a PyObject** slot;
    for an output, the native entry stores a new reference into its rt->slots entry itself).  ``shape`` holds
    the declared static length of each dimension (None: any length); the wrapper checks every one."""

    kind: str
    dtype: str
    ndim: int = 0
    shape: tuple[int | None, ...] = ()
    writeable: bool = False

    @property
    def broadcastable(self) -> tuple[bool, ...]:
        """Per dimension, whether its length is declared to be 1."""
        return tuple(s == 1 for s in self.shape)

    @classmethod
    def array(cls, dtype: object, ndim: int, broadcastable: Sequence[bool] | None = None,
              writeable: bool = False, shape: Sequence[int | None] | None = None) -> ArgSpec:
        """An ndarray of dtype and ndim; its dims have the static lengths of shape (or 1 where broadcastable)."""
        if shape is None:
            bc = tuple(broadcastable) if broadcastable is not None else (False,) * ndim
            shape = tuple(1 if b else None for b in bc)
        elif broadcastable is not None:
            raise ValueError("give shape or broadcastable, not both")
        shape = tuple(None if s is None else int(s) for s in shape)
        if len(shape) != ndim:
            raise ValueError("shape (or broadcastable) must have ndim entries")
        return cls("array", dtype_name(dtype), ndim, shape, writeable)

    @classmethod
    def scalar(cls, dtype: object) -> ArgSpec:
        """A Python float/int/bool passed as the native scalar of dtype."""
        return cls("scalar", dtype_name(dtype))

    @classmethod
    def object(cls) -> ArgSpec:
        """Any Python object, passed through unchecked as a PyObject*."""
        return cls("object", "object")

    def layout(self) -> Any:
        """The LLVM type (an llvmlite ``ir.Type``) the native entry receives a pointer to."""
        layouts = _llvm.layouts         # the IR side: llvmlite loads on first use, never in a warm process
        if self.kind == "object":
            return layouts.I8P
        if self.kind == "array":
            return layouts.array_struct(self.dtype, self.ndim)
        return layouts.llvm_scalar_type(self.dtype)
