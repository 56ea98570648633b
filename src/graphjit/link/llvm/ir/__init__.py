"""IR primitives: the lowering contexts (LowerContext, GraphContext), layouts, casts, modules, errors, buffers,
threads, callbacks into Python, fast math.

Rule: imports jit/ (compiling and symbols) and the registry's modules only; never scalar/, loops/, ops/ or
driver/ (they build on this package)."""
