"""The discrete distributions numpy draws element by element: binomial, negative binomial, Poisson, geometric.
No pathwise gradients (the samples are piecewise constant in their parameters)."""

from __future__ import annotations

from graphjit.tensor.random_elementwise import ElementwiseRV


class _DiscreteRV(ElementwiseRV):
    sample_kind = "i"


class BinomialRV(_DiscreteRV):
    """Successes in n trials of probability p (Generator.binomial).

    No ``c_draw``: numpy's C draw takes (p, n) and a cache struct; the native side lowers it by hand."""

    name, n_params = "binomial", 2
    int_params = (0,)


class NegativeBinomialRV(_DiscreteRV):
    """Failures before the n-th success, success probability p (Generator.negative_binomial).

    No ``c_draw``: numpy checks the Poisson rate bound ``(1 - p) / p * (n + 10 sqrt(n))`` before drawing."""

    name, n_params = "negative_binomial", 2


class PoissonRV(_DiscreteRV):
    """Poisson samples of rate lam (Generator.poisson)."""

    name, n_params = "poisson", 1
    c_draw = ("random_poisson", "int64", ("double",))
    param_checks = ("poisson",)


class GeometricRV(_DiscreteRV):
    """Trials up to and including the first success, success probability p (Generator.geometric)."""

    name, n_params = "geometric", 1
    c_draw = ("random_geometric", "int64", ("double",))
    param_checks = ("bounded_gt_0_1",)


__all__ = ["BinomialRV", "NegativeBinomialRV", "PoissonRV", "GeometricRV"]
