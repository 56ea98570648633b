"""Loop nests: fusion of elementwise groups, their kernels, reductions and row-wise helpers.

Rule: imports ir/, scalar/ and jit/; never ops/ or driver/."""
