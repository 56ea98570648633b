"""Tensor rewrites, registered in ``rewrite_db`` (what Mode(rewriter="fast_run"/"fast_compile") runs)."""

from graphjit.tensor.rewriting.basic import (canonicalize_db, constant_folding, merge_rewriter,  # noqa: F401
                                             register_canonicalize, register_specialize,
                                             register_stabilize, rewrite_db, specialize_db,
                                             stabilize_db)
from graphjit.tensor.rewriting import elemwise, math, shape, sigmoid, special, subtensor  # noqa: F401  (they register)
from graphjit.tensor.rewriting.inplace import inplace_rewriter  # noqa: F401
from graphjit.tensor.rewriting import blas  # noqa: F401  (registers, and its inplace hook)
from graphjit.tensor.rewriting import update_inplace  # noqa: F401  (registers)
from graphjit.tensor.rewriting import random_inplace  # noqa: F401  (registers)
from graphjit.tensor.rewriting import branches, inner_graphs  # noqa: F401  (they register)
from graphjit.tensor.rewriting import blockwise, linalg, tensordot  # noqa: F401  (they register)

rewrite_db.seal()   # graphjit's own rewrites: a rewrite key names them by the source digest (compile/rewrite_cache.py)
