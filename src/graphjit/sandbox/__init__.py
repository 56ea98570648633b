"""Theano's theano.sandbox paths that programs import (rng_mrg)."""
