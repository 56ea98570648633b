"""The graph IR (basic.py: Variable, Apply, Constant and the graph algorithms), FunctionGraph, features, rewriting."""

from graphjit.graph.basic import clone_replace  # noqa: F401  (Theano's graph.clone_replace)
