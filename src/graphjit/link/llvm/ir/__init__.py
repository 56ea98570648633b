"""IR primitives: the lowering contexts (LowerContext, GraphContext), layouts, casts, modules, errors, buffers,
threads, callbacks into Python, fast math.

Rule: imports jit/ (compiling and symbols), cache/keys.py (the key parts fast math names) and limits.py; never
scalar/, loops/, ops/ or driver/ (they build on this package; tests/test_layers.py checks the order)."""
