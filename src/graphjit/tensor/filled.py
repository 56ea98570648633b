"""Tensors shaped like another: second (Theano's fill), full_like, zeros_like, ones_like (alloc.py re-exports them).

They are Elemwise graphs, so the shape ops, MakeVector and the gradients below alloc.py build with them.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from graphjit.config import config
from graphjit.graph.basic import Variable
from graphjit.scalar import math as ps
from graphjit.tensor.basic import as_tensor_variable, cast, constant
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.variable import TensorVariable


def dtype_or_floatx(dtype: Optional[str]) -> str:
    """dtype's canonical name; floatX for None or "floatX"."""
    return config.floatX if dtype in (None, "floatX") else str(np.dtype(dtype))


def fill_value_tensor(fill_value: Any, dtype: Optional[str]) -> TensorVariable:
    """fill_value as a tensor of dtype (a constant for data; cast if a variable of another dtype)."""
    if dtype is not None and not isinstance(fill_value, Variable):
        return constant(np.asarray(fill_value).astype(dtype_or_floatx(dtype)))
    value = as_tensor_variable(fill_value)
    return value if dtype is None else cast(value, dtype_or_floatx(dtype))


def full_like(x: Any, fill_value: Any, dtype: Optional[str] = None) -> TensorVariable:
    """A new tensor of x's shape filled with fill_value (dtype default x's, like numpy).

    Built as Theano's fill (``second``), so x stays in the graph even when its shape is static or it is
    0-d: ``function([x], zeros_like(x))`` takes x. Rewrites turn it into an Alloc of the known lengths.
    """
    x = as_tensor_variable(x)
    return second(x, fill_value_tensor(fill_value, dtype or x.dtype))


def zeros_like(x: Any, dtype: Optional[str] = None) -> TensorVariable:
    """A new tensor of zeros of x's shape (dtype default x's)."""
    return full_like(x, 0, dtype)


def ones_like(x: Any, dtype: Optional[str] = None) -> TensorVariable:
    """A new tensor of ones of x's shape (dtype default x's)."""
    return full_like(x, 1, dtype)


_second = Elemwise(ps.second)


def second(model: Any, value: Any) -> TensorVariable:
    """value broadcast with model (Theano's fill); model's values are unused, only its shape.

    An Elemwise, so model stays in the graph even when 0-d (a gradient built with it keeps its
    variable as an input); the canonicalize rewrites turn it into ``second_as_alloc``.
    """
    return _second(model, value)


fill = second
