"""Searching and counting (numpy semantics): searchsorted, nonzero/flatnonzero/argwhere/one-argument where,
count_nonzero and bincount. Nonzero's and Bincount's output lengths depend on the data: their lowerings count
first, then allocate (link/llvm/ops/search.py)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import disconnected_type, grad_undefined
from graphjit.graph.op import Op
from graphjit.tensor import math as tm
from graphjit.tensor.advanced_subtensor import advanced_subtensor1
from graphjit.tensor.alloc import zeros_like
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.elemwise import normalize_axis
from graphjit.tensor.shape import flatten, transpose
from graphjit.tensor.subtensor import getitem
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


def _depth_error(fn: str, x: Any, want: int) -> ValueError:
    """numpy's error for an array of the wrong rank where a vector is wanted."""
    deep = "too deep for desired array" if x.ndim > want else "of too small depth for desired array"
    return ValueError(f"{fn}: object {deep} ({x.describe()}; a {want}-d tensor is needed)")


def _float_zeros(x: Any, g: Any) -> Any:
    """A zero gradient for x (float zeros where x is an integer), as the arg-reductions give."""
    return zeros_like(x, dtype=x.dtype if x.dtype in ("float32", "float64") else g.dtype)


class SearchSorted(Op):
    """numpy.searchsorted(a, v, side, sorter): int64 insertion indices of v's elements into the sorted vector a.

    a and v are compared in their common dtype; NaN sorts last, as numpy's sort puts it.
    """

    __props__ = ("side",)

    def __init__(self, side: str = "left"):
        if side not in ("left", "right"):
            raise ValueError(f"search side must be 'left' or 'right' (got {side!r})")
        self.side = side

    def make_node(self, a: Any, v: Any, sorter: Any = None) -> Apply:
        a, v = as_tensor_variable(a), as_tensor_variable(v)
        if a.ndim != 1:
            raise _depth_error("searchsorted", a, 1)
        inputs = [a, v]
        if sorter is not None:
            sorter = as_tensor_variable(sorter)
            if np.dtype(sorter.dtype).kind not in "iu":
                raise TypeError(f"searchsorted: sorter must only contain integers, got {sorter.describe()}")
            if sorter.ndim != 1:
                raise _depth_error("searchsorted (sorter)", sorter, 1)
            inputs.append(sorter)
        return Apply(self, inputs, [TensorType("int64", v.type.shape)()])

    def compare_dtype(self, node: Apply) -> str:
        """The dtype a's and v's elements are compared in."""
        return str(np.result_type(node.inputs[0].dtype, node.inputs[1].dtype))

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        a, v = inputs[:2]
        sorter = inputs[2] if len(inputs) > 2 else None
        dtype = self.compare_dtype(node)
        res = np.searchsorted(a.astype(dtype, copy=False), np.asarray(v, dtype=dtype), self.side, sorter)
        out[0][0] = np.asarray(res, dtype="int64")

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[1]]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True], [True]] + [[False]] * (len(node.inputs) - 2)

    def grad(self, inputs: Sequence[Any], grads: Sequence[Any]) -> list:
        """Zero for a and v (an index does not move under small changes of them); the sorter is disconnected."""
        a, v = inputs[:2]
        return [_float_zeros(a, grads[0]), _float_zeros(v, grads[0])] + [disconnected_type()] * (len(inputs) - 2)

    def R_op(self, inputs: list, eval_points: list) -> list:
        return [None]


