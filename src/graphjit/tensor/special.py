"""Neural-network special functions: Softmax, LogSoftmax, LogSumExp (numerically stable) and crossentropies."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply
from graphjit.graph.grad_markers import grad_undefined
from graphjit.graph.op import Op
from graphjit.tensor.alloc import arange
from graphjit.tensor.basic import as_tensor_variable, constant
from graphjit.tensor.elemwise import DimShuffle, normalize_axis
from graphjit.tensor.math import add, eq, exp, log, mul, neg, sub, sum as tsum
from graphjit.tensor.math import relu, sigmoid, softplus  # noqa: F401  (re-exported)
from graphjit.tensor.math import (betaln, digamma, erfcinv, erfcx, erfinv, expit, gamma,  # noqa: F401
                                  gammainc, gammainc_da, gammaincc, gammaln, i0, i0e, i1, i1e, log1mexp,
                                  logaddexp, logaddexp2, logit, polygamma, psi, trigamma, xlog1py, xlogy)
from graphjit.tensor.shape import shape_i
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


def _float_dtype(dtype: str, op: Op, x: Any) -> str:
    """The output dtype of a special function: floats keep theirs, integers and bools give float64."""
    kind = np.dtype(dtype).kind
    if kind == "c":
        raise TypeError(f"{op}: complex input is not supported, got {x.describe()}")
    return dtype if kind == "f" else "float64"


def _single_axis(axis: Optional[int], ndim: int) -> Optional[int]:
    if axis is None:
        return None
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an int or None, got {axis!r}")
    return normalize_axis(int(axis), ndim)[0]


def _stable_max(x: np.ndarray, axis: Any) -> np.ndarray:
    """max over axis with keepdims, for shifting (x is not empty)."""
    return np.max(x, axis=axis, keepdims=True)


class _AxisOp(Op):
    """Base of Softmax and LogSoftmax: same shape out as in, normalised along one axis (or all)."""

    __props__ = ("axis",)

    def __init__(self, axis: Optional[int] = -1):
        self.axis = None if axis is None else int(axis)

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if self.axis is not None and not -x.ndim <= self.axis < max(x.ndim, 1):
            raise np.exceptions.AxisError(f"{self}: axis {self.axis} is out of bounds for "
                                          f"{x.describe()}")
        dtype = _float_dtype(x.dtype, self, x)
        return Apply(self, [x], [TensorType(dtype, x.type.shape)()])

    def _axis(self, x: np.ndarray) -> Optional[int]:
        return None if self.axis is None or x.ndim == 0 else self.axis % x.ndim

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [shapes[0]]

    def _sum(self, x: Any) -> Any:
        """x summed along the op's axis (all of x if None), the summed dimensions kept."""
        return tsum(x, axis=None if self.axis is None or x.ndim == 0 else self.axis % x.ndim,
                    keepdims=True)


class Softmax(_AxisOp):
    """exp(x) / sum(exp(x)) along axis (all elements if None), computed with the maximum subtracted."""

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x = inputs[0].astype(node.outputs[0].type.dtype, copy=False)
        axis = self._axis(x)
        if x.size == 0:  # as numpy-style code gives (an empty axis included): an empty result
            out[0][0] = np.empty(x.shape, x.dtype)
            return
        with np.errstate(invalid="ignore", over="ignore"):
            e = np.exp(x - _stable_max(x, axis))
            out[0][0] = np.asarray(e / np.sum(e, axis=axis, keepdims=True))

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """(gz - sum(gz * sm)) * sm, from the output (no exp recomputed)."""
        (sm,), (gz,) = outputs, grads
        return [mul(sub(gz, self._sum(mul(gz, sm))), sm)]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """sm * (v - sum(v * sm)): the same linear map (the Jacobian is symmetric)."""
        if eval_points[0] is None:
            return [None]
        sm = self(inputs[0])
        return [mul(sub(eval_points[0], self._sum(mul(eval_points[0], sm))), sm)]


class LogSoftmax(_AxisOp):
    """x - logsumexp(x) along axis (all elements if None), stable for large inputs."""

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x = inputs[0].astype(node.outputs[0].type.dtype, copy=False)
        axis = self._axis(x)
        if x.size == 0:
            out[0][0] = np.empty(x.shape, x.dtype)
            return
        m = _stable_max(x, axis)
        m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            shifted = x - m
            out[0][0] = np.asarray(shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True)))

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """gz - softmax(x) * sum(gz), softmax taken as exp of the output (stable)."""
        (out,), (gz,) = outputs, grads
        return [sub(gz, mul(exp(out), self._sum(gz)))]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """v - sum(v * softmax(x))."""
        if eval_points[0] is None:
            return [None]
        v = eval_points[0]
        return [sub(v, self._sum(mul(v, exp(self(inputs[0])))))]


