"""The continuous distributions numpy draws element by element (one libnpyrandom call per element: each class's
``c_draw``), with their pathwise gradients where the sample is an exact, cheap function of its parameters."""

from __future__ import annotations

from typing import List

from graphjit.graph.basic import Variable
from graphjit.tensor.math import log, mul, neg, sub, switch, true_div
from graphjit.tensor.math import gt as greater
from graphjit.tensor.random import _to_param
from graphjit.tensor.random_elementwise import ElementwiseRV, loc_scale_grads, scale_grad

_DD = ("double", "double")


class ExponentialRV(ElementwiseRV):
    """Exponential samples of mean scale (Generator.exponential)."""

    name, n_params = "exponential", 1
    c_draw = ("random_exponential", "double", ("double",))
    param_checks = ("non_negative",)

    def sample_grads(self, params: List[Variable], sample: Variable, gz: Variable) -> List[Variable]:
        """sample = scale * e with e fixed: d/dscale = sample / scale."""
        return [scale_grad(params[0], sample, gz)]


class GammaRV(ElementwiseRV):
    """Gamma samples of shape k and scale theta (Generator.gamma); no pathwise gradient."""

    name, n_params = "gamma", 2
    c_draw = ("random_gamma", "double", _DD)
    param_checks = ("non_negative", "non_negative")


class BetaRV(ElementwiseRV):
    """Beta samples of shapes a and b (Generator.beta); no pathwise gradient."""

    name, n_params = "beta", 2
    c_draw = ("random_beta", "double", _DD)
    param_checks = ("positive", "positive")


class _LocScaleRV(ElementwiseRV):
    """A location-scale family: sample = loc + scale * z, gradients pathwise."""

    n_params = 2
    param_checks = (None, "non_negative")

    def sample_grads(self, params: List[Variable], sample: Variable, gz: Variable) -> List[Variable]:
        """d/dloc = 1, d/dscale = (sample - loc) / scale."""
        return loc_scale_grads(params, sample, gz)


class LaplaceRV(_LocScaleRV):
    """Laplace (double exponential) samples of location loc and scale (Generator.laplace)."""

    name = "laplace"
    c_draw = ("random_laplace", "double", _DD)


class LogisticRV(_LocScaleRV):
    """Logistic samples of location loc and scale (Generator.logistic)."""

    name = "logistic"
    c_draw = ("random_logistic", "double", _DD)


class GumbelRV(_LocScaleRV):
    """Gumbel (extreme value type I) samples of location loc and scale (Generator.gumbel)."""

    name = "gumbel"
    c_draw = ("random_gumbel", "double", _DD)


class LognormalRV(ElementwiseRV):
    """Samples whose log is Gaussian of mean ``mean`` and standard deviation sigma (Generator.lognormal)."""

    name, n_params = "lognormal", 2
    c_draw = ("random_lognormal", "double", _DD)
    param_checks = (None, "non_negative")

    def sample_grads(self, params: List[Variable], sample: Variable, gz: Variable) -> List[Variable]:
        """sample = exp(mean + sigma * z): d/dmean = sample, d/dsigma = sample * z."""
        mean, sigma = params
        z = true_div(sub(log(sample), mean), sigma)
        return [_to_param(mul(gz, sample), mean), _to_param(mul(gz, mul(sample, z)), sigma)]


class WeibullRV(ElementwiseRV):
    """Weibull samples of shape a and scale 1 (Generator.weibull)."""

    name, n_params = "weibull", 1
    c_draw = ("random_weibull", "double", ("double",))
    param_checks = ("non_negative",)

    def sample_grads(self, params: List[Variable], sample: Variable, gz: Variable) -> List[Variable]:
        """sample = e ** (1 / a) with e fixed: d/da = -sample * log(sample) / a (0 where sample is 0)."""
        (a,) = params
        d = true_div(neg(mul(sample, log(sample))), a)
        return [_to_param(mul(gz, switch(greater(sample, 0), d, 0)), a)]


class VonMisesRV(ElementwiseRV):
    """von Mises samples on [-pi, pi] of mode mu and concentration kappa (Generator.vonmises)."""

    name, n_params = "vonmises", 2
    c_draw = ("random_vonmises", "double", _DD)
    param_checks = (None, "non_negative")


class StandardTRV(ElementwiseRV):
    """Student's t samples of df degrees of freedom, location 0 and scale 1 (Generator.standard_t)."""

    name, n_params = "standard_t", 1
    c_draw = ("random_standard_t", "double", ("double",))
    param_checks = ("positive",)


class StandardCauchyRV(ElementwiseRV):
    """Cauchy samples of location 0 and scale 1 (Generator.standard_cauchy)."""

    name, n_params = "standard_cauchy", 0
    c_draw = ("random_standard_cauchy", "double", ())


__all__ = ["ExponentialRV", "GammaRV", "BetaRV", "LaplaceRV", "LogisticRV", "GumbelRV", "LognormalRV",
           "WeibullRV", "VonMisesRV", "StandardTRV", "StandardCauchyRV"]
