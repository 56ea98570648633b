"""Random numbers: the numpy Generator type, RandomVariable ops (rng in, new rng and sample out), RandomStream."""

from __future__ import annotations

import copy
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.config import config
from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.grad_markers import disconnected_type, grad_not_implemented, grad_undefined
from graphjit.graph.op import Op
from graphjit.graph.shared import SharedVariable, shared, shared_constructor
from graphjit.graph.type import SingletonType
from graphjit.graph.test_value import FLAG_VALUES, compute_test_values
from graphjit.tensor.alloc import zeros_like
from graphjit.tensor.basic import as_tensor_variable, constant
from graphjit.tensor.elemwise import broadcast_static_shape
from graphjit.tensor.elemwise_grad import reduce_to_input
from graphjit.tensor.math import mul, sub, sum as tsum, true_div
from graphjit.tensor.shape import broadcast_shape_symbolic
from graphjit.tensor.type import TensorType
from graphjit.tensor.variable import TensorVariable


# ------------------------------------------------------------------------------------------------
# The generator Type and its shared variables
# ------------------------------------------------------------------------------------------------

class RandomGeneratorType(SingletonType):
    """Values are numpy.random.Generator objects (the state a RandomVariable consumes and renews)."""

    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> Any:
        if isinstance(data, np.random.Generator):
            return data
        raise TypeError(f"expected a numpy.random.Generator, got {type(data).__name__}")

    def values_eq(self, a: Any, b: Any) -> bool:
        """Two generators are equal when their bit generators are of one kind and in one state."""
        return type(a.bit_generator) is type(b.bit_generator) and _same_state(
            a.bit_generator.state, b.bit_generator.state)

    def __str__(self) -> str:
        return "RandomGeneratorType"


