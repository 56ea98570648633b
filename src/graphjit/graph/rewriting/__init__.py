"""Graph rewriting: node and graph rewriters, pattern rewrites, walkers, and the rewrite database."""

from graphjit.graph.rewriting.basic import (FromFunctionGraphRewriter, FromFunctionNodeRewriter,  # noqa: F401
                                            GraphRewriter, NodeRewriter, RewriteTypeError,
                                            SequentialGraphRewriter, apply_node_rewrite,
                                            graph_rewriter, node_rewriter)
from graphjit.graph.rewriting.db import EquilibriumDB, RewriteDatabase, SequenceDB  # noqa: F401
from graphjit.graph.rewriting.pattern import PatternNodeRewriter  # noqa: F401
from graphjit.graph.rewriting.utils import RewriteProfile, rewriter_profile  # noqa: F401
from graphjit.graph.rewriting.walkers import (EquilibriumGraphRewriter, WalkingGraphRewriter,  # noqa: F401
                                              in2out, out2in)
