"""numpy's constructors and repeaters built from arange, comparisons, DimShuffle and Alloc: tri, linspace,
logspace, geomspace, meshgrid, indices, tile and repeat (an int, or per-element counts through tensor/repeat_op.py);
each lowers natively with its parts' gradients."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from graphjit.graph.basic import Constant, Variable
from graphjit.config import config
from graphjit.tensor.alloc import alloc, arange, eye
from graphjit.tensor.basic import as_tensor_variable, cast
from graphjit.tensor.check_op import check_and_raise
from graphjit.tensor.math import floor, ge, log10, neq, sign, switch
from graphjit.tensor.join import stack
from graphjit.tensor.lengths import static_axis
from graphjit.tensor.numpy_helpers import broadcast_arrays
from graphjit.tensor.repeat_op import Repeat
from graphjit.tensor.shape import reshape, shape_padleft
from graphjit.tensor.variable import TensorVariable


def _count(n: Any, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"{name} must be a non-negative int, got {n!r}")
    return int(n)


def tri(N: Any, M: Any = None, k: Any = 0, dtype: Optional[str] = None) -> TensorVariable:
    """numpy.tri: an N x M matrix (M defaults to N) of ones at and below diagonal k, zeros above (dtype default
    floatX); N, M and k may be symbolic."""
    rows = arange(N, dtype="int64")
    cols = arange(N if M is None else M, dtype="int64")
    return cast(ge(rows.dimshuffle(0, "x") + k, cols.dimshuffle("x", 0)), dtype or config.floatX)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Optional[str] = None
             ) -> TensorVariable:
    """numpy.linspace of 0-d start and stop: num evenly spaced values (stop included when endpoint); num is a
    Python int."""
    num = _count(num, "num")
    start, stop = as_tensor_variable(start), as_tensor_variable(stop)
    if start.ndim or stop.ndim:
        raise ValueError(f"linspace takes 0-d start and stop here, got {start.describe()} and {stop.describe()}")
    # numpy's computing dtype: float32 inputs stay float32, anything else goes through float64
    wide = (str(np.result_type(start.dtype, stop.dtype, np.float32)) if dtype is None
            else dtype if np.dtype(dtype).kind == "f" else "float64")
    start, stop = cast(start, wide), cast(stop, wide)
    div = num - 1 if endpoint else num
    steps = cast(arange(num, dtype="int64"), wide)
    values = start + steps * ((stop - start) / div) if div > 0 else start + steps * (stop - start)
    if endpoint and num > 1:            # numpy sets the last value to stop exactly
        values = switch(ge(arange(num, dtype="int64"), num - 1), stop, values)
    if dtype is not None and np.dtype(dtype).kind in "iub":
        values = floor(values)          # numpy (>= 2.0) rounds towards -inf for integer dtypes
    return cast(values, dtype) if dtype is not None and dtype != wide else values


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: float = 10.0,
             dtype: Optional[str] = None) -> TensorVariable:
    """numpy.logspace: base ** linspace(start, stop, num, endpoint) (0-d start and stop)."""
    exponents = linspace(start, stop, num, endpoint)
    if isinstance(base, (int, float)):              # a Python number takes the exponents' dtype, as in numpy
        base = np.asarray(base, dtype=exponents.dtype)
    values = as_tensor_variable(base) ** exponents
    if dtype is not None and np.dtype(dtype).kind in "iub":
        values = floor(values)
    return cast(values, dtype) if dtype is not None else values


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Optional[str] = None
              ) -> TensorVariable:
    """numpy.geomspace of 0-d start and stop: num values evenly spaced on a log scale, both ends exact (a
    negative range keeps its sign; opposite signs give NaN, a zero end a ValueError, at run time if symbolic)."""
    num = _count(num, "num")
    start, stop = as_tensor_variable(start), as_tensor_variable(stop)
    if start.ndim or stop.ndim:
        raise ValueError(f"geomspace takes 0-d start and stop here, got {start.describe()} and {stop.describe()}")
    # numpy's computing dtype: start, stop and zeros((), dtype), whose default dtype float64 wins over float32
    wide = str(np.result_type(start.dtype, stop.dtype, float(num), np.zeros((), dtype)))
    if np.dtype(wide).kind not in "f":
        raise TypeError(f"geomspace computes in {wide} here (real floats only)")
    start, stop = cast(start, wide), cast(stop, wide)
    for end in (start, stop):
        if isinstance(end, Constant) and np.asarray(end.data) == 0:
            raise ValueError("Geometric sequence cannot include zero")
    start = check_and_raise(start, [neq(start, 0), neq(stop, 0)], "Geometric sequence cannot include zero")
    sgn = sign(start)
    values = logspace(log10(start / sgn), log10(stop / sgn), num, endpoint)
    step = arange(num, dtype="int64")
    values = switch(ge(step, 1), values, start / sgn)            # numpy makes both ends exact
    if endpoint and num > 1:
        values = switch(ge(step, num - 1), stop / sgn, values)
    values = cast(sgn * values, wide)
    return cast(values, dtype) if dtype is not None and dtype != wide else values    # numpy truncates to ints


def identity_like(x: Any, dtype: Optional[str] = None) -> TensorVariable:
    """PyTensor's identity_like: eye(x.shape[0], x.shape[1]) of matrix x, in x's dtype unless dtype is given
    (numpy.identity(n, dtype) is eye(n, dtype=dtype); graphjit.tensor.identity is Theano's elementwise copy)."""
    x = as_tensor_variable(x)
    if x.ndim != 2:
        raise ValueError(f"identity_like takes a matrix, got {x.describe()}")
    return eye(x.shape[0], x.shape[1], 0, dtype or x.dtype)


def indices(dimensions: Sequence[int], dtype: str = "int64", sparse: bool = False) -> Any:
    """numpy.indices for a tuple of int lengths: the grid of each axis' index, stacked on a first axis (or, with
    sparse, one broadcastable array per axis)."""
    dims = tuple(_count(d, "dimensions") for d in dimensions)
    grids = meshgrid(*[arange(d, dtype=dtype) for d in dims], indexing="ij", sparse=sparse)
    if sparse:
        return tuple(grids)
    return stack(grids) if grids else alloc(np.zeros((), dtype), 0)


def meshgrid(*xi: Any, indexing: str = "xy", sparse: bool = False) -> List[TensorVariable]:
    """numpy.meshgrid of 1-d inputs: 'xy' (Cartesian, the first two axes swapped) or 'ij' (matrix) indexing;
    sparse: the broadcastable views instead of full arrays."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid's indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [as_tensor_variable(x) for x in xi]
    for x in xs:
        if x.ndim != 1:
            raise ValueError(f"meshgrid takes 1-d inputs, got {x.describe()}")
    n = len(xs)
    views = []
    for i, x in enumerate(xs):
        axis = (1 - i if i < 2 else i) if indexing == "xy" and n > 1 else i
        views.append(x.dimshuffle(*[0 if d == axis else "x" for d in range(n)]))
    return views if sparse else broadcast_arrays(*views)


def tile(x: Any, reps: Sequence[int]) -> TensorVariable:
    """numpy.tile with reps a sequence of ints (or an int): x repeated reps[i] times along each axis."""
    x = as_tensor_variable(x)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    reps = tuple(_count(r, "reps") for r in reps)
    ndim = max(x.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    x = shape_padleft(x, ndim - x.ndim) if x.ndim < ndim else x
    # (r0, n0, r1, n1, ...) by broadcasting, then merged pairwise
    interleaved = x.dimshuffle(*[e for d in range(ndim) for e in ("x", d)])
    shape = [e for d in range(ndim) for e in (reps[d], x.shape[d])]
    full = alloc(interleaved, *shape)
    return reshape(full, [reps[d] * x.shape[d] for d in range(ndim)], ndim=ndim)


def repeat(x: Any, repeats: Any, axis: Optional[int] = None) -> TensorVariable:
    """numpy.repeat: each element repeated along axis (over the flattened x when None); repeats an int, or per
    element counts (an int vector of the axis' length, or of length 1), whose sum is the output's length."""
    x = as_tensor_variable(x)
    if axis is None:
        x, axis = x.flatten(), 0
    axis = static_axis(axis, x.ndim, x, "repeat")
    if isinstance(repeats, (bool, np.bool_)) or not isinstance(repeats, (int, np.integer)):
        counts = np.asarray(repeats) if isinstance(repeats, (list, tuple, np.ndarray)) else repeats
        if isinstance(counts, np.ndarray) and counts.ndim == 0:
            counts = counts.reshape(1)
        if isinstance(counts, np.ndarray) and counts.dtype.kind == "f" and counts.size == 0:
            counts = counts.astype("int64")
        if isinstance(counts, Variable) and getattr(counts.type, "ndim", None) == 0:
            counts = as_tensor_variable(counts).dimshuffle("x")     # one symbolic count for every element
        return Repeat(axis)(x, counts)
    r = _count(repeats, "repeats")
    pattern = [d for d in range(x.ndim)]
    pattern.insert(axis + 1, "x")
    shape = [x.shape[d] for d in range(x.ndim)]
    shape.insert(axis + 1, r)
    full = alloc(x.dimshuffle(*pattern), *shape)
    merged = [x.shape[d] for d in range(x.ndim)]
    merged[axis] = merged[axis] * r
    return reshape(full, merged, ndim=x.ndim)


__all__ = ["tri", "linspace", "logspace", "geomspace", "identity_like", "meshgrid", "indices", "tile", "repeat"]
