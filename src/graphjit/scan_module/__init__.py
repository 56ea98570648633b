"""Loops: scan (Theano's), until, and map/reduce/foldl/foldr built on it."""

from graphjit.scan_module import grad  # noqa: F401  (registers Scan's L_op with scan_module/op.py)
from graphjit.scan_module.basic import scan, until
from graphjit.scan_module.op import Scan
from graphjit.scan_module.views import foldl, foldr, map, reduce  # noqa: A004  (Theano's names)

__all__ = ["scan", "until", "Scan", "map", "reduce", "foldl", "foldr"]
