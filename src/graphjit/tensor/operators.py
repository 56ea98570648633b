"""The operators and numpy-like methods of symbolic tensors (``x + 1``, ``x[i]``, ``x.sum()``, ``x.T``,
``np.exp(x)``...), installed on TensorOps (tensor/variable.py) from above the op library they build graphs with."""

from __future__ import annotations

from typing import Optional

from graphjit.graph.basic import Variable
from graphjit.tensor import basic, blas, extra_ops, search, special
from graphjit.tensor import math as tm
from graphjit.tensor.basic import cast
from graphjit.tensor.blas import dot, matmul
from graphjit.tensor.construct import repeat
from graphjit.tensor.diagonal import diagonal
from graphjit.tensor.elemwise import DimShuffle, get_scalar_constant_value
from graphjit.tensor.extra_ops import argmax, argmin, cumprod, cumsum
from graphjit.tensor.numpy_interop import array_function, array_ufunc
from graphjit.tensor.sort import argsort, sort
from graphjit.tensor.shape import flatten, reshape, shape, squeeze, transpose
from graphjit.tensor.shape_base import specify_shape
from graphjit.tensor.subtensor import getitem
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorOps


class TensorOperators:
    """The operators and numpy-like methods of symbolic tensors, copied onto TensorOps by install()."""

    # --- arithmetic ------------------------------------------------------------------------------
    def __add__(self, other): return tm.add(self, other)
    def __radd__(self, other): return tm.add(other, self)
    def __sub__(self, other): return tm.sub(self, other)
    def __rsub__(self, other): return tm.sub(other, self)
    def __mul__(self, other): return tm.mul(self, other)
    def __rmul__(self, other): return tm.mul(other, self)
    def __truediv__(self, other): return tm.true_div(self, other)
    def __rtruediv__(self, other): return tm.true_div(other, self)
    def __floordiv__(self, other): return tm.int_div(self, other)
    def __rfloordiv__(self, other): return tm.int_div(other, self)
    def __mod__(self, other): return tm.mod(self, other)
    def __rmod__(self, other): return tm.mod(other, self)
    def __pow__(self, other): return tm.pow(self, other)
    def __rpow__(self, other): return tm.pow(other, self)
    def __neg__(self): return tm.neg(self)
    def __pos__(self): return self
    def __abs__(self): return tm.abs(self)
    def __matmul__(self, other): return matmul(self, other)
    def __rmatmul__(self, other): return matmul(other, self)

    # --- comparison and logic (== and != stay identity: Variables are dict keys) -----------------
    def __lt__(self, other): return tm.lt(self, other)
    def __le__(self, other): return tm.le(self, other)
    def __gt__(self, other): return tm.gt(self, other)
    def __ge__(self, other): return tm.ge(self, other)
    def __and__(self, other): return tm.and_(self, other)
    def __rand__(self, other): return tm.and_(other, self)
    def __or__(self, other): return tm.or_(self, other)
    def __ror__(self, other): return tm.or_(other, self)
    def __xor__(self, other): return tm.xor(self, other)
    def __rxor__(self, other): return tm.xor(other, self)
    def __invert__(self): return tm.invert(self)

    def eq(self, other): return tm.eq(self, other)
    def neq(self, other): return tm.neq(self, other)

    # --- properties ---------------------------------------------------------------------------
    @property
    def shape(self):
        """The symbolic shape (an int64 vector)."""
        return shape(self)

    @property
    def size(self):
        """The symbolic number of elements."""
        return tm.prod(self.shape)

    @property
    def real(self):
        """The real part (numpy's ndarray.real)."""
        return tm.real(self)

    @property
    def imag(self):
        """The imaginary part (numpy's ndarray.imag)."""
        return tm.imag(self)

    @property
    def T(self):
        """The transpose (all axes reversed)."""
        return transpose(self)

    # --- methods ------------------------------------------------------------------------------
    def dimshuffle(self, *pattern):
        """Reorder/insert ('x')/drop broadcastable dimensions."""
        if len(pattern) == 1 and isinstance(pattern[0], (list, tuple)):
            pattern = tuple(pattern[0])
        return DimShuffle(self.ndim, tuple(pattern))(self)

    def transpose(self, *axes): return transpose(self, axes if axes else None)
    def reshape(self, shape, ndim=None): return reshape(self, shape, ndim=ndim)
    def flatten(self, ndim=1): return flatten(self, ndim)
    def ravel(self): return flatten(self, 1)
    def astype(self, dtype): return cast(self, dtype)
    def conj(self): return tm.conj(self)
    def conjugate(self): return tm.conj(self)
    def squeeze(self, axis=None): return squeeze(self, axis)
    def copy(self, name=None):
        out = tm.identity(self)
        out.name = name
        return out

    def sum(self, axis=None, dtype=None, keepdims=False, acc_dtype=None):
        return tm.sum(self, axis=axis, dtype=dtype, keepdims=keepdims, acc_dtype=acc_dtype)
    def prod(self, axis=None, dtype=None, keepdims=False): return tm.prod(self, axis, dtype, keepdims)
    def mean(self, axis=None, dtype=None, keepdims=False): return tm.mean(self, axis, dtype, keepdims)
    def var(self, axis=None, ddof=0, keepdims=False): return tm.var(self, axis, ddof=ddof, keepdims=keepdims)
    def std(self, axis=None, ddof=0, keepdims=False): return tm.std(self, axis, ddof=ddof, keepdims=keepdims)
    def max(self, axis=None, keepdims=False): return tm.max(self, axis, keepdims)
    def min(self, axis=None, keepdims=False): return tm.min(self, axis, keepdims)
    def all(self, axis=None, keepdims=False): return tm.all(self, axis, keepdims)
    def any(self, axis=None, keepdims=False): return tm.any(self, axis, keepdims)
    def argmax(self, axis=None, keepdims=False): return argmax(self, axis, keepdims)
    def argmin(self, axis=None, keepdims=False): return argmin(self, axis, keepdims)
    def cumsum(self, axis=None, reverse=False): return cumsum(self, axis, reverse)
    def cumprod(self, axis=None, reverse=False): return cumprod(self, axis, reverse)
    def sort(self, axis=-1, kind=None, stable=None): return sort(self, axis, kind, stable)
    def argsort(self, axis=-1, kind=None, stable=None): return argsort(self, axis, kind, stable)
    def dot(self, other): return dot(self, other)
    def clip(self, a_min, a_max): return tm.clip(self, a_min, a_max)
    def round(self): return tm.round(self)
    def exp(self): return tm.exp(self)
    def log(self): return tm.log(self)
    def sqrt(self): return tm.sqrt(self)
    def nonzero(self, return_matrix=False): return search.nonzero(self, return_matrix)
    def nonzero_values(self): return search.nonzero_values(self)
    def diagonal(self, offset=0, axis1=0, axis2=1): return diagonal(self, offset, axis1, axis2)
    def repeat(self, repeats, axis=None): return repeat(self, repeats, axis)

    def __getitem__(self, index):
        return getitem(self, index)

    # --- numpy defers to symbolic tensors (tensor/numpy_interop.py) ----------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return array_function(func, args, kwargs)


