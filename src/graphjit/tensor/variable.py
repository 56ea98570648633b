"""TensorVariable and TensorConstant: operator overloading and numpy-like methods on symbolic tensors."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Constant, Variable
from graphjit.tensor.type import TensorType


class _TensorOps:
    """Operators and methods shared by TensorVariable and TensorConstant."""

    # --- arithmetic ------------------------------------------------------------------------------
    def __add__(self, other): return _math.add(self, other)
    def __radd__(self, other): return _math.add(other, self)
    def __sub__(self, other): return _math.sub(self, other)
    def __rsub__(self, other): return _math.sub(other, self)
    def __mul__(self, other): return _math.mul(self, other)
    def __rmul__(self, other): return _math.mul(other, self)
    def __truediv__(self, other): return _math.true_div(self, other)
    def __rtruediv__(self, other): return _math.true_div(other, self)
    def __floordiv__(self, other): return _math.int_div(self, other)
    def __rfloordiv__(self, other): return _math.int_div(other, self)
    def __mod__(self, other): return _math.mod(self, other)
    def __rmod__(self, other): return _math.mod(other, self)
    def __pow__(self, other): return _math.pow(self, other)
    def __rpow__(self, other): return _math.pow(other, self)
    def __neg__(self): return _math.neg(self)
    def __pos__(self): return self
    def __abs__(self): return _math.abs(self)
    def __matmul__(self, other): return _math.matmul(self, other)
    def __rmatmul__(self, other): return _math.matmul(other, self)

    # --- comparison and logic (== and != stay identity: Variables are dict keys) -----------------
    def __lt__(self, other): return _math.lt(self, other)
    def __le__(self, other): return _math.le(self, other)
    def __gt__(self, other): return _math.gt(self, other)
    def __ge__(self, other): return _math.ge(self, other)
    def __and__(self, other): return _math.and_(self, other)
    def __rand__(self, other): return _math.and_(other, self)
    def __or__(self, other): return _math.or_(self, other)
    def __ror__(self, other): return _math.or_(other, self)
    def __xor__(self, other): return _math.xor(self, other)
    def __rxor__(self, other): return _math.xor(other, self)
    def __invert__(self): return _math.invert(self)

    def __bool__(self):
        raise TypeError("a symbolic tensor has no truth value; use graphjit.tensor.switch / where "
                        "for conditions, or compare with .eq()")

    def __iter__(self):
        raise TypeError("a symbolic tensor cannot be iterated over; index it or use split")

    def __len__(self):
        raise TypeError("len() of a symbolic tensor is unknown; use x.shape[0]")

    def eq(self, other): return _math.eq(self, other)
    def neq(self, other): return _math.neq(self, other)

    # --- properties ---------------------------------------------------------------------------
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

    @property
    def shape(self):
        """The symbolic shape (an int64 vector)."""
        return _shape.shape(self)

    @property
    def size(self):
        """The symbolic number of elements."""
        return _math.prod(self.shape)

    @property
    def T(self):
        """The transpose (all axes reversed)."""
        return _shape.transpose(self)

    # --- methods ------------------------------------------------------------------------------
    def dimshuffle(self, *pattern):
        """Reorder/insert ('x')/drop broadcastable dimensions."""
        if len(pattern) == 1 and isinstance(pattern[0], (list, tuple)):
            pattern = tuple(pattern[0])
        return _elemwise.DimShuffle(self.ndim, tuple(pattern))(self)

    def transpose(self, *axes): return _shape.transpose(self, axes if axes else None)
    def reshape(self, shape, ndim=None): return _shape.reshape(self, shape, ndim=ndim)
    def flatten(self, ndim=1): return _shape.flatten(self, ndim)
    def ravel(self): return _shape.flatten(self, 1)
    def astype(self, dtype): return _basic.cast(self, dtype)
    def squeeze(self, axis=None): return _shape.squeeze(self, axis)
    def copy(self, name=None):
        out = _math.identity(self)
        out.name = name
        return out

    def sum(self, axis=None, dtype=None, keepdims=False, acc_dtype=None):
        return _math.sum(self, axis=axis, dtype=dtype, keepdims=keepdims, acc_dtype=acc_dtype)
    def prod(self, axis=None, dtype=None, keepdims=False): return _math.prod(self, axis, dtype, keepdims)
    def mean(self, axis=None, dtype=None, keepdims=False): return _math.mean(self, axis, dtype, keepdims)
    def var(self, axis=None, ddof=0, keepdims=False): return _math.var(self, axis, ddof=ddof, keepdims=keepdims)
    def std(self, axis=None, ddof=0, keepdims=False): return _math.std(self, axis, ddof=ddof, keepdims=keepdims)
    def max(self, axis=None, keepdims=False): return _math.max(self, axis, keepdims)
    def min(self, axis=None, keepdims=False): return _math.min(self, axis, keepdims)
    def all(self, axis=None, keepdims=False): return _math.all(self, axis, keepdims)
    def any(self, axis=None, keepdims=False): return _math.any(self, axis, keepdims)
    def argmax(self, axis=None, keepdims=False): return _math.argmax(self, axis, keepdims)
    def argmin(self, axis=None, keepdims=False): return _math.argmin(self, axis, keepdims)
    def cumsum(self, axis=None): return _math.cumsum(self, axis)
    def cumprod(self, axis=None): return _math.cumprod(self, axis)
    def dot(self, other): return _math.dot(self, other)
    def clip(self, a_min, a_max): return _math.clip(self, a_min, a_max)
    def round(self): return _math.round(self)
    def exp(self): return _math.exp(self)
    def log(self): return _math.log(self)
    def sqrt(self): return _math.sqrt(self)
    def nonzero_values(self): raise NotImplementedError("nonzero_values has a data-dependent shape")

    def __getitem__(self, index):
        return _subtensor.getitem(self, index)

    # --- numpy defers to symbolic tensors (tensor/numpy_interop.py) ----------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _numpy_interop.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _numpy_interop.array_function(func, args, kwargs)


class TensorVariable(_TensorOps, Variable):
    """A symbolic numpy.ndarray."""


class TensorConstant(_TensorOps, Constant):
    """A constant numpy.ndarray in a graph."""

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        data = np.asarray(self.data)
        if data.ndim == 0 or data.size <= 6:
            body = np.array2string(data, separator=", ").replace("\n", "")
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


# Imported once this module's names exist: these modules build on TensorVariable (directly or through another);
# their attributes are looked up at call time.  (The package's ``shape`` is a function, but it is bound after
# this runs: tensor/__init__.py imports this module first.)
from graphjit.tensor import basic as _basic  # noqa: E402
from graphjit.tensor import elemwise as _elemwise  # noqa: E402
from graphjit.tensor import math as _math  # noqa: E402
from graphjit.tensor import numpy_interop as _numpy_interop  # noqa: E402
from graphjit.tensor import shape as _shape  # noqa: E402
from graphjit.tensor import subtensor as _subtensor  # noqa: E402
