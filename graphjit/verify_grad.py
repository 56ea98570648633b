"""verify_grad: compare symbolic gradients with central finite differences (kept in graphjit.gradient).

This module keeps the old import path ``from graphjit.verify_grad import verify_grad`` working.
"""

from graphjit.gradient import verify_grad  # noqa: F401
