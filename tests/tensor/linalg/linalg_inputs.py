"""Input specs of the linear-algebra tests: well-conditioned SPD, triangular and general matrices whose values
survive op_check's layouts (Fortran order, strided, reversed)."""

from __future__ import annotations

import numpy as np

from op_check import Arr


def spd(shape, seed=0):
    """Symmetric positive definite matrices of shape (..., n, n)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, shape)
    n = shape[-1]
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def lower(shape, seed=1):
    """Lower triangular matrices with a diagonal in [1, 2]."""
    rng = np.random.default_rng(seed)
    n = shape[-1]
    return np.tril(rng.uniform(-1, 1, shape)) + np.eye(n) * (1 + rng.uniform(0, 1, shape[:-1])[..., None])


def general(shape, seed=2):
    """Well-conditioned general matrices."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, shape) + 3 * np.eye(shape[-1])


def fixed(values) -> Arr:
    """An Arr of fixed values (zero-size runs give zeros of the zeroed shape)."""
    values = np.asarray(values)
    return Arr(values.shape, values=values)
