"""Random orderings: permutation (the sub-arrays along one axis reordered together, or arange(n) shuffled) and
permuted (every 1-d slice along an axis shuffled independently), numpy's Generator methods."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.lengths import static_axis
from graphjit.tensor.random import RandomVariable


class _OrderingRV(RandomVariable):
    """One parameter x, no size; the sample has x's type (no pathwise gradient: the order is not an output)."""

    __props__ = ("dtype", "has_size", "inplace", "axis")
    n_params = 1

    def __init__(self, dtype: str, has_size: bool = False, inplace: bool = False, axis: Optional[int] = 0):
        if has_size:
            raise TypeError(f"{type(self).__name__} takes no size")
        super().__init__(dtype, False, inplace)
        self.axis = None if axis is None else int(axis)

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        x = as_tensor_variable(params[0])
        if x.dtype != self.dtype:
            raise TypeError(f"{self}: x is {x.describe()}, the op's dtype is {self.dtype}")
        if self.axis is not None:
            static_axis(self.axis, max(x.ndim, 1), x, str(self))
        return [x]

    def static_shape(self, size: Optional[Variable], params: Sequence[Variable]) -> Tuple[Optional[int], ...]:
        return params[0].type.shape

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [None, shapes[1]]


class PermutationRV(_OrderingRV):
    """x with its sub-arrays along axis in a random order (Generator.permutation); an integer x is arange(x)."""

    name = "permutation"

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        x = as_tensor_variable(params[0])
        if x.ndim == 0 and np.dtype(x.dtype).kind not in "iu":
            raise TypeError(f"{self}: x must be an integer or an array of at least 1 dimension, got {x.describe()}")
        if x.ndim == 0:
            if self.dtype != "int64" or self.axis != 0:
                raise TypeError(f"{self}: permutation(n) draws int64 and has axis 0")
            return [x]
        return super().prepare_params([x])

    def static_shape(self, size: Optional[Variable], params: Sequence[Variable]) -> Tuple[Optional[int], ...]:
        x = params[0]
        return (None,) if x.ndim == 0 else x.type.shape

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        x = node.inputs[1]
        return [None, (x.astype("int64"),) if x.ndim == 0 else shapes[1]]

    def draw(self, rng: np.random.Generator, size: Any, x: Any) -> Any:
        x = np.asarray(x)
        return rng.permutation(int(x)) if x.ndim == 0 else rng.permutation(x, axis=self.axis)


class PermutedRV(_OrderingRV):
    """x with each 1-d slice along axis shuffled independently; axis None: x shuffled as a flat array
    (Generator.permuted)."""

    name = "permuted"

    def __init__(self, dtype: str, has_size: bool = False, inplace: bool = False, axis: Optional[int] = None):
        super().__init__(dtype, has_size, inplace, axis)

    def draw(self, rng: np.random.Generator, size: Any, x: Any) -> Any:
        x = np.asarray(x)
        if self.axis is None and x.ndim > 1:
            x = np.array(x, order="C")      # numpy shuffles an F-ordered x in F order: always C order, as natively
        return rng.permuted(x, axis=self.axis)


__all__ = ["PermutationRV", "PermutedRV"]
