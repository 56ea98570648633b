"""Python values (numbers, numpy scalars, nested lists) converted to a dtype by the boundary rules.

The rules (docs/dtypes.md, "Inputs given to a compiled function"), shared by ScalarType and TensorType:
- only numeric data converts (bool, int, float, complex); None, strings, dicts, objects are a TypeError;
- an integer that does not fit an integer dtype is an OverflowError whatever allow_downcast says (numpy's
  rule for Python ints, applied to numpy integer scalars too);
- a value converts when the dtype represents it exactly; an inexact one only with allow_downcast=True, or
  (allow_downcast None, ``round_floats``) when it is a float rounded to a float dtype without overflowing.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

NUMERIC_KINDS = "biufc"


def describe_value(data: Any) -> str:
    """How a message names a value: its type, and dtype and shape for an ndarray."""
    if isinstance(data, np.ndarray):
        kind = "an ndarray" if type(data) is np.ndarray else f"a {type(data).__name__}"
        return f"{kind} of dtype {data.dtype} and shape {data.shape}"
    return f"a {type(data).__name__}"


def value_to_array(data: Any, dtype: np.dtype, allow_downcast: Optional[bool],
                   round_floats: bool = True) -> np.ndarray:
    """data (not an ndarray) as an array of dtype, or TypeError/OverflowError by the rules above."""
    try:
        natural = np.asarray(data)
    except Exception as e:  # ragged lists and the like
        raise TypeError(f"cannot convert {describe_value(data)} to an array: {e}") from None
    numbers = natural.dtype == object and _all_numbers(natural)   # numpy's dtype for ints beyond 64 bits
    if natural.dtype.kind not in NUMERIC_KINDS and not numbers:
        raise TypeError(f"cannot convert {describe_value(data)} to a {dtype} array")
    if natural.dtype == dtype:
        return natural
    if dtype.kind in "iu" and natural.dtype.kind in "iu":
        check_int_range(natural, dtype)
    quiet = not allow_downcast
    try:
        with np.errstate(invalid="ignore" if quiet else "warn", over="ignore" if quiet else "warn"):
            cast = np.asarray(data, dtype=dtype)     # numpy raises OverflowError for Python ints out of range
    except OverflowError as e:
        raise OverflowError(f"{e} (converting {describe_value(data)})") from None
    except (TypeError, ValueError) as e:
        raise TypeError(f"cannot convert {describe_value(data)} to {dtype}: {e}") from None
    if allow_downcast or (not numbers and np.can_cast(natural.dtype, dtype, "safe")):
        return cast
    if _exact(natural, cast, numbers):
        return cast
    if allow_downcast is None and round_floats and dtype.kind == "f" and natural.dtype.kind == "f" \
            and np.array_equal(np.isfinite(cast), np.isfinite(natural)):
        return cast                    # Python floats may be rounded to a float dtype (Theano's rule)
    raise TypeError(f"cannot convert {describe_value(data)} (values of dtype {natural.dtype}) to {dtype} "
                    "without losing precision; cast it yourself or use allow_input_downcast=True")


def check_int_range(values: np.ndarray, dtype: np.dtype) -> None:
    """OverflowError unless every integer of values fits the integer dtype."""
    if values.size == 0:
        return
    info = np.iinfo(dtype)
    lo, hi = int(values.min()), int(values.max())
    if lo < info.min or hi > info.max:
        raise OverflowError(f"integer {lo if lo < info.min else hi} out of bounds for {dtype}")


def _all_numbers(arr: np.ndarray) -> bool:
    """An object array holding only numbers (numpy makes one for integers beyond 64 bits)."""
    return arr.size > 0 and all(isinstance(v, (int, float, complex, np.number)) for v in arr.flat)


def _exact(natural: np.ndarray, cast: np.ndarray, numbers: bool) -> bool:
    """Does cast hold exactly the values of natural?"""
    if numbers:                         # compare as Python numbers (int == float is exact in Python)
        pairs = zip(cast.ravel().tolist(), natural.ravel().tolist())
        return all(c == v or (c != c and v != v) for c, v in pairs)
    try:
        with np.errstate(all="ignore"):
            back = cast.astype(natural.dtype)
    except (TypeError, ValueError):
        return False
    return bool(np.array_equal(back, natural, equal_nan=natural.dtype.kind in "fc"))
