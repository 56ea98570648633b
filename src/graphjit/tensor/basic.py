"""Turning values into tensors: as_tensor_variable, constant, weak Python scalars, cast, and the conversions between
ScalarType variables and 0-d tensors (TensorFromScalar, ScalarFromTensor)."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from graphjit.config import config as _config
from graphjit.graph.basic import Apply, Variable
from graphjit.graph.op import Op
from graphjit.scalar.basic import ALL_DTYPES, ScalarType, as_scalar, get_scalar_type
from graphjit.scalar.math import cast_op
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorConstant, TensorVariable

PYTHON_SCALARS = (bool, int, float, complex)


class Builders:
    """The ops defined above this module that as_tensor_variable and cast build graphs with.

    Those modules build on this one, so they register the op here when they load (tensor/__init__.py loads
    them all): elemwise.py sets ``elemwise`` (the Elemwise class, for cast), join.py sets ``stack`` (for a
    sequence holding variables).
    """

    elemwise: Callable[[Any], Any]
    stack: Callable[[Sequence[Any]], Any]


def constant(x: Any, name: Optional[str] = None, ndim: Optional[int] = None,
             dtype: Optional[str] = None) -> TensorConstant:
    """A TensorConstant holding x (static shape = x's shape)."""
    arr = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    if arr.dtype == object:
        raise TypeError(f"cannot make a tensor constant of {type(x).__name__} {x!r}")
    if dtype is None:
        if arr.dtype.kind == "U" or arr.dtype.kind == "S":
            raise TypeError(f"cannot make a tensor constant of strings: {x!r}")
        if arr.dtype == np.float16:
            arr = arr.astype("float32")
    if ndim is not None:
        if arr.ndim > ndim:
            squeezable = arr.shape[: arr.ndim - ndim]
            if any(s != 1 for s in squeezable):
                raise ValueError(f"constant of shape {arr.shape} cannot have {ndim} dimension(s)")
            arr = arr.reshape(arr.shape[arr.ndim - ndim:])
        elif arr.ndim < ndim:
            arr = arr.reshape((1,) * (ndim - arr.ndim) + arr.shape)
    dtype_name = str(arr.dtype)         # (once: a numpy dtype's str costs more than the rest of a small constant)
    if dtype_name not in ALL_DTYPES:
        raise TypeError(f"unsupported dtype {arr.dtype} for a tensor constant")
    arr = np.array(arr, copy=True)
    return TensorConstant(TensorType(dtype_name, arr.shape), arr, name=name)


def as_tensor_variable(x: Any, name: Optional[str] = None, ndim: Optional[int] = None,
                       dtype: Optional[str] = None) -> TensorVariable:
    """x as a TensorVariable: Variables pass through, data becomes a TensorConstant."""
    if isinstance(x, Variable):
        if not isinstance(x.type, TensorType):
            if isinstance(x.type, ScalarType):
                x = tensor_from_scalar(x)
            else:
                raise TypeError(f"expected a tensor, got {x.describe()}")
        if ndim is not None and x.ndim != ndim:
            raise ValueError(f"expected a tensor with {ndim} dimension(s), got {x.describe()}")
        if dtype is not None and x.dtype != dtype:
            x = cast(x, dtype)
        return x
    if isinstance(x, (list, tuple)) and any(isinstance(e, Variable) for e in _flatten(x)):
        return Builders.stack([as_tensor_variable(e) for e in x])
    return constant(x, name=name, ndim=ndim, dtype=dtype)


as_tensor = as_tensor_variable


def _flatten(seq: Any) -> List[Any]:
    out: List[Any] = []
    for e in seq:
        if isinstance(e, (list, tuple)):
            out.extend(_flatten(e))
        else:
            out.append(e)
    return out


def is_weak_scalar(x: Any) -> bool:
    """A Python bool/int/float/complex: its dtype yields to the tensors it meets (numpy 2, NEP 50)."""
    return isinstance(x, PYTHON_SCALARS) and not isinstance(x, np.generic)


def as_tensor_inputs(*args: Any) -> List[TensorVariable]:
    """Convert the operands of an elementwise op; Python scalars take the dtype numpy 2 would give."""
    if all(isinstance(a, Variable) and isinstance(a.type, TensorType) for a in args):
        return list(args)                   # the common case: tensors already (as_tensor_variable passes them)
    strong = [a for a in args if not is_weak_scalar(a)]
    strong_vars = {id(a): as_tensor_variable(a) for a in strong}
    if len(strong) == len(args):
        return [strong_vars[id(a)] for a in args]
    weak = [a for a in args if is_weak_scalar(a)]
    dtypes = [strong_vars[id(a)].dtype for a in strong]
    target = str(np.result_type(*dtypes, *weak)) if dtypes else None
    out = []
    for a in args:
        if not is_weak_scalar(a):
            out.append(strong_vars[id(a)])
            continue
        out.append(_weak_constant(a, target))
    return out


def _weak_constant(value: Any, target: Optional[str]) -> TensorConstant:
    if target is None:
        return constant(value)
    kind = np.dtype(target).kind
    if isinstance(value, bool) or (isinstance(value, int) and kind in "iu"):
        info = np.iinfo(target) if kind in "iu" else None
        if info is not None and not (info.min <= value <= info.max):
            raise OverflowError(f"Python integer {value} out of bounds for {target}")
        return constant(value, dtype=target)
    if isinstance(value, complex) and kind != "c":
        return constant(value)
    if isinstance(value, float) and kind in "biu":
        return constant(value)  # float64 (numpy's default float)
    return constant(value, dtype=target)


def cast(x: Any, dtype: str) -> TensorVariable:
    """x converted to dtype (numpy astype semantics); a no-op if already of that dtype."""
    dtype = _config.floatX if dtype == "floatX" else str(np.dtype(dtype))
    x = as_tensor_variable(x)
    if x.dtype == dtype:
        return x
    if x.dtype.startswith("complex") and not dtype.startswith("complex"):
        raise TypeError("Casting from complex to real is ambiguous: consider real(), imag(), angle() or abs()")
    return Builders.elemwise(cast_op(dtype))(x)


class NotScalarConstantError(ValueError):
    """The variable is not a constant with a single value."""


class TensorFromScalar(Op):
    """A ScalarType value as a 0-d tensor of the same dtype."""

    __props__ = ()

    def make_node(self, s: Any) -> Apply:
        if isinstance(s, Variable) and not isinstance(s.type, ScalarType):
            raise TypeError(f"{self}: expected a scalar (ScalarType) variable, got {s.describe()}")
        s = as_scalar(s)
        return Apply(self, [s], [TensorType(s.type.dtype, ())()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: List[list]) -> None:
        out[0][0] = np.asarray(inputs[0], dtype=node.outputs[0].type.dtype)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [()]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The 0-d gradient back as a scalar."""
        return [scalar_from_tensor(grads[0])]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The scalar tangent as a 0-d tensor."""
        return [None if eval_points[0] is None else tensor_from_scalar(eval_points[0])]


class ScalarFromTensor(Op):
    """A 0-d tensor as a ScalarType value of the same dtype."""

    __props__ = ()

    def make_node(self, t: Any) -> Apply:
        t = as_tensor_variable(t)
        if t.ndim != 0:
            raise TypeError(f"{self}: expected a 0-d tensor, got {t.describe()}")
        return Apply(self, [t], [get_scalar_type(t.dtype)()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: List[list]) -> None:
        (t,) = inputs
        if np.shape(t) != ():
            raise ValueError(f"{self}: expected a 0-d array, got shape {np.shape(t)}")
        out[0][0] = np.asarray(t, dtype=node.outputs[0].type.dtype)[()]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [()]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """The scalar gradient back as a 0-d tensor."""
        return [tensor_from_scalar(grads[0])]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The 0-d tangent as a scalar."""
        return [None if eval_points[0] is None else scalar_from_tensor(eval_points[0])]


_tensor_from_scalar = TensorFromScalar()
_scalar_from_tensor = ScalarFromTensor()


def tensor_from_scalar(s: Any) -> TensorVariable:
    """A scalar variable (or Python number) as a 0-d tensor."""
    return _tensor_from_scalar(s)


def scalar_from_tensor(t: Any) -> Variable:
    """A 0-d tensor as a scalar (ScalarType) variable."""
    return _scalar_from_tensor(t)
