"""RandomStream: makes random tensors, each draw with its own shared generator (Theano's RandomStreams surface,
numpy's method names, argument order and broadcasting)."""

from __future__ import annotations

import copy
from typing import Any, List, Optional, Tuple

import numpy as np

import graphjit.tensor.random as random_ops
from graphjit.config import config
from graphjit.graph.basic import Variable
from graphjit.graph.shared import SharedVariable, shared
from graphjit.graph.test_value import FLAG_VALUES, compute_test_values
from graphjit.tensor import random_compose as compose
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.random import ChoiceRV, IntegersRV, NormalRV, RandomVariable, UniformRV
from graphjit.tensor.random_continuous import (BetaRV, ExponentialRV, GammaRV, GumbelRV, LaplaceRV, LogisticRV,
                                               LognormalRV, StandardCauchyRV, StandardTRV, VonMisesRV, WeibullRV)
from graphjit.tensor.random_discrete import BinomialRV, GeometricRV, NegativeBinomialRV, PoissonRV
from graphjit.tensor.random_elementwise import RandomRV, StandardNormalRV
from graphjit.tensor.random_multivariate import DirichletRV, MultinomialRV, MultivariateNormalRV
from graphjit.tensor.random_permute import PermutationRV, PermutedRV
from graphjit.tensor.variable import TensorVariable


