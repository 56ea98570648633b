"""numpy called on symbolic tensors: its ufuncs and array functions build graphjit nodes, or say what to use.

TensorVariable's ``__array_ufunc__`` makes numpy defer to it (``np_array - x`` is a graph node, not an object
array of Variables) and routes ``np.exp(x)``, ``np.add(a, x)`` to the graphjit function of the same meaning.
``==``/``!=`` with an array is refused (a TypeError naming ``eq``/``neq``): on Variables they are identity.
``__array_function__`` does the same for the common array functions (``np.sum(x)``, ``np.where(c, x, y)``).
Anything without an equivalent (a ufunc method such as ``reduce``, ``out=``, a numpy function graphjit does not
have) raises a TypeError naming what to use instead.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import graphjit.tensor as _tensor   # the package's namespace, complete by the time numpy calls in

# numpy ufunc name -> graphjit.tensor function name
UFUNCS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "true_div", "true_divide": "true_div",
    "floor_divide": "int_div", "remainder": "mod", "power": "pow", "minimum": "minimum", "maximum": "maximum",
    "negative": "neg", "absolute": "abs", "sign": "sign", "square": "sqr", "reciprocal": "reciprocal",
    "less": "lt", "greater": "gt", "less_equal": "le", "greater_equal": "ge",
    "bitwise_and": "and_", "bitwise_or": "or_", "bitwise_xor": "xor", "invert": "invert",
    "left_shift": "left_shift", "right_shift": "right_shift", "logical_not": "logical_not",
    "logical_and": "logical_and", "logical_or": "logical_or", "isnan": "isnan", "isinf": "isinf",
    "isfinite": "isfinite", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "round_half_to_even",
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
    "log1p": "log1p", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "arcsin": "arcsin",
    "arccos": "arccos", "arctan": "arctan", "arctan2": "arctan2", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "arcsinh": "arcsinh", "arccosh": "arccosh", "arctanh": "arctanh", "matmul": "matmul",
}

# == and != stay identity for Variables (they are dict keys): numpy's equal/not_equal on one is refused, so
# that ``array == x`` cannot mean something else than ``x == y``
COMPARISONS = {"equal": "eq", "not_equal": "neq"}

# ufunc methods graphjit has as functions: (ufunc, method) -> graphjit.tensor function name
UFUNC_METHODS = {
    ("add", "reduce"): "sum", ("multiply", "reduce"): "prod", ("maximum", "reduce"): "max",
    ("minimum", "reduce"): "min", ("logical_and", "reduce"): "all", ("logical_or", "reduce"): "any",
    ("add", "accumulate"): "cumsum", ("multiply", "accumulate"): "cumprod",
}

# numpy array function -> graphjit.tensor function name (same arguments, for the arguments graphjit takes)
FUNCTIONS = {
    "sum": "sum", "prod": "prod", "mean": "mean", "var": "var", "std": "std", "max": "max", "amax": "max",
    "min": "min", "amin": "min", "all": "all", "any": "any", "argmax": "argmax", "argmin": "argmin",
    "cumsum": "cumsum", "cumprod": "cumprod", "dot": "dot", "clip": "clip", "where": "where",
    "reshape": "reshape", "transpose": "transpose", "squeeze": "squeeze", "concatenate": "concatenate",
    "stack": "stack", "expand_dims": "expand_dims", "broadcast_to": "broadcast_to", "round": "round",
    "around": "round",
}


def _gt(name: str) -> Callable[..., Any]:
    return getattr(_tensor, name)


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """The graph node of ``ufunc(*inputs)`` (method ``__call__``), or TypeError naming the graphjit function."""
    name = ufunc.__name__
    if method != "__call__":
        target = UFUNC_METHODS.get((name, method))
        hint = f"use graphjit.tensor.{target}" if target else "write it with graphjit.tensor functions"
        raise TypeError(f"numpy.{name}.{method} is not supported on symbolic tensors; {hint}")
    if name in COMPARISONS:
        target = COMPARISONS[name]
        raise TypeError(f"numpy.{name} (== or != with an array) is not elementwise on symbolic tensors: == "
                        f"compares Variables by identity; use graphjit.tensor.{target} (or x.{target}(y))")
    target = UFUNCS.get(name)
    if target is None:
        raise TypeError(f"numpy.{name} has no graphjit equivalent for symbolic tensors; write it with "
                        "graphjit.tensor functions")
    if kwargs:
        raise TypeError(f"numpy.{name} on symbolic tensors takes no keyword arguments "
                        f"(got {', '.join(sorted(kwargs))}); use graphjit.tensor.{target}, which returns a "
                        "new symbolic value (no out=, where=, dtype=: cast with .astype)")
    return _gt(target)(*inputs)


def array_function(func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` as a graph, for the numpy functions graphjit has; else TypeError."""
    name = func.__name__
    target = FUNCTIONS.get(name)
    if target is None:
        raise TypeError(f"numpy.{name} does not take symbolic tensors; use the graphjit.tensor function of "
                        "that meaning (graphjit.tensor.* or a method of the Variable)")
    if kwargs.get("out") is not None:
        raise TypeError(f"numpy.{name}(..., out=) is not supported on symbolic tensors; use "
                        f"graphjit.tensor.{target}, which returns a new symbolic value")
    kwargs = {k: v for k, v in kwargs.items() if not (k == "out" and v is None)}
    try:
        return _gt(target)(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"numpy.{name} on symbolic tensors: graphjit.tensor.{target} does not take these "
                        f"arguments ({e})") from e
