"""Ops the compiler inserts itself (defined in link/ops.py, where the backends can see them)."""

from graphjit.link.ops import DeepCopyOp, deep_copy_op

__all__ = ["DeepCopyOp", "deep_copy_op"]
