"""Lowerings of ops, registered by Op class (graphjit.link.llvm.registry).

Rule: imports ir/, scalar/, loops/ and jit/; never driver/ (lowerings that walk a graph live there)."""
