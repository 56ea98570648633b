"""The shape ops every layer reads: Shape, Shape_i, SpecifyShape and MatchShape (shape.py builds the rest on them)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import disconnected_type
from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable, constant
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


class _ReadsOnlyTheShape(Op):
    """An op whose integer output depends on its input's shape only: no gradient flows through it."""

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[False]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """Disconnected: only the input's shape is read, never its values."""
        return [disconnected_type()]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """No tangent: the output is an integer."""
        return [None]


class Shape(_ReadsOnlyTheShape):
    """The shape of a tensor as an int64 vector."""

    __props__ = ()

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        return Apply(self, [x], [TensorType("int64", (x.ndim,))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        out[0][0] = np.asarray(inputs[0].shape, dtype="int64")

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [(len(shapes[0]),)]


_shape = Shape()


def shape(x: Any) -> TensorVariable:
    """The shape of x as an int64 vector."""
    return _shape(x)


class Shape_i(_ReadsOnlyTheShape):
    """The length of one dimension of a tensor, as an int64 scalar."""

    __props__ = ("i",)

    def __init__(self, i: int):
        self.i = int(i)

    def __str__(self) -> str:
        return f"Shape_i{{{self.i}}}"

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if not 0 <= self.i < x.ndim:
            raise IndexError(f"{self}: {x.describe()} has only {x.ndim} dimension(s)")
        return Apply(self, [x], [TensorType("int64", ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        out[0][0] = np.asarray(inputs[0].shape[self.i], dtype="int64")

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [()]


def shape_i(x: Any, i: int) -> TensorVariable:
    """The length of dimension i of x: a constant when statically known."""
    x = as_tensor_variable(x)
    if x.type.shape[i] is not None:
        return constant(x.type.shape[i], dtype="int64")
    return Shape_i(i)(x)


class SpecifyShape(Op):
    """x unchanged, with its static shape asserted at run time (a ValueError if it differs).

    ``what`` (optional) names the value in the error, e.g. the shared variable an update is for.
    """

    __props__ = ("shape", "what")
    view_map = {0: [0]}
    what = ""                           # (ops pickled before it existed)

    def __init__(self, shape: Sequence[Optional[int]], what: str = ""):
        self.shape = tuple(None if s is None else int(s) for s in shape)
        self.what = str(what)

    def __str__(self) -> str:
        return f"SpecifyShape{{shape={self.shape}}}"

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if x.ndim != len(self.shape):
            raise ValueError(f"{self}: {x.describe()} has {x.ndim} dimension(s), "
                             f"not {len(self.shape)}")
        merged = []
        for d, (have, want) in enumerate(zip(x.type.shape, self.shape)):
            if have is not None and want is not None and have != want:
                raise ValueError(f"{self}: dimension {d} of {x.describe()} has length {have}")
            merged.append(want if want is not None else have)
        return Apply(self, [x], [TensorType(x.dtype, merged)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        (x,) = inputs
        for d, want in enumerate(self.shape):
            if want is not None and x.shape[d] != want:
                raise ValueError(f"{self.what + ': ' if self.what else ''}expected shape {self.shape} "
                                 f"(None = any), got {x.shape}")
        out[0][0] = x

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [tuple(s if w is None else constant(w, dtype="int64")
                      for s, w in zip(shapes[0], self.shape))]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The gradient passes through (it has the same shape)."""
        return [grads[0]]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The tangent, with the same shape asserted."""
        return [None if eval_points[0] is None else self(eval_points[0])]


def specify_shape(x: Any, shape: Sequence[Optional[int]], what: str = "") -> TensorVariable:
    """x with its static shape declared (checked at run time; the error names ``what`` if given)."""
    return SpecifyShape(shape, what)(x)


class MatchShape(Op):
    """x unchanged, after checking at run time that its shape is the given int64 vector (another tensor's Shape).

    ``names`` = (x's label, the shape's owner's label) for the ValueError; Rop checks each eval point against
    its wrt with it, reading only the wrt's shape.
    """

    __props__ = ("names",)
    view_map = {0: [0]}

    def __init__(self, names: Sequence[str] = ("the value", "the model")):
        self.names = tuple(str(n) for n in names)

    def __str__(self) -> str:
        return "MatchShape"

    def make_node(self, x: Any, shape_vector: Any) -> Apply:
        x, shape_vector = as_tensor_variable(x), as_tensor_variable(shape_vector)
        if shape_vector.ndim != 1 or shape_vector.dtype != "int64" or shape_vector.type.shape[0] not in (None, x.ndim):
            raise TypeError(f"{self}: the shape must be an int64 vector of length {x.ndim}, "
                            f"got {shape_vector.describe()}")
        return Apply(self, [x, shape_vector], [x.type()])

    def message(self, got: Sequence[int], want: Sequence[int]) -> str:
        """The error text for a mismatch."""
        return f"{self.names[0]} has shape {tuple(got)}, but {self.names[1]} has shape {tuple(want)}"

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, want = inputs
        if x.shape != tuple(int(n) for n in want):
            raise ValueError(self.message(x.shape, [int(n) for n in want]))
        out[0][0] = x

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        return [[True], [False]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The gradient passes through; the shape is disconnected."""
        return [grads[0], disconnected_type()]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The tangent, checked the same way."""
        return [None if eval_points[0] is None else self(eval_points[0], inputs[1])]


def match_shape(x: Any, model: Any, names: Sequence[str] = ("the value", "the model")) -> TensorVariable:
    """x, checked at run time to have model's shape (only model's shape is read); no check when both shapes
    are static (a ValueError now if they differ)."""
    x, model = as_tensor_variable(x), as_tensor_variable(model)
    op = MatchShape(names)
    if x.ndim != model.ndim:
        raise ValueError(f"{names[0]} has {x.ndim} dimension(s), but {names[1]} has {model.ndim}")
    static_x, static_m = x.type.shape, model.type.shape
    if all(s is not None for s in static_x + static_m):
        if static_x != static_m:
            raise ValueError(op.message(static_x, static_m))
        return x
    return op(x, shape(model))