def _same_state(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


random_generator_type = RandomGeneratorType()


class RandomGeneratorSharedVariable(SharedVariable):
    """A shared variable holding a numpy.random.Generator."""


@shared_constructor
def random_generator_constructor(value: Any, name: Optional[str] = None, strict: bool = False,
                                 allow_downcast: Optional[bool] = None, borrow: bool = False
                                 ) -> RandomGeneratorSharedVariable:
    """A RandomGeneratorSharedVariable for a numpy.random.Generator (copied unless borrow=True)."""
    if not isinstance(value, np.random.Generator):
        raise TypeError(f"random generator shared variables hold numpy Generators, not "
                        f"{type(value).__name__}")
    return RandomGeneratorSharedVariable(type=random_generator_type,
                                         value=value if borrow else copy.deepcopy(value),
                                         strict=strict, allow_downcast=allow_downcast, name=name)


def _copy_generator(rng: np.random.Generator) -> np.random.Generator:
    """An independent Generator in the same state as rng."""
    bit_gen = type(rng.bit_generator)()
    bit_gen.state = rng.bit_generator.state
    return np.random.Generator(bit_gen)


# ------------------------------------------------------------------------------------------------
# RandomVariable: (rng, [size,] *params) -> (new rng, sample)
# ------------------------------------------------------------------------------------------------

def _as_size(size: Any) -> Variable:
    """size (a tuple of ints/scalars or an int64 vector) as an int64 vector Variable of known length."""
    if isinstance(size, (int, np.integer)):
        size = (size,)
    if isinstance(size, (tuple, list)) and all(isinstance(s, (int, np.integer)) for s in size):
        if any(s < 0 for s in size):
            raise ValueError(f"size must not have negative lengths, got {tuple(size)}")
        return constant(np.asarray(size, dtype="int64").reshape(len(size)))
    size = as_tensor_variable(size)
    if size.ndim != 1 or np.dtype(size.dtype).kind not in "iu":
        raise TypeError(f"size must be a tuple of ints or an integer vector, got {size.describe()}")
    if size.type.shape[0] is None:
        raise ValueError(f"size must have a statically known length, got {size.describe()}")
    return size if size.dtype == "int64" else size.astype("int64")


def _size_static(size: Variable) -> Tuple[Optional[int], ...]:
    if isinstance(size, Constant):
        return tuple(int(s) for s in np.asarray(size.data))
    return (None,) * size.type.shape[0]


class RandomVariable(Op):
    """Base of the draws: inputs (rng, [size,] *params), outputs (new rng, sample of dtype).

    The generator input is copied before drawing unless ``inplace`` (then it is advanced in place).
    Subclasses set ``name``, ``n_params`` and ``draw(rng, size, *params)``.
    """

    __props__ = ("dtype", "has_size", "inplace")
    default_output = 1
    name = "random"
    n_params = 0
    c_draw: Optional[Tuple[str, str, Tuple[str, ...]]] = None   # numpy's per-element C draw (see docs/random.md)
    param_checks: Tuple[Optional[str], ...] = ()               # numpy's constraint per parameter

    def __init__(self, dtype: str, has_size: bool = False, inplace: bool = False):
        self.dtype = config.floatX if dtype == "floatX" else str(np.dtype(dtype))
        self.has_size = bool(has_size)
        self.inplace = bool(inplace)
        self.destroy_map = {0: [0]} if self.inplace else {}

    def __str__(self) -> str:
        flags = f"{self.dtype}{',size' if self.has_size else ''}{',inplace' if self.inplace else ''}"
        return f"{type(self).__name__}{{{flags}}}"

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        """The distribution parameters as tensors (subclasses check their kinds)."""
        return [as_tensor_variable(p) for p in params]

    def static_shape(self, size: Optional[Variable], params: Sequence[Variable]) -> Tuple[Optional[int], ...]:
        """The sample's static shape: size's, or the broadcast of the parameters' shapes."""
        if size is not None:
            return _size_static(size)
        ndim = max((p.ndim for p in params), default=0)
        shapes = [(1,) * (ndim - p.ndim) + p.type.shape for p in params]
        return broadcast_static_shape(shapes, f"parameters of {self}") if shapes else ()

    def make_node(self, rng: Any, *inputs: Any) -> Apply:
        """Inputs: the generator, then size if has_size, then the parameters."""
        if not isinstance(rng, Variable) or not isinstance(rng.type, RandomGeneratorType):
            raise TypeError(f"{self}: the first input must be a random generator variable, got {rng!r}")
        params = inputs[1:] if self.has_size else inputs
        if len(params) != self.n_params:
            raise TypeError(f"{self}: takes {'size and ' if self.has_size else ''}{self.n_params} "
                            f"parameter(s), got {len(inputs)} input(s) after the generator")
        size_var = _as_size(inputs[0]) if self.has_size else None
        param_vars = self.prepare_params(params)
        try:
            shape = self.static_shape(size_var, param_vars)
        except ValueError as e:
            raise ValueError(f"{e}; parameters {', '.join(p.describe() for p in param_vars)}") from None
        inputs = [rng] + ([size_var] if size_var is not None else []) + param_vars
        return Apply(self, inputs, [random_generator_type(), TensorType(self.dtype, shape)()])

    def draw(self, rng: np.random.Generator, size: Optional[Tuple[int, ...]], *params: Any) -> Any:
        """The sample drawn from rng with numpy."""
        raise NotImplementedError(f"{type(self).__name__}.draw")

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        rng = inputs[0] if self.inplace else _copy_generator(inputs[0])
        size = tuple(int(s) for s in inputs[1]) if self.has_size else None
        params = inputs[2:] if self.has_size else inputs[1:]
        try:
            sample = self.draw(rng, size, *params)
        except ValueError as e:
            shapes = ", ".join(str(np.shape(p)) for p in params)
            raise ValueError(f"{self}: {e} (size {size}, parameter shapes {shapes})") from None
        out[0][0] = rng
        out[1][0] = np.asarray(sample).astype(self.dtype, copy=False)

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        if self.has_size:
            size = node.inputs[1]
            static = _size_static(size)
            return [None, tuple(constant(s, dtype="int64") if s is not None else size[i]
                                for i, s in enumerate(static))]
        return [None, self.param_shape(node, shapes)]

    def param_shape(self, node: Apply, shapes: list) -> Tuple[Any, ...]:
        """The symbolic broadcast shape of the parameters (the sample's shape when size is None)."""
        params = node.inputs[1:]
        ndim = max((p.ndim for p in params), default=0)
        one = constant(1, dtype="int64")
        padded = [(one,) * (ndim - p.ndim) + tuple(s) for p, s in zip(params, shapes[1:])]
        static = [(1,) * (ndim - p.ndim) + p.type.shape for p in params]
        return tuple(broadcast_shape_symbolic(padded, static))

    def connection_pattern(self, node: Apply) -> List[List[bool]]:
        # the generator and size are never differentiated (disconnected); parameters feed the sample
        n_size = 1 if self.has_size else 0
        return ([[True, False]] + [[False, False]] * n_size
                + [[False, True] for _ in node.inputs[1 + n_size:]])

    def L_op(self, inputs: Sequence[Variable], outputs: Sequence[Variable],
             grads: Sequence[Variable]) -> List[Variable]:
        """Disconnected for the generator and size; the parameters get sample_grads (pathwise)."""
        n_size = 1 if self.has_size else 0
        params = list(inputs[1 + n_size:])
        return ([disconnected_type()] * (1 + n_size)
                + self.sample_grads(params, outputs[1], grads[1]))

    def sample_grads(self, params: List[Variable], sample: Variable, gz: Variable) -> List[Variable]:
        """The gradients of the parameters: undefined unless the distribution is reparameterizable."""
        return [grad_undefined(self, i + 1, p, "the distribution has no pathwise derivative")
                for i, p in enumerate(params)]


def _to_param(g: Variable, param: Variable) -> Variable:
    """A sample-shaped gradient summed back to the (broadcast) shape of a parameter."""
    extra = g.ndim - param.ndim
    if extra:
        g = tsum(g, axis=tuple(range(extra)))
    return reduce_to_input(g, param, g.type.shape)


def _float_params(op: Op, params: Sequence[Any]) -> List[Variable]:
    out = [as_tensor_variable(p) for p in params]
    for p in out:
        if np.dtype(p.dtype).kind not in "biuf":
            raise TypeError(f"{op}: parameters must be real numbers, got {p.describe()}")
    return out


class NormalRV(RandomVariable):
    """Gaussian samples with mean loc and standard deviation scale (Generator.normal)."""

    name, n_params = "normal", 2

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        return _float_params(self, params)

    def draw(self, rng: np.random.Generator, size: Any, loc: Any, scale: Any) -> Any:
        return rng.normal(loc, scale, size)

    def sample_grads(self, params: List[Variable], sample: Variable, gz: Variable) -> List[Variable]:
        """sample = loc + scale * z with z fixed by the generator: d/dloc = 1, d/dscale = z."""
        loc, scale = params
        return [_to_param(gz, loc), _to_param(mul(gz, true_div(sub(sample, loc), scale)), scale)]


class UniformRV(RandomVariable):
    """Samples uniform on [low, high) (Generator.uniform)."""

    name, n_params = "uniform", 2

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        return _float_params(self, params)

    def draw(self, rng: np.random.Generator, size: Any, low: Any, high: Any) -> Any:
        return rng.uniform(low, high, size)

    def sample_grads(self, params: List[Variable], sample: Variable, gz: Variable) -> List[Variable]:
        """sample = low + (high - low) * u with u fixed: d/dlow = 1 - u, d/dhigh = u."""
        low, high = params
        u = true_div(sub(sample, low), sub(high, low))
        return [_to_param(mul(gz, sub(1, u)), low), _to_param(mul(gz, u), high)]


class IntegersRV(RandomVariable):
    """Integers uniform on [low, high) (Generator.integers)."""

    name, n_params = "integers", 2

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        out = [as_tensor_variable(p) for p in params]
        for p in out:
            if np.dtype(p.dtype).kind not in "biu":
                raise TypeError(f"{self}: bounds must be integers, got {p.describe()}")
        if np.dtype(self.dtype).kind not in "biu":
            raise TypeError(f"{self}: dtype must be an integer dtype, got {self.dtype}")
        return out

    def draw(self, rng: np.random.Generator, size: Any, low: Any, high: Any) -> Any:
        return rng.integers(low, high, size, dtype=self.dtype)


class ChoiceRV(RandomVariable):
    """Elements of a (a 1-d tensor, or arange(a) for an int) drawn with or without replacement, weights p."""

    __props__ = ("dtype", "has_size", "inplace", "replace", "has_p")
    name = "choice"

    def __init__(self, dtype: str, has_size: bool = False, inplace: bool = False,
                 replace: bool = True, has_p: bool = False):
        super().__init__(dtype, has_size, inplace)
        self.replace = bool(replace)
        self.has_p = bool(has_p)
        self.n_params = 2 if self.has_p else 1

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        out = [as_tensor_variable(p) for p in params]
        a = out[0]
        if a.ndim > 1 or (a.ndim == 0 and np.dtype(a.dtype).kind not in "iu"):
            raise TypeError(f"{self}: a must be an int or a 1-d tensor, got {a.describe()}")
        if self.has_p and (out[1].ndim != 1 or np.dtype(out[1].dtype).kind != "f"):
            raise TypeError(f"{self}: p must be a float vector, got {out[1].describe()}")
        return out

    def static_shape(self, size: Optional[Variable], params: Sequence[Variable]) -> Tuple[Optional[int], ...]:
        return _size_static(size) if size is not None else ()

    def param_shape(self, node: Apply, shapes: list) -> Tuple[Any, ...]:
        return ()

    def draw(self, rng: np.random.Generator, size: Any, a: Any, p: Any = None) -> Any:
        return rng.choice(a, size, replace=self.replace, p=p)

    def sample_grads(self, params: List[Variable], sample: Variable, gz: Variable) -> List[Variable]:
        """a: the drawn indices are not an output, so not implemented; p: zero (the choices are
        piecewise constant in p for a fixed generator state)."""
        out = [grad_not_implemented(self, 1, params[0], "the drawn indices are not an output")]
        return out + [zeros_like(params[1]) for _ in params[1:]]


# ------------------------------------------------------------------------------------------------
# RandomStream: a factory of draws, each with its own shared generator updated by default
# ------------------------------------------------------------------------------------------------

class RandomStream:
    """Makes random tensors; each draw gets its own generator (seeded from the stream's seed), renewed at every call."""

    def __init__(self, seed: Optional[int] = None):
        self.default_seed = seed
        self.seed_sequence = np.random.SeedSequence(seed)
        self.state_updates: List[Tuple[SharedVariable, Variable]] = []

    def _new_generator(self) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.seed_sequence.spawn(1)[0]))

    def seed(self, seed: Optional[int] = None) -> None:
        """Reseed every generator of the stream (seed None: the stream's own seed) as if just created."""
        self.seed_sequence = np.random.SeedSequence(self.default_seed if seed is None else seed)
        for rng, _ in self.state_updates:
            rng.set_value(self._new_generator(), borrow=True)

    def updates(self) -> List[Tuple[SharedVariable, Variable]]:
        """(generator, new generator) pairs: the updates applied by default to compiled functions."""
        return list(self.state_updates)

    def gen(self, op: RandomVariable, size: Any, *params: Any) -> TensorVariable:
        """Apply op to a fresh shared generator; the generator's default_update is the op's new generator."""
        rng = shared(self._new_generator(), borrow=True)
        node = op.make_node(rng, *([size] if size is not None else []), *params)
        if FLAG_VALUES["compute_test_value"] != "off":
            compute_test_values(node)
        new_rng, sample = node.outputs
        rng.default_update = new_rng
        self.state_updates.append((rng, new_rng))
        return sample

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: str = "floatX"
               ) -> TensorVariable:
        """Gaussian samples of mean loc and standard deviation scale."""
        _check_not_a_size("normal", "loc", loc, size)
        return self.gen(NormalRV(dtype, size is not None), size, loc, scale)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None, dtype: str = "floatX"
                ) -> TensorVariable:
        """Samples uniform on [low, high)."""
        _check_not_a_size("uniform", "low", low, size)
        return self.gen(UniformRV(dtype, size is not None), size, low, high)

    def integers(self, low: Any, high: Any = None, size: Any = None, dtype: str = "int64"
                 ) -> TensorVariable:
        """Integers uniform on [low, high) (on [0, low) when high is None)."""
        _check_not_a_size("integers", "low", low, size)
        if high is None:
            low, high = 0, low
        return self.gen(IntegersRV(dtype, size is not None), size, low, high)

    def choice(self, a: Any, size: Any = None, replace: bool = True, p: Any = None,
               dtype: Optional[str] = None) -> TensorVariable:
        """Elements of a (or of arange(a) for an int a), with or without replacement, probabilities p."""
        a_var = as_tensor_variable(a)
        dtype = dtype or ("int64" if a_var.ndim == 0 else a_var.dtype)
        op = ChoiceRV(dtype, size is not None, replace=replace, has_p=p is not None)
        return self.gen(op, size, a_var, *([p] if p is not None else []))


def _check_not_a_size(method: str, param: str, value: Any, size: Any) -> None:
    """TypeError when a shape tuple is given as the first parameter: Theano's methods took size first.

    Refused with no size, and with a number as size: Theano's ``normal((2,), 0, 1)`` (size, avg, std) would
    otherwise draw one value of mean (2,) with std 0, silently."""
    looks_like_shape = isinstance(value, tuple) and value and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
    size_is_a_number = isinstance(size, (int, float, np.number)) and not isinstance(size, bool)
    if looks_like_shape and (size is None or size_is_a_number):
        raise TypeError(f"RandomStream.{method}: its first parameter is {param}, not the shape; got the tuple "
                        f"{value!r}, which looks like a shape (Theano's methods took size first: "
                        f"{method}(size, ...)): pass size={value!r} by keyword, or a list/array if {value!r} "
                        f"really is {param}")


__all__ = ["RandomGeneratorType", "random_generator_type", "RandomGeneratorSharedVariable",
           "RandomVariable", "NormalRV", "UniformRV", "IntegersRV", "ChoiceRV", "RandomStream"]
