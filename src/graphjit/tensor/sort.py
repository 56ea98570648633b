"""Sorting: sort/argsort (numpy's order, NaNs last, stable), partition/argpartition and topk/argtopk.

Every op works along one non-negative axis (the helpers flatten for axis=None). The native lowering
(link/llvm/ops/sort.py) sorts each lane stably, so argsort's ties always come in index order; the Python
``perform`` uses numpy's stable kind too, so every mode gives the same permutation.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.tensor.alloc import zeros_like
from graphjit.tensor.basic import as_tensor_variable, constant
from graphjit.tensor.lane_index import LaneGather, LaneScatter
from graphjit.tensor.lengths import static_axis, static_int
from graphjit.tensor.shape import flatten
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable

__all__ = ["sort", "argsort", "partition", "argpartition", "topk", "argtopk", "topk_and_argtopk"]

KINDS = ("quicksort", "mergesort", "heapsort", "stable")


def sort_kind(kind: Optional[str], stable: Optional[bool]) -> str:
    """numpy's kind/stable arguments as 'stable' or 'quicksort' (ValueError on a bad or doubled choice)."""
    if kind is not None and stable is not None:
        raise ValueError("sort: `kind` and `stable` parameters can't be provided at the same time")
    if kind is not None and kind not in KINDS:
        raise ValueError(f"sort: kind must be one of {KINDS}, got {kind!r}")
    return "stable" if stable or kind in ("stable", "mergesort") else "quicksort"


def _lane_axis(a: Any, axis: Any, fn: str) -> Tuple[TensorVariable, int]:
    """(a, axis) with axis None meaning the flattened a, axis made non-negative."""
    a = as_tensor_variable(a)
    if axis is None:
        return flatten(a), 0
    axis = static_int(axis) if not isinstance(axis, (int, np.integer)) else axis
    return a, static_axis(axis, a.ndim, a, fn)


class SortBase(Op):
    """Base of Sort and ArgSort: one lane at a time along axis, stable, NaNs last."""

    __props__ = ("axis", "kind")

    def __init__(self, axis: int = -1, kind: str = "quicksort"):
        self.axis = int(axis)
        self.kind = kind

    def _check(self, a: TensorVariable) -> None:
        if not 0 <= self.axis < a.ndim:
            raise np.exceptions.AxisError(f"{self}: axis {self.axis} is out of bounds for {a.describe()}")

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]


