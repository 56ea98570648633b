"""Theano's ``theano.tensor.nnet`` names: activations and losses, built from graphjit's ops.

``import graphjit.tensor.nnet as nnet`` (or ``T.nnet``) gives what a Theano program imports from there. Convolution
and pooling are not provided: ``conv2d`` and ``conv3d`` raise NotImplementedError naming the alternatives.
"""

from __future__ import annotations

from typing import Any, NoReturn, Tuple

from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.math import (abs, add, clip, exp, gt, log, maximum, minimum, mul, neg, sigmoid, softplus,
                                  sub, switch, true_div)
from graphjit.tensor.special import (binary_crossentropy, categorical_crossentropy, crossentropy_softmax,
                                     log_softmax, softmax, take_labels)
from graphjit.tensor.variable import TensorVariable

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def ultra_fast_sigmoid(x: Any) -> TensorVariable:
    """Theano's fast approximation of sigmoid; here the exact sigmoid (as fast once compiled, and right)."""
    return sigmoid(x)


def hard_sigmoid(x: Any) -> TensorVariable:
    """Theano's piecewise-linear sigmoid: clip(0.2 * x + 0.5, 0, 1)."""
    x = as_tensor_variable(x)
    return clip(add(mul(x, 0.2), 0.5), 0, 1)


def relu(x: Any, alpha: Any = 0) -> TensorVariable:
    """Theano's relu: max(x, 0), or with alpha the leaky form x where x > 0 else alpha * x."""
    x = as_tensor_variable(x)
    if isinstance(alpha, (int, float)) and alpha == 0:
        return maximum(x, 0)
    return switch(gt(x, 0), x, mul(alpha, x))


def elu(x: Any, alpha: Any = 1) -> TensorVariable:
    """Exponential linear unit: x where x > 0, else alpha * (exp(x) - 1)."""
    x = as_tensor_variable(x)
    return switch(gt(x, 0), x, mul(alpha, sub(exp(minimum(x, 0)), 1)))


def selu(x: Any) -> TensorVariable:
    """Scaled exponential linear unit (Klambauer et al. 2017): scale * elu(x, alpha) with their constants."""
    return mul(_SELU_SCALE, elu(x, _SELU_ALPHA))


def softsign(x: Any) -> TensorVariable:
    """x / (1 + |x|)."""
    x = as_tensor_variable(x)
    return true_div(x, add(1, abs(x)))


def logsoftmax(x: Any, axis: int = -1) -> TensorVariable:
    """Theano's name of log_softmax (over the last axis by default)."""
    return log_softmax(x, axis=axis)


def softmax_with_bias(x: Any, b: Any) -> TensorVariable:
    """softmax(x + b) over the last axis (b a vector broadcast over the rows)."""
    return softmax(add(x, b), axis=-1)


def sigmoid_binary_crossentropy(output: Any, target: Any) -> TensorVariable:
    """binary_crossentropy(sigmoid(output), target) from the logits output, finite for every output."""
    output, target = as_tensor_variable(output), as_tensor_variable(target)
    return sub(softplus(output), mul(output, target))       # softplus is stable, its gradient is sigmoid


def crossentropy_categorical_1hot(coding_dist: Any, true_one_of_n: Any) -> TensorVariable:
    """-log(coding_dist[i, true_one_of_n[i]]) per row (integer labels)."""
    return neg(log(take_labels(coding_dist, true_one_of_n)))


def crossentropy_softmax_1hot(x: Any, y_idx: Any) -> Tuple[TensorVariable, TensorVariable]:
    """(the cross-entropy of softmax(x) against the integer labels y_idx, per row; softmax(x)), stably."""
    return crossentropy_softmax(x, y_idx), softmax(x, axis=-1)


def crossentropy_softmax_1hot_with_bias(x: Any, b: Any, y_idx: Any) -> Tuple[TensorVariable, TensorVariable]:
    """crossentropy_softmax_1hot(x + b, y_idx)."""
    return crossentropy_softmax_1hot(add(x, b), y_idx)


def _not_provided(name: str) -> NoReturn:
    raise NotImplementedError(
        f"graphjit.tensor.nnet.{name} is not provided: graphjit has no convolution or pooling ops. Write the "
        "convolution as a graph (a dot over patches built with indexing), or wrap a library's function as an op "
        "(graphjit.numba.as_op, or an Op with a perform)")


def conv2d(*args: Any, **kwargs: Any) -> NoReturn:
    """Not provided (Theano's 2-d convolution): raises NotImplementedError."""
    _not_provided("conv2d")


def conv3d(*args: Any, **kwargs: Any) -> NoReturn:
    """Not provided (Theano's 3-d convolution): raises NotImplementedError."""
    _not_provided("conv3d")


__all__ = ["sigmoid", "ultra_fast_sigmoid", "hard_sigmoid", "softplus", "softsign", "relu", "elu", "selu",
           "softmax", "log_softmax", "logsoftmax", "softmax_with_bias", "binary_crossentropy",
           "sigmoid_binary_crossentropy", "categorical_crossentropy", "crossentropy_categorical_1hot",
           "crossentropy_softmax_1hot", "crossentropy_softmax_1hot_with_bias"]   # conv2d, conv3d: not provided
