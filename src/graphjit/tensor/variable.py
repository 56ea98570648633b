"""TensorVariable and TensorConstant: symbolic tensors (their operators are installed by tensor/operators.py)."""

from __future__ import annotations

import numpy as np

from graphjit.graph.basic import Constant, Variable
from graphjit.tensor.type import TensorType


class TensorOps:
    """What TensorVariable, TensorConstant and TensorSharedVariable share.

    The operators and numpy-like methods that build graphs (``x + 1``, ``x[i]``, ``x.sum()``, ``x.T``,
    ``__array_ufunc__``...) are installed on this class by tensor/operators.py, which sits above the op library.
    """

    def __bool__(self):
        raise TypeError("a symbolic tensor has no truth value; use graphjit.tensor.switch / where "
                        "for conditions, or compare with .eq()")

    def __iter__(self):
        raise TypeError("a symbolic tensor cannot be iterated over; index it or use split")

    def __len__(self):
        raise TypeError("len() of a symbolic tensor is unknown; use x.shape[0]")

    @property
    def ndim(self) -> int:
        """The rank."""
        return self.type.ndim

    @property
    def dtype(self) -> str:
        """The dtype name."""
        return self.type.dtype

    @property
    def broadcastable(self):
        """Per dimension, whether the length is statically 1."""
        return self.type.broadcastable


class TensorVariable(TensorOps, Variable):
    """A symbolic numpy.ndarray."""


class TensorConstant(TensorOps, Constant):
    """A constant numpy.ndarray in a graph."""

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        data = np.asarray(self.data)
        if data.ndim == 0 or data.size <= 6:
            body = np.array2string(data, separator=", ").replace("\n", "")
            if data.ndim == 0 and body.endswith("."):
                body += "0"                     # Theano's TensorConstant{2.0}
        else:
            body = f"{data.shape} of {data.dtype}"
        return f"TensorConstant{{{body}}}"

    def signature(self):
        data = np.asarray(self.data)
        return (self.type, data.dtype.str, data.shape, data.tobytes())


def _install() -> None:
    TensorType.variable_type = TensorVariable
    TensorType.constant_type = TensorConstant


_install()