class Sort(SortBase):
    """numpy.sort(a, axis): a sorted copy (NaNs last; -0.0 and 0.0 keep their input order)."""

    def make_node(self, a: Any) -> Apply:
        a = as_tensor_variable(a)
        self._check(a)
        return Apply(self, [a], [a.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        out[0][0] = np.sort(inputs[0], self.axis, kind="stable")

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The output gradient scattered back through the sorting permutation."""
        (a,) = inputs
        perm = ArgSort(self.axis, self.kind)(a)
        return [LaneScatter(self.axis)(grads[0], perm, a.shape[self.axis])]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The tangent permuted like the values."""
        if eval_points[0] is None:
            return [None]
        return [LaneGather(self.axis)(eval_points[0], ArgSort(self.axis, self.kind)(inputs[0]))]


class ArgSort(SortBase):
    """numpy.argsort(a, axis, kind='stable'): the int64 indices that sort each lane (ties in index order)."""

    def make_node(self, a: Any) -> Apply:
        a = as_tensor_variable(a)
        self._check(a)
        return Apply(self, [a], [TensorType("int64", a.type.shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        out[0][0] = np.argsort(inputs[0], self.axis, kind="stable").astype("int64", copy=False)

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Zero: the indices do not change under small changes of a."""
        a = inputs[0]
        return [zeros_like(a, dtype=a.dtype if a.dtype in ("float32", "float64") else grads[0].dtype)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """No tangent: the output is an integer."""
        return [None]


def sort(a: Any, axis: Optional[int] = -1, kind: Optional[str] = None,
         stable: Optional[bool] = None) -> TensorVariable:
    """numpy.sort(a, axis, kind, stable=): a sorted copy along axis (None: of the flattened a), NaNs last."""
    kind = sort_kind(kind, stable)
    a, axis = _lane_axis(a, axis, "sort")
    return Sort(axis, kind)(a)


def argsort(a: Any, axis: Optional[int] = -1, kind: Optional[str] = None,
            stable: Optional[bool] = None) -> TensorVariable:
    """numpy.argsort(a, axis, kind, stable=): int64 indices sorting a along axis; always stable (ties in order)."""
    kind = sort_kind(kind, stable)
    a, axis = _lane_axis(a, axis, "argsort")
    return ArgSort(axis, kind)(a)


class Partition(Op):
    """numpy.partition(a, kth, axis): each kth element in its sorted place, smaller ones before, larger after."""

    __props__ = ("kth", "axis")
    numpy_fn: Any = staticmethod(np.partition)

    def __init__(self, kth: Union[int, Sequence[int]], axis: int = -1):
        kths = (kth,) if isinstance(kth, (int, np.integer)) else tuple(kth)
        if not kths or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in kths):
            raise TypeError(f"partition: kth must be an int or a non-empty sequence of ints, got {kth!r}")
        self.kth = tuple(int(k) for k in kths)
        self.axis = int(axis)

    def make_node(self, a: Any) -> Apply:
        a = as_tensor_variable(a)
        if not 0 <= self.axis < a.ndim:
            raise np.exceptions.AxisError(f"{self}: axis {self.axis} is out of bounds for {a.describe()}")
        n = a.type.shape[self.axis]
        if n is not None and not all(-n <= k < n for k in self.kth):
            raise ValueError(f"{self}: kth {self.kth} out of bounds for an axis of length {n}")
        dtype = "int64" if isinstance(self, ArgPartition) else a.dtype
        return Apply(self, [a], [TensorType(dtype, a.type.shape)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (a,) = inputs
        n = a.shape[self.axis]
        if not all(-n <= k < n for k in self.kth):
            raise ValueError(f"{self}: kth {self.kth} out of bounds for an axis of length {n}")
        res = type(self).numpy_fn(a, self.kth, self.axis)
        out[0][0] = np.asarray(res, dtype=node.outputs[0].type.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The output gradient scattered back through the partitioning permutation."""
        (a,) = inputs
        perm = ArgPartition(self.kth, self.axis)(a)
        return [LaneScatter(self.axis)(grads[0], perm, a.shape[self.axis])]


class ArgPartition(Partition):
    """numpy.argpartition(a, kth, axis): int64 indices that partition each lane."""

    numpy_fn = staticmethod(np.argpartition)

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Zero: the indices do not change under small changes of a."""
        a = inputs[0]
        return [zeros_like(a, dtype=a.dtype if a.dtype in ("float32", "float64") else grads[0].dtype)]


def partition(a: Any, kth: Union[int, Sequence[int]], axis: Optional[int] = -1) -> TensorVariable:
    """numpy.partition(a, kth, axis): element kth (each of a sequence) in sorted place, smaller before, larger after."""
    a, axis = _lane_axis(a, axis, "partition")
    return Partition(kth, axis)(a)


def argpartition(a: Any, kth: Union[int, Sequence[int]], axis: Optional[int] = -1) -> TensorVariable:
    """numpy.argpartition(a, kth, axis): the int64 indices of partition's order."""
    a, axis = _lane_axis(a, axis, "argpartition")
    return ArgPartition(kth, axis)(a)


def topk_order(a: np.ndarray, k: int, axis: int) -> np.ndarray:
    """Indices of the k largest (k > 0, descending) or -k smallest (ascending) along axis; ties in index order."""
    n = a.shape[axis]
    if k > 0:
        rev = np.flip(np.argsort(np.flip(a, axis), axis, kind="stable"), axis)
        return np.take(n - 1 - rev, np.arange(k), axis)
    return np.take(np.argsort(a, axis, kind="stable"), np.arange(-k), axis)


class TopK(Op):
    """The kth largest (kth > 0) or -kth smallest (kth < 0) elements along axis and/or their indices.

    Outputs (values, indices) as asked by return_values / return_indices; both come in sorted order (largest
    first for kth > 0, smallest first for kth < 0), whatever ``sorted`` says.
    """

    __props__ = ("axis", "sorted", "idx_dtype", "return_values", "return_indices")

    def __init__(self, axis: int = -1, sorted: bool = True, idx_dtype: str = "int64",
                 return_values: bool = True, return_indices: bool = True):
        if np.dtype(idx_dtype).kind not in "iu":
            raise ValueError(f"topk: idx_dtype must be an integer dtype, got {idx_dtype!r}")
        if not (return_values or return_indices):
            raise ValueError("topk: at least one of return_values and return_indices must be true")
        self.axis, self.sorted, self.idx_dtype = int(axis), bool(sorted), str(np.dtype(idx_dtype))
        self.return_values, self.return_indices = bool(return_values), bool(return_indices)

    def make_node(self, x: Any, kth: Any) -> Apply:
        x, kth = as_tensor_variable(x), as_tensor_variable(kth)
        if not 0 <= self.axis < x.ndim:
            raise np.exceptions.AxisError(f"{self}: axis {self.axis} is out of bounds for {x.describe()}")
        if kth.ndim != 0 or kth.type.numpy_dtype.kind not in "iu":
            raise TypeError(f"{self}: kth must be a 0-d integer, got {kth.describe()}")
        k, n = static_int(kth), x.type.shape[self.axis]
        if k is not None and (k == 0 or (n is not None and abs(k) > n)):
            raise ValueError(f"{self}: kth={k} must be nonzero and at most the axis length ({n})")
        shape = tuple(s if d != self.axis else (None if k is None else abs(k)) for d, s in enumerate(x.type.shape))
        outs = ([TensorType(x.dtype, shape)()] if self.return_values else []) + \
            ([TensorType(self.idx_dtype, shape)()] if self.return_indices else [])
        return Apply(self, [x, kth], outs)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, kth = inputs
        k, n = int(kth), x.shape[self.axis]
        if k == 0 or abs(k) > n:
            raise ValueError(f"{self}: kth={k} must be nonzero and at most the axis length ({n})")
        order = topk_order(x, k, self.axis)
        res = ([np.take_along_axis(x, order, self.axis)] if self.return_values else []) + \
            ([order.astype(self.idx_dtype)] if self.return_indices else [])
        for slot, r in zip(out, res):
            slot[0] = r

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        kth = node.inputs[1]
        k = static_int(kth)
        length = constant(abs(k), dtype="int64") if k is not None else abs(kth).astype("int64")
        shape = tuple(length if d == self.axis else s for d, s in enumerate(shapes[0]))
        return [shape] * len(node.outputs)

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The values' gradient scattered to where they were taken from (zero elsewhere)."""
        x, kth = inputs
        if not self.return_values:
            return [zeros_like(x, dtype=x.dtype if x.dtype in ("float32", "float64") else "float64"),
                    disconnected_type()]
        gz = grads[0]
        idx = TopK(self.axis, self.sorted, "int64", False, True)(x, kth)
        return [LaneScatter(self.axis)(gz, idx, x.shape[self.axis]), disconnected_type()]

    def connection_pattern(self, node: Apply) -> list:
        return [[True] * len(node.outputs), [False] * len(node.outputs)]


def topk(x: Any, kth: Any, axis: Optional[int] = -1, sorted: bool = True, idx_dtype: str = "int64"
         ) -> TensorVariable:
    """Theano's topk: the kth largest elements along axis (kth < 0: the -kth smallest), in sorted order."""
    x, axis = _lane_axis(x, axis, "topk")
    return TopK(axis, sorted, idx_dtype, True, False)(x, kth)


def argtopk(x: Any, kth: Any, axis: Optional[int] = -1, sorted: bool = True, idx_dtype: str = "int64"
            ) -> TensorVariable:
    """Theano's argtopk: the indices of topk's elements along axis (idx_dtype), in topk's order."""
    x, axis = _lane_axis(x, axis, "argtopk")
    return TopK(axis, sorted, idx_dtype, False, True)(x, kth)


def topk_and_argtopk(x: Any, kth: Any, axis: Optional[int] = -1, sorted: bool = True,
                     idx_dtype: str = "int64") -> Tuple[TensorVariable, TensorVariable]:
    """Theano's topk_and_argtopk: (topk(...), argtopk(...)) computed by one op."""
    x, axis = _lane_axis(x, axis, "topk_and_argtopk")
    values, indices = TopK(axis, sorted, idx_dtype, True, True)(x, kth)
    return values, indices
