"""Length arithmetic on Python ints (folded at build time) or int64 0-d tensors (graph ops): slice lengths
and the bounds they take, without overflow for any int64 or uint64 value."""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Union

import numpy as np

from graphjit.graph.basic import Constant, Variable
from graphjit.tensor import math as gm
from graphjit.tensor.basic import as_tensor_variable, cast, constant

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def saturate_int64(v: int) -> int:
    """A slice bound clamped into int64 (same slice: any length fits in int64)."""
    return min(max(v, INT64_MIN), INT64_MAX)


Len = Union[int, Variable]


def _i64(v: Any) -> Any:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return constant(int(v), dtype="int64")
    return v


def _fold(py: Callable[..., Any], sym: Any, right_identity: Optional[int] = None) -> Callable[..., Any]:
    def apply(*args: Any) -> Any:
        if right_identity is not None and isinstance(args[1], int) and args[1] == right_identity:
            return args[0]
        if all(isinstance(a, int) for a in args):
            return py(*args)
        return sym(*[_i64(a) for a in args])
    return apply


_lt = _fold(operator.lt, gm.lt)
_gt = _fold(operator.gt, gm.gt)
length_eq = _fold(operator.eq, gm.eq)
"""a == b on lengths (a Python bool when both are ints)."""
_neg = _fold(operator.neg, gm.neg)
_max = _fold(max, gm.maximum)
_min = _fold(min, gm.minimum)
_add = _fold(operator.add, gm.add, right_identity=0)
_sub = _fold(operator.sub, gm.sub, right_identity=0)
_floordiv = _fold(operator.floordiv, gm.int_div, right_identity=1)


def length_where(cond: Any, a: Len, b: Len) -> Len:
    """a where cond holds, else b (folded when cond is a Python bool)."""
    if isinstance(cond, (bool, np.bool_)):
        return a if cond else b
    return gm.switch(cond, _i64(a), _i64(b))


def as_length(v: Any) -> Len:
    """A shape entry as a Python int (when constant) or an int64 0-d tensor."""
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, Constant):
        return int(np.asarray(v.data))
    v = as_tensor_variable(v)
    return v if v.dtype == "int64" else cast(v, "int64")


def as_bound(v: Any) -> Len:
    """An index input as a slice bound (int64; uint64 values above int64's range saturate, same slice)."""
    if isinstance(v, Constant):
        return saturate_int64(int(np.asarray(v.data)))
    if isinstance(v, Variable) and v.type.dtype == "uint64":
        return gm.switch(gm.gt(v, INT64_MAX), constant(INT64_MAX, dtype="int64"), cast(v, "int64"))
    return as_length(v)


def length_variable(v: Len) -> Variable:
    """A length as an int64 0-d tensor."""
    return _i64(v)


def _clamp_bound(b: Len, n: Len, low: Len, high: Len) -> Len:
    """Python's slice-bound rule: a negative bound counts from the end, then clamps into [low, high]."""
    return length_where(_lt(b, 0), _max(_add(b, n), low), _min(b, high))


def _directed_length(start: Optional[Len], stop: Optional[Len], stride: Len, n: Len,
                     forward: bool) -> Len:
    """Slice length for a step of known sign and magnitude stride (> 0)."""
    if forward:
        lo = 0 if start is None else _clamp_bound(start, n, 0, n)
        hi = n if stop is None else _clamp_bound(stop, n, 0, n)
    else:
        last = _sub(n, 1)
        hi = last if start is None else _clamp_bound(start, n, -1, last)
        lo = -1 if stop is None else _clamp_bound(stop, n, -1, last)
    span = _sub(hi, lo)  # (span - 1) // stride + 1: no overflow for a stride near 2**63
    return length_where(_gt(span, 0), _add(_floordiv(_sub(span, 1), stride), 1), 0)


def slice_length(start: Optional[Len], stop: Optional[Len], step: Optional[Len], n: Len) -> Len:
    """len(range(n)[start:stop:step]) on ints or int64 tensors (step 0 is the caller's error)."""
    if step is None:
        step = 1
    if isinstance(step, int):
        return _directed_length(start, stop, min(abs(step), INT64_MAX), n, step > 0)
    fwd = _directed_length(start, stop, length_where(_gt(step, 0), step, 1), n, True)
    # -step overflows for step = -2**63; any step of magnitude >= n gives the same length
    bwd = _directed_length(start, stop, length_where(_lt(step, 0), _neg(_max(step, -INT64_MAX)), 1), n, False)
    return length_where(_gt(step, 0), fwd, bwd)
