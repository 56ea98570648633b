"""Theano's theano.sandbox.rng_mrg: MRG_RandomStreams is RandomStream (numpy's generators, not MRG31k3p)."""

from graphjit.tensor.random_stream import RandomStream

MRG_RandomStreams = RandomStream

__all__ = ["MRG_RandomStreams"]