class RandomStream:
    """Makes random tensors; each draw gets its own generator (seeded from the stream's seed), renewed at every call.

    A draw ``rv`` exposes its generator as ``rv.rng`` (the shared variable; ``set_value`` re-seeds that one draw)
    and ``rv.update``, the (generator, new generator) pair, as Theano's RandomStreams did.
    """

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

    @property
    def rstate(self) -> np.random.SeedSequence:
        """The state new generators are seeded from (a copy; assigning one copies it: Theano's MRG rstate)."""
        return copy.deepcopy(self.seed_sequence)

    @rstate.setter
    def rstate(self, value: np.random.SeedSequence) -> None:
        self.seed_sequence = copy.deepcopy(value)

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
        return _with_rng(sample, sample)

    # --- numpy's Generator methods -------------------------------------------------------------

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: str = "floatX", *,
               avg: Any = None, std: Any = None) -> TensorVariable:
        """Gaussian samples of mean loc and standard deviation scale (Theano's keywords avg, std alike)."""
        loc = _theano_alias("normal", loc, 0.0, "avg", avg, "loc")
        scale = _theano_alias("normal", scale, 1.0, "std", std, "scale")
        _check_not_a_size("normal", "loc", loc, size)
        return self.gen(NormalRV(dtype, size is not None), size, loc, scale)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Samples uniform on [low, high)."""
        _check_not_a_size("uniform", "low", low, size)
        return self.gen(UniformRV(dtype, size is not None), size, low, high)

    def standard_normal(self, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Standard Gaussian samples (float32: numpy's float32 draw)."""
        return self.gen(StandardNormalRV(dtype, size is not None), size)

    def random(self, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Floats uniform on [0, 1) (float32: numpy's float32 draw)."""
        return self.gen(RandomRV(dtype, size is not None), size)

    def integers(self, low: Any, high: Any = None, size: Any = None, dtype: str = "int64") -> TensorVariable:
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

    def permutation(self, x: Any, axis: int = 0) -> TensorVariable:
        """x with its sub-arrays along axis in a random order; for an integer x, arange(x) shuffled."""
        x = as_tensor_variable(x)
        return self.gen(PermutationRV("int64" if x.ndim == 0 else x.dtype, axis=axis), None, x)

    def permuted(self, x: Any, axis: Optional[int] = None) -> TensorVariable:
        """x with every 1-d slice along axis shuffled independently (axis None: all its elements)."""
        x = as_tensor_variable(x)
        return self.gen(PermutedRV(x.dtype, axis=axis), None, x)

    def binomial(self, n: Any = 1, p: Any = 0.5, size: Any = None, dtype: str = "int64") -> TensorVariable:
        """Successes in n trials of probability p (Theano's defaults n=1, p=0.5)."""
        _check_not_a_size("binomial", "n", n, size)
        return self.gen(BinomialRV(dtype, size is not None), size, n, p)

    def negative_binomial(self, n: Any, p: Any, size: Any = None, dtype: str = "int64") -> TensorVariable:
        """Failures before the n-th success, success probability p."""
        return self.gen(NegativeBinomialRV(dtype, size is not None), size, n, p)

    def poisson(self, lam: Any = 1.0, size: Any = None, dtype: str = "int64") -> TensorVariable:
        """Poisson samples of rate lam."""
        return self.gen(PoissonRV(dtype, size is not None), size, lam)

    def geometric(self, p: Any, size: Any = None, dtype: str = "int64") -> TensorVariable:
        """Trials up to and including the first success (values from 1), success probability p."""
        return self.gen(GeometricRV(dtype, size is not None), size, p)

    def exponential(self, scale: Any = 1.0, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Exponential samples of mean scale."""
        return self.gen(ExponentialRV(dtype, size is not None), size, scale)

    def gamma(self, shape: Any, scale: Any = 1.0, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Gamma samples of the given shape and scale."""
        return self.gen(GammaRV(dtype, size is not None), size, shape, scale)

    def beta(self, a: Any, b: Any, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Beta samples of shapes a and b."""
        return self.gen(BetaRV(dtype, size is not None), size, a, b)

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Laplace (double exponential) samples."""
        return self.gen(LaplaceRV(dtype, size is not None), size, loc, scale)

    def logistic(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Logistic samples."""
        return self.gen(LogisticRV(dtype, size is not None), size, loc, scale)

    def gumbel(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Gumbel (extreme value type I) samples."""
        return self.gen(GumbelRV(dtype, size is not None), size, loc, scale)

    def lognormal(self, mean: Any = 0.0, sigma: Any = 1.0, size: Any = None, dtype: str = "floatX"
                  ) -> TensorVariable:
        """Samples whose log is Gaussian of mean ``mean`` and standard deviation sigma."""
        return self.gen(LognormalRV(dtype, size is not None), size, mean, sigma)

    def weibull(self, a: Any, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Weibull samples of shape a (scale 1, numpy's)."""
        return self.gen(WeibullRV(dtype, size is not None), size, a)

    def vonmises(self, mu: Any, kappa: Any, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """von Mises samples on [-pi, pi] of mode mu and concentration kappa."""
        return self.gen(VonMisesRV(dtype, size is not None), size, mu, kappa)

    def standard_t(self, df: Any, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Student's t samples of df degrees of freedom."""
        return self.gen(StandardTRV(dtype, size is not None), size, df)

    def standard_cauchy(self, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Cauchy samples of location 0 and scale 1."""
        return self.gen(StandardCauchyRV(dtype, size is not None), size)

    def dirichlet(self, alpha: Any, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Vectors on the simplex of concentrations alpha (last axis; other axes batch); size is the batch shape."""
        return self.gen(DirichletRV(dtype, size is not None), size, alpha)

    def multinomial(self, n: Any, pvals: Any, size: Any = None, dtype: str = "int64") -> TensorVariable:
        """Counts of n trials over categories of probabilities pvals (last axis); size is the batch shape."""
        return self.gen(MultinomialRV(dtype, size is not None), size, n, pvals)

    def multivariate_normal(self, mean: Any, cov: Any, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Gaussian vectors of mean ``mean`` and covariance cov (numpy's method="cholesky"); size: batch shape."""
        return self.gen(MultivariateNormalRV(dtype, size is not None), size, mean, cov)

    # --- compositions of one numpy draw (numpy has no such method) ------------------------------

    def cauchy(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: str = "floatX") -> TensorVariable:
        """Cauchy samples: loc + scale * standard_cauchy."""
        z = self.standard_cauchy(compose.draw_size(size, loc, scale), dtype)
        return _with_rng(_as_dtype(compose.location_scale(z, loc, scale), dtype), z)

    def halfnormal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: str = "floatX"
                   ) -> TensorVariable:
        """Half-normal samples: loc + scale * |standard_normal|."""
        z = self.standard_normal(compose.draw_size(size, loc, scale), dtype)
        return _with_rng(_as_dtype(compose.halfnormal(z, loc, scale), dtype), z)

    def student_t(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, dtype: str = "floatX"
                  ) -> TensorVariable:
        """Student's t samples of df degrees of freedom: loc + scale * standard_t(df)."""
        z = self.standard_t(df, compose.draw_size(size, df, loc, scale), dtype)
        return _with_rng(_as_dtype(compose.location_scale(z, loc, scale), dtype), z)

    def bernoulli(self, p: Any = 0.5, size: Any = None, dtype: str = "int64") -> TensorVariable:
        """1 with probability p, else 0: random() < p."""
        u = self.random(compose.draw_size(size, p), "float64")
        return _with_rng(compose.bernoulli(u, p, dtype), u)

    def categorical(self, p: Any, size: Any = None, dtype: str = "int64") -> TensorVariable:
        """Category indices drawn with probabilities p (last axis; other axes batch); size is the batch shape."""
        p = as_tensor_variable(p)
        if p.ndim < 1:
            raise TypeError(f"RandomStream.categorical: p needs a category axis, got {p.describe()}")
        batch = size if size is not None else compose.draw_size(None, p[..., 0])
        u = self.random(batch, "float64")
        return _with_rng(compose.categorical(u, p, dtype), u)

    def truncated_normal(self, loc: Any = 0.0, scale: Any = 1.0, lower: Any = -np.inf, upper: Any = np.inf,
                         size: Any = None, dtype: str = "floatX", *, avg: Any = None, std: Any = None
                         ) -> TensorVariable:
        """Gaussian samples of mean loc and standard deviation scale restricted to [lower, upper] (inverse CDF)."""
        loc = _theano_alias("truncated_normal", loc, 0.0, "avg", avg, "loc")
        scale = _theano_alias("truncated_normal", scale, 1.0, "std", std, "scale")
        _check_not_a_size("truncated_normal", "loc", loc, size)
        u = self.random(compose.draw_size(size, loc, scale, lower, upper), "float64")
        out = compose.truncated_normal(u, loc, scale, lower, upper)
        return _with_rng(_as_dtype(out, dtype), u)


def _theano_alias(method: str, value: Any, default: Any, alias: str, alias_value: Optional[Any],
                 name: str) -> Any:
    """The value of a parameter that Theano named ``alias`` (normal's avg/std): one of the two, not both."""
    if alias_value is None:
        return value
    if value is not default:
        raise TypeError(f"RandomStream.{method}: got both {name} and Theano's {alias} (the same parameter)")
    return alias_value


def _as_dtype(out: TensorVariable, dtype: str) -> TensorVariable:
    """A composition's sample in the requested dtype (floatX: config.floatX), as a RandomVariable's would be."""
    return out.astype(config.floatX if dtype == "floatX" else dtype)


def _with_rng(out: TensorVariable, draw: TensorVariable) -> TensorVariable:
    """out, carrying the generator of its draw as Theano's ``rv.rng`` and ``rv.update``."""
    rng = draw.owner.inputs[0]
    out.rng = rng
    out.update = (rng, rng.default_update)
    return out


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


# RandomStream's home was tensor/random.py: it stays importable from there (set here: random.py cannot import
# this module, which imports random.py)
random_ops.RandomStream = RandomStream  # type: ignore[attr-defined]

__all__ = ["RandomStream"]