class LogSumExp(Op):
    """log(sum(exp(x))) over axes (all if None), stable; an empty reduction gives -inf."""

    __props__ = ("axis", "keepdims")

    def __init__(self, axis: Optional[Tuple[int, ...]] = None, keepdims: bool = False):
        self.axis = None if axis is None else tuple(int(a) for a in axis)
        self.keepdims = bool(keepdims)

    def make_node(self, x: Any) -> Apply:
        x = as_tensor_variable(x)
        if self.axis is not None and any(not 0 <= a < x.ndim for a in self.axis):
            raise np.exceptions.AxisError(f"{self}: axes {self.axis} out of bounds for {x.describe()}")
        dtype = _float_dtype(x.dtype, self, x)
        return Apply(self, [x], [TensorType(dtype, self._reduced(x.type.shape, 1))()])

    def _axes(self, ndim: int) -> Tuple[int, ...]:
        return tuple(range(ndim)) if self.axis is None else self.axis

    def _reduced(self, shape: Sequence[Any], one: Any) -> Tuple[Any, ...]:
        axes = self._axes(len(shape))
        if self.keepdims:
            return tuple(one if d in axes else s for d, s in enumerate(shape))
        return tuple(s for d, s in enumerate(shape) if d not in axes)

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x = inputs[0].astype(node.outputs[0].type.dtype, copy=False)
        axes = self._axes(x.ndim)
        m = np.max(x, axis=axes, keepdims=True, initial=-np.inf).astype(x.dtype)
        m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            res = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
        if not self.keepdims:
            res = res.reshape(self._reduced(x.shape, 1))
        out[0][0] = np.asarray(res)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [self._reduced(shapes[0], constant(1, dtype="int64"))]

    def _keep(self, v: Any, ndim: int) -> Any:
        """A reduced value (output or its gradient) with the reduced dimensions back as length 1."""
        if self.keepdims:
            return v
        axes, it = self._axes(ndim), iter(range(v.ndim))
        return DimShuffle(v.ndim, ["x" if d in axes else next(it) for d in range(ndim)])(v)

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """gz * exp(x - logsumexp(x)): gz spread with the softmax weights."""
        (x,), (out,), (gz,) = inputs, outputs, grads
        return [mul(self._keep(gz, x.ndim), exp(sub(x, self._keep(out, x.ndim))))]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """sum(v * softmax(x)) over the reduced axes."""
        (x,), (v,) = inputs, eval_points
        if v is None:
            return [None]
        w = exp(sub(x, self._keep(self(x), x.ndim)))
        return [tsum(mul(v, w), axis=self._axes(x.ndim), keepdims=self.keepdims)]


