"""Conversions between ScalarType variables and 0-d tensors: TensorFromScalar, ScalarFromTensor (they live in
basic.py, which as_tensor_variable needs them in; this module keeps their import path)."""

from graphjit.tensor.basic import ScalarFromTensor, TensorFromScalar, scalar_from_tensor, tensor_from_scalar

__all__ = ["TensorFromScalar", "ScalarFromTensor", "tensor_from_scalar", "scalar_from_tensor"]
