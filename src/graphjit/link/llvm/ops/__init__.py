"""Lowerings of ops, registered by Op class (graphjit.link.llvm.registry)."""
