"""The driver: what walks a graph and lowers it into one native entry (native_entry.py), inner graphs of scan and
branches (inner_graph.py), in-place outputs, the callback table, and the lowerings that walk graphs themselves.

Rule: the top of the backend's IR side: imports ir/, scalar/, loops/, ops/, cpython/, jit/ and the registry;
nothing below it imports driver/ (a lowering reaches the driver only through the registry)."""
