"""Symbolic tensors: types, constructors and the op library (numpy semantics)."""

from graphjit.graph.basic import Apply, Constant, Variable  # noqa: F401  (the seeds import them from here)
from graphjit.tensor.type import *  # noqa: F401,F403  (scalar/vector/matrix/... and b/i/l/f/d prefixes)
from graphjit.tensor.type import TensorType, tensor, PREFIXED_CONSTRUCTORS  # noqa: F401
from graphjit.tensor.variable import TensorConstant, TensorVariable  # noqa: F401
from graphjit.tensor.basic import as_tensor, as_tensor_variable, cast, constant, NotScalarConstantError  # noqa: F401
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise, get_scalar_constant_value  # noqa: F401
from graphjit.tensor.math import *  # noqa: F401,F403
from graphjit.tensor.math import (abs, all, any, max, min, pow, round, sum)  # noqa: F401
from graphjit.tensor.shape import Shape, Shape_i, SpecifyShape, shape, shape_i, specify_shape  # noqa: F401
# The op library modules register their public names here, one line each:
from graphjit.tensor.blas import *  # noqa: F401,F403
from graphjit.tensor.blas_vector import *  # noqa: F401,F403
from graphjit.tensor.special import *  # noqa: F401,F403
from graphjit.tensor.extra_ops import *  # noqa: F401,F403
from graphjit.tensor.sort import *  # noqa: F401,F403
from graphjit.tensor.subtensor import *  # noqa: F401,F403
from graphjit.tensor.advanced_subtensor import *  # noqa: F401,F403
from graphjit.tensor.along_axis import *  # noqa: F401,F403
from graphjit.tensor.sharedvar import *  # noqa: F401,F403
from graphjit.tensor.shape import *  # noqa: F401,F403
from graphjit.tensor.join import *  # noqa: F401,F403
from graphjit.tensor.rearrange import *  # noqa: F401,F403
from graphjit.tensor.numpy_helpers import *  # noqa: F401,F403
from graphjit.tensor.construct import *  # noqa: F401,F403
from graphjit.tensor.einsum import *  # noqa: F401,F403
from graphjit.tensor.search import *  # noqa: F401,F403
from graphjit.tensor.unique import *  # noqa: F401,F403
from graphjit.tensor.pad import *  # noqa: F401,F403
from graphjit.tensor.diagonal import *  # noqa: F401,F403
from graphjit.tensor.alloc import *  # noqa: F401,F403
from graphjit.tensor.scalar_conversion import *  # noqa: F401,F403
from graphjit.tensor.shape_feature import *  # noqa: F401,F403
from graphjit.tensor.random import *  # noqa: F401,F403
from graphjit.tensor.random_elementwise import *  # noqa: F401,F403
from graphjit.tensor.random_continuous import *  # noqa: F401,F403
from graphjit.tensor.random_discrete import *  # noqa: F401,F403
from graphjit.tensor.random_multivariate import *  # noqa: F401,F403
from graphjit.tensor.random_permute import *  # noqa: F401,F403
from graphjit.tensor.random_stream import *  # noqa: F401,F403
from graphjit.tensor.vectorization import *  # noqa: F401,F403
from graphjit.tensor import elemwise_grad  # noqa: F401  (installs the gradients of Elemwise, CAReduce, Alloc)
from graphjit.tensor import linalg  # noqa: F401  (graphjit.tensor.linalg: numpy/scipy linear algebra)
from graphjit.tensor.linalg import tril, triu  # noqa: F401  (numpy's top-level names, the same semantics)
from graphjit.tensor import nlinalg, slinalg  # noqa: F401  (Theano's module names of linalg's functions)
from graphjit.tensor import nnet  # noqa: F401  (Theano's tensor.nnet: activations and losses)
from graphjit.tensor import operators  # noqa: F401  (installs TensorVariable's operators and methods)