def convert_variable(self: TensorType, var: Variable) -> Optional[Variable]:
    """var as a variable of this type: var itself if its type is more specific, a SpecifyShape if only the
    static lengths differ, None otherwise (TensorType.convert_variable)."""
    if self.is_super(var.type):
        return var  # var's type is more specific: always safe
    if self.in_same_class(var.type):
        return specify_shape(var, self.shape)
    return None


# math's names for the ops that live in their own modules (`tm.dot`, `tm.cumsum`, `tm.softmax`...)
_MATH_NAMES = {blas: ("dot", "matmul", "outer", "tensordot"),
               extra_ops: ("argmax", "argmin", "cumsum", "cumprod"),
               special: ("softmax", "log_softmax", "logsumexp")}


def install() -> None:
    """Copy TensorOperators' methods and properties onto TensorOps (so onto every symbolic tensor class), set
    TensorType.convert_variable and tensor.basic.get_scalar_constant_value, and give tensor/math.py the names of the ops kept in blas/extra_ops/special."""
    for name, value in vars(TensorOperators).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
            setattr(TensorOps, name, value)
    TensorType.convert_variable = convert_variable
    # Theano's and PyTensor's path (tensor.basic.get_scalar_constant_value); it reads Elemwise nodes, so it is
    # defined in elemwise.py, above basic.py
    basic.get_scalar_constant_value = get_scalar_constant_value
    for module, names in _MATH_NAMES.items():
        for name in names:
            setattr(tm, name, getattr(module, name))


install()
