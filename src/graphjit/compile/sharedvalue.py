"""Shared variables under their compile-layer path: graph/shared.py holds them; this module makes sure the
tensor constructor (ndarrays and numbers) is registered before shared() is first called."""

from graphjit.graph.shared import (SHARED_CONSTRUCTORS, SharedConstructor, SharedVariable,  # noqa: F401
                                   generic_constructor, shared, shared_constructor)
import graphjit.tensor.sharedvar  # noqa: F401  (registers tensor_constructor)
