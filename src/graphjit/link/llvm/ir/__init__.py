"""Building a FunctionGraph's IR: the lowering context, layouts, the native entry and what it calls."""
