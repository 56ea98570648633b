"""Scalar bodies: the one generic lowering of scalar ops (lower.py) and the bodies registered per op (*_bodies.py).

Rule: imports ir/, jit/ and the registry only; never loops/, ops/ or driver/ (the fused loops call in here)."""
