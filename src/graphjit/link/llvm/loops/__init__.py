"""Loop nests: fusion of elementwise groups, their kernels, reductions and row-wise helpers."""