class Nonzero(Op):
    """The int64 (ndim, n) matrix of the indices of the nonzero elements of a (C order): numpy.nonzero stacked."""

    __props__ = ()

    def make_node(self, a: Any) -> Apply:
        a = as_tensor_variable(a)
        if a.ndim == 0:
            raise ValueError("Calling nonzero on 0d arrays is not allowed. Use atleast_1d(scalar).nonzero() "
                             f"instead ({a.describe()})")
        return Apply(self, [a], [TensorType("int64", (a.ndim, None))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        idx = np.nonzero(a)
        res = np.empty((a.ndim, idx[0].size), dtype="int64")
        for d, i in enumerate(idx):
            res[d] = i
        out[0][0] = res

    def grad(self, inputs: Sequence[Any], grads: Sequence[Any]) -> list:
        return [grad_undefined(self, 0, inputs[0], "nonzero's output is integer-valued")]

    def R_op(self, inputs: list, eval_points: list) -> list:
        return [None]


def _bincount_input(x: Any) -> Any:
    x = as_tensor_variable(x)
    if np.dtype(x.dtype).kind not in "biu" or x.dtype == "uint64":
        raise TypeError(f"bincount: cannot cast array data from dtype('{x.dtype}') to dtype('int64') according to "
                        f"the rule 'safe' ({x.describe()})")
    if x.ndim != 1:
        raise _depth_error("bincount", x, 1)
    return x


class Bincount(Op):
    """numpy.bincount(x, weights, minlength): occurrences (int64) or summed weights (float64) of each value of x."""

    __props__ = ("minlength",)

    def __init__(self, minlength: int = 0):
        if not isinstance(minlength, (int, np.integer)) or isinstance(minlength, bool):
            raise TypeError(f"bincount: minlength must be a static int, got {minlength!r}")
        if minlength < 0:
            raise ValueError("'minlength' must not be negative")
        self.minlength = int(minlength)

    def make_node(self, x: Any, weights: Any = None) -> Apply:
        x = _bincount_input(x)
        inputs, dtype = [x], "int64"
        if weights is not None:
            weights = as_tensor_variable(weights)
            if np.dtype(weights.dtype).kind not in "biuf":
                raise TypeError(f"bincount: cannot cast the weights {weights.describe()} to float64")
            if weights.ndim != 1:
                raise _depth_error("bincount (weights)", weights, 1)
            inputs, dtype = [x, weights], "float64"
        return Apply(self, inputs, [TensorType(dtype, (None,))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x = inputs[0]
        weights = inputs[1] if len(inputs) > 1 else None
        res = np.bincount(x, weights=weights, minlength=self.minlength)   # int64 zeros for an empty x: cast
        out[0][0] = np.asarray(res, dtype=node.outputs[0].dtype)

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[False], [True]][:len(node.inputs)]

    def grad(self, inputs: Sequence[Any], grads: Sequence[Any]) -> list:
        """The weights' gradient is the output gradient gathered at x; x (integers) is disconnected."""
        if len(inputs) == 1:
            return [disconnected_type()]
        x, w = inputs
        g = advanced_subtensor1(grads[0], cast(x, "int64"))
        return [disconnected_type(), g if w.dtype == g.dtype or w.dtype not in ("float32", "float64")
                else cast(g, w.dtype)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        if len(inputs) == 1 or eval_points[1] is None:
            return [None]
        return [self(inputs[0], eval_points[1])]


# ------------------------------------------------------------------------------------------------
# Public functions
# ------------------------------------------------------------------------------------------------

def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> TensorVariable:
    """numpy.searchsorted(a, v, side, sorter): where v's elements go into the sorted vector a (int64)."""
    return SearchSorted(side)(a, v, sorter)


def nonzero(a: Any, return_matrix: bool = False) -> Union[Tuple[TensorVariable, ...], TensorVariable]:
    """numpy.nonzero(a): one int64 index vector per dimension; return_matrix=True: them stacked (Theano's)."""
    m = Nonzero()(a)
    if return_matrix:
        return m
    return tuple(getitem(m, d) for d in range(m.type.shape[0]))


def flatnonzero(a: Any) -> TensorVariable:
    """numpy.flatnonzero(a): int64 indices of the nonzero elements of a flattened."""
    return getitem(Nonzero()(flatten(a)), 0)


def nonzero_values(a: Any) -> TensorVariable:
    """The nonzero elements of a, flattened in C order (Theano's nonzero_values; numpy's a[a != 0])."""
    a = as_tensor_variable(a)
    flat = flatten(a)
    return advanced_subtensor1(flat, getitem(Nonzero()(flat), 0))


def argwhere(a: Any) -> TensorVariable:
    """numpy.argwhere(a): the (n, a.ndim) int64 matrix of the indices of the nonzero elements."""
    a = as_tensor_variable(a)
    if a.ndim == 0:
        return transpose(getitem(Nonzero()(flatten(a)), slice(0, 0)))
    return transpose(Nonzero()(a))


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """numpy.where: where(cond, x, y) picks elementwise (switch); where(cond) is nonzero(cond)."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return tm.where(condition, x, y)


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> TensorVariable:
    """numpy.count_nonzero(a, axis, keepdims): the int64 number of nonzero elements (axis: an int or a tuple)."""
    a = as_tensor_variable(a)
    normalize_axis(axis, a.ndim)    # numpy's AxisError/TypeError before anything is built
    return tm.sum(tm.neq(a, 0), axis=axis, dtype="int64", keepdims=keepdims)


def bincount(x: Any, weights: Any = None, minlength: Optional[int] = 0, assert_nonneg: bool = False
             ) -> TensorVariable:
    """numpy.bincount(x, weights, minlength): counts (int64) or weight sums (float64) of each value of x >= 0.

    minlength=None is 0 and assert_nonneg is accepted for Theano's signature: a negative value always raises
    ValueError, as in numpy."""
    return Bincount(0 if minlength is None else minlength)(x, weights)


__all__ = ["SearchSorted", "Nonzero", "Bincount", "searchsorted", "nonzero", "flatnonzero", "nonzero_values",
           "argwhere", "where", "count_nonzero", "bincount"]