class TakeLabels(Op):
    """x[i, labels[i]] for every row i of a matrix x: the entry each row's integer label selects."""

    __props__ = ()

    def make_node(self, x: Any, labels: Any) -> Apply:
        x, labels = as_tensor_variable(x), as_tensor_variable(labels)
        if x.ndim != 2 or labels.ndim != 1:
            raise TypeError(f"{self}: needs a matrix and a vector of labels, got {x.describe()} and "
                            f"{labels.describe()}")
        if np.dtype(labels.dtype).kind not in "iu":
            raise TypeError(f"{self}: labels must be integers, got {labels.describe()}")
        n_x, n_l = x.type.shape[0], labels.type.shape[0]
        if n_x is not None and n_l is not None and n_x != n_l:
            raise ValueError(f"{self}: {x.describe()} has {n_x} rows but {labels.describe()} has "
                             f"{n_l} labels")
        return Apply(self, [x, labels], [TensorType(x.dtype, (n_x if n_x is not None else n_l,))()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        x, labels = inputs
        if x.shape[0] != labels.shape[0]:
            raise ValueError(f"{self}: {x.shape[0]} rows but {labels.shape[0]} labels")
        if labels.size and (labels.min() < 0 or labels.max() >= x.shape[1]):
            raise IndexError(f"{self}: labels must lie in [0, {x.shape[1]}), got values in "
                             f"[{labels.min()}, {labels.max()}]")
        out[0][0] = x[np.arange(x.shape[0]), labels]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        return [(shapes[0][0],)]

    def connection_pattern(self, node: Apply) -> list:
        return [[True], [True]]

    def L_op(self, inputs: list, outputs: list, grads: list) -> list:
        """gz placed at each row's label (a one-hot mask, elementwise); labels: undefined (integers)."""
        (x, labels), (gz,) = inputs, grads
        columns = arange(shape_i(x, 1)).dimshuffle("x", 0)
        one_hot = eq(columns, labels.dimshuffle(0, "x"))
        return [mul(gz.dimshuffle(0, "x"), one_hot),
                grad_undefined(self, 1, labels, "labels are integer indices")]

    def R_op(self, inputs: list, eval_points: list) -> list:
        """The tangent's entries at the labels."""
        return [None if eval_points[0] is None else self(eval_points[0], inputs[1])]


_take_labels = TakeLabels()


# ------------------------------------------------------------------------------------------------
# Public helpers
# ------------------------------------------------------------------------------------------------

def softmax(x: Any, axis: Optional[int] = -1) -> TensorVariable:
    """scipy.special.softmax(x, axis): exp(x) normalised to sum to 1 along axis (None: all); empty axis: empty."""
    x = as_tensor_variable(x)
    return Softmax(_single_axis(axis, x.ndim))(x)


def log_softmax(x: Any, axis: Optional[int] = -1) -> TensorVariable:
    """scipy.special.log_softmax(x, axis): x - logsumexp(x, axis, keepdims=True), stable; empty axis: empty."""
    x = as_tensor_variable(x)
    return LogSoftmax(_single_axis(axis, x.ndim))(x)


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> TensorVariable:
    """scipy.special.logsumexp(x, axis, keepdims): log(sum(exp(x))) over axis, stable."""
    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.ndim)
    return LogSumExp(None if len(axes) == x.ndim else axes, keepdims)(x)


def take_labels(x: Any, labels: Any) -> TensorVariable:
    """x[arange(n), labels]: from each row of matrix x, the entry its integer label selects."""
    return _take_labels(x, labels)


def _one_hot_or_labels(targets: Any, n_dims: int) -> TensorVariable:
    targets = as_tensor_variable(targets)
    if targets.ndim not in (n_dims - 1, n_dims):
        raise TypeError(f"targets must be integer labels ({n_dims - 1}-d) or a one-hot/probability "
                        f"tensor ({n_dims}-d), got {targets.describe()}")
    return targets


def categorical_crossentropy(probs: Any, targets: Any) -> TensorVariable:
    """-log(probs[i, targets[i]]) per row for integer targets, -sum(targets * log(probs), -1) for one-hot.

    probs = softmax(z) over the last axis is computed as crossentropy_softmax(z, targets): through
    log_softmax, so the value and its gradient stay finite where softmax underflows to 0.
    """
    probs = as_tensor_variable(probs)
    targets = _one_hot_or_labels(targets, probs.ndim)
    node = probs.owner
    if (node is not None and isinstance(node.op, Softmax) and probs.ndim >= 1
            and node.op.axis is not None and node.op.axis % probs.ndim == probs.ndim - 1):
        return crossentropy_softmax(node.inputs[0], targets)
    if targets.ndim == probs.ndim:
        return neg(tsum(mul(targets, log(probs)), axis=-1))
    return neg(log(take_labels(probs, targets)))


def crossentropy_softmax(logits: Any, targets: Any) -> TensorVariable:
    """categorical_crossentropy(softmax(logits), targets), computed stably through log_softmax."""
    logits = as_tensor_variable(logits)
    targets = _one_hot_or_labels(targets, logits.ndim)
    logp = log_softmax(logits, axis=-1)
    if targets.ndim == logits.ndim:
        return neg(tsum(mul(targets, logp), axis=-1))
    return neg(take_labels(logp, targets))


def binary_crossentropy(output: Any, target: Any) -> TensorVariable:
    """-(target * log(output) + (1 - target) * log(1 - output)), elementwise (Theano's).

    With output = sigmoid(z) the stabilize rewrites compute it as softplus(-z) * target +
    softplus(z) * (1 - target), finite with a finite gradient for any z.
    """
    output, target = as_tensor_variable(output), as_tensor_variable(target)
    return neg(add(mul(target, log(output)), mul(sub(1, target), log(sub(1, output)))))


__all__ = ["Softmax", "LogSoftmax", "LogSumExp", "TakeLabels", "softmax", "log_softmax",
           "logsumexp", "take_labels", "categorical_crossentropy", "crossentropy_softmax",
           "binary_crossentropy", "betaln", "digamma", "erfcinv", "erfcx", "erfinv", "expit", "gamma",
           "gammainc", "gammainc_da", "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e", "log1mexp", "logaddexp",
           "logaddexp2", "logit", "polygamma", "psi", "trigamma", "xlog1py", "xlogy"]
