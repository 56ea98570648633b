"""numpy called on symbolic tensors: its ufuncs and array functions build graphjit nodes, or say what to use.

TensorVariable's ``__array_ufunc__`` makes numpy defer to it (``np_array - x`` is a graph node, not an object
array of Variables) and routes ``np.exp(x)``, ``np.add(a, x)`` to the graphjit function of the same meaning.
``==``/``!=`` with an array is refused (a TypeError naming ``eq``/``neq``): on Variables they are identity.
``__array_function__`` does the same for the common array functions (``np.sum(x)``, ``np.where(c, x, y)``).
Anything without an equivalent (a ufunc method such as ``reduce``, ``out=``, a numpy function graphjit does not
have) raises a TypeError naming what to use instead.

Every table is keyed by numpy's objects and holds graphjit's. The ufuncs come from the scalar-op registry: a
scalar op declares its numpy function, so ``np.exp`` routes to the Elemwise of the op declared with it (scipy's
ufuncs too, once scipy is loaded); ``UFUNC_OVERRIDES`` lists the ufuncs whose graphjit function is something else.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Optional

import numpy as np

from graphjit.scalar.basic import LazyFunction, ScalarOp, as_ufunc, registered_scalar_ops
from graphjit.tensor import blas as _blas
from graphjit.tensor import extra_ops as _extra_ops
from graphjit.tensor import math as _math
from graphjit.tensor import search as _search
from graphjit.tensor.unique import unique as _unique
# by name: the package binds its attributes `join` and `shape` to the functions, not the modules
from graphjit.tensor.join import concatenate, stack
from graphjit.tensor.shape import broadcast_to, expand_dims, reshape, squeeze, transpose
from graphjit.tensor.elemwise import Elemwise

# ufunc -> graphjit function, where it is not the Elemwise of the scalar op declared with the ufunc
UFUNC_OVERRIDES: Dict[np.ufunc, Callable[..., Any]] = {
    np.reciprocal: _math.reciprocal,          # 1 / x in floats (numpy's integer loop truncates)
    np.rint: _math.round_half_to_even,        # an integer stays an integer (graphjit's rint op gives floats)
    np.logical_not: _math.logical_not, np.logical_and: _math.logical_and, np.logical_or: _math.logical_or,
    np.matmul: _blas.matmul,
}

# == and != stay identity for Variables (they are dict keys): numpy's equal/not_equal on one is refused, so
# that ``array == x`` cannot mean something else than ``x == y``
COMPARISONS: Dict[np.ufunc, Callable[..., Any]] = {np.equal: _math.eq, np.not_equal: _math.neq}

# ufunc methods graphjit has as functions: (ufunc, method) -> the graphjit function
UFUNC_METHODS: Dict[tuple, Callable[..., Any]] = {
    (np.add, "reduce"): _math.sum, (np.multiply, "reduce"): _math.prod, (np.maximum, "reduce"): _math.max,
    (np.minimum, "reduce"): _math.min, (np.logical_and, "reduce"): _math.all,
    (np.logical_or, "reduce"): _math.any,
    (np.add, "accumulate"): _extra_ops.cumsum, (np.multiply, "accumulate"): _extra_ops.cumprod,
}

# numpy array function -> the graphjit function (same arguments, for the arguments graphjit takes)
FUNCTIONS: Dict[Callable[..., Any], Callable[..., Any]] = {
    np.sum: _math.sum, np.prod: _math.prod, np.mean: _math.mean, np.var: _math.var, np.std: _math.std,
    np.max: _math.max, np.amax: _math.max, np.min: _math.min, np.amin: _math.min, np.all: _math.all,
    np.any: _math.any, np.argmax: _extra_ops.argmax, np.argmin: _extra_ops.argmin,
    np.cumsum: _extra_ops.cumsum, np.cumprod: _extra_ops.cumprod, np.dot: _blas.dot, np.clip: _math.clip,
    np.where: _math.where, np.reshape: reshape, np.transpose: transpose,
    np.squeeze: squeeze, np.concatenate: concatenate, np.stack: stack,
    np.expand_dims: expand_dims, np.broadcast_to: broadcast_to, np.round: _math.round,
    np.around: _math.round,
}

# searching and counting (tensor/search.py, tensor/unique.py); np.where takes one argument or three
FUNCTIONS.update({np.where: _search.where, np.nonzero: _search.nonzero, np.flatnonzero: _search.flatnonzero,
                  np.argwhere: _search.argwhere, np.count_nonzero: _search.count_nonzero,
                  np.searchsorted: _search.searchsorted, np.bincount: _search.bincount, np.unique: _unique})

_ufuncs: Dict[np.ufunc, Callable[..., Any]] = {}


def _declared_ufunc(op: ScalarOp) -> Optional[np.ufunc]:
    """The ufunc op was declared with (a scipy one only once scipy is loaded: routing never imports it)."""
    fn = op.numpy
    if isinstance(fn, LazyFunction) and fn.module not in sys.modules:
        return None
    ufunc = as_ufunc(fn)
    return ufunc if ufunc is not None and ufunc.nin == op.nin and ufunc.nout == 1 else None


def ufunc_targets() -> Dict[np.ufunc, Callable[..., Any]]:
    """ufunc -> the graphjit function it routes to, from the scalar-op registry and UFUNC_OVERRIDES (not the
    refused COMPARISONS)."""
    public = {v.scalar_op: v for v in vars(_math).values() if isinstance(v, Elemwise)}
    table: Dict[np.ufunc, Callable[..., Any]] = {}
    for op in registered_scalar_ops():      # graphjit's own first: a later op declared with a ufunc yields
        ufunc = _declared_ufunc(op)
        if ufunc is not None and ufunc not in table:
            table[ufunc] = public.get(op) or Elemwise(op)
    table.update(UFUNC_OVERRIDES)
    for ufunc in COMPARISONS:
        table.pop(ufunc, None)
    return table


def _ufunc_target(ufunc: np.ufunc) -> Optional[Callable[..., Any]]:
    global _ufuncs
    target = _ufuncs.get(ufunc)
    if target is None:      # built on first use, rebuilt on a miss: an op declared since, scipy loaded since
        _ufuncs = ufunc_targets()
        target = _ufuncs.get(ufunc)
    return target


def graphjit_name(fn: Callable[..., Any]) -> str:
    """How an error message names a graphjit function: ``graphjit.tensor.exp``, or ``Elemwise(<op>)``."""
    if isinstance(fn, Elemwise):
        public = next((k for k, v in vars(_math).items() if v is fn and not k.startswith("_")), None)
        return f"graphjit.tensor.{public}" if public else f"Elemwise({fn.scalar_op})"
    return f"graphjit.tensor.{fn.__name__}"


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """The graph node of ``ufunc(*inputs)`` (method ``__call__``), or TypeError naming the graphjit function."""
    name = ufunc.__name__
    if method != "__call__":
        target = UFUNC_METHODS.get((ufunc, method))
        hint = f"use {graphjit_name(target)}" if target else "write it with graphjit.tensor functions"
        raise TypeError(f"numpy.{name}.{method} is not supported on symbolic tensors; {hint}")
    if ufunc in COMPARISONS:
        target = COMPARISONS[ufunc]
        short = target.scalar_op.name
        raise TypeError(f"numpy.{name} (== or != with an array) is not elementwise on symbolic tensors: == "
                        f"compares Variables by identity; use {graphjit_name(target)} (or x.{short}(y))")
    target = _ufunc_target(ufunc)
    if target is None:
        raise TypeError(f"numpy.{name} has no graphjit equivalent for symbolic tensors; write it with "
                        "graphjit.tensor functions")
    if kwargs:
        raise TypeError(f"numpy.{name} on symbolic tensors takes no keyword arguments "
                        f"(got {', '.join(sorted(kwargs))}); use {graphjit_name(target)}, which returns a "
                        "new symbolic value (no out=, where=, dtype=: cast with .astype)")
    return target(*inputs)


def array_function(func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` as a graph, for the numpy functions graphjit has; else TypeError."""
    name = func.__name__
    target = FUNCTIONS.get(func)
    if target is None:
        raise TypeError(f"numpy.{name} does not take symbolic tensors; use the graphjit.tensor function of "
                        "that meaning (graphjit.tensor.* or a method of the Variable)")
    if kwargs.get("out") is not None:
        raise TypeError(f"numpy.{name}(..., out=) is not supported on symbolic tensors; use "
                        f"{graphjit_name(target)}, which returns a new symbolic value")
    kwargs = {k: v for k, v in kwargs.items() if not (k == "out" and v is None)}
    try:
        return target(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"numpy.{name} on symbolic tensors: {graphjit_name(target)} does not take these "
                        f"arguments ({e})") from e
