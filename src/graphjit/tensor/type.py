"""TensorType: an ndarray of one dtype and rank, with optional static lengths; the typed constructors."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Sequence, Tuple

import numpy as np

from graphjit.config import config
from graphjit.graph.basic import Variable
from graphjit.graph.type import Type
from graphjit.scalar.basic import ALL_DTYPES, get_scalar_type
from graphjit.scalar.convert import NUMERIC_KINDS, value_to_array
from graphjit.scalar.convert import describe_value as _describe_value

_RANK_NAMES = {0: "scalar", 1: "vector", 2: "matrix", 3: "tensor3", 4: "tensor4"}
Shape = Tuple[Optional[int], ...]


def _normalize_shape(shape: Optional[Iterable[Any]], broadcastable: Optional[Iterable[bool]]) -> Shape:
    if shape is not None and broadcastable is not None:
        raise ValueError("give shape or broadcastable, not both")
    if broadcastable is not None:
        return tuple(1 if b else None for b in broadcastable)
    if shape is None:
        raise ValueError("TensorType needs shape (or broadcastable)")
    out = []
    for s in shape:
        if s is None:
            out.append(None)
        elif isinstance(s, (bool, np.bool_)):
            raise TypeError("TensorType shape entries are ints or None (use broadcastable= for bools)")
        else:
            s = int(s)
            if s < 0:
                raise ValueError(f"negative static length {s} in shape")
            out.append(s)
    return tuple(out)


_DTYPES: Dict[str, Tuple[str, np.dtype]] = {}     # dtype string as given -> (its canonical name, np.dtype): str(np.dtype(...)) is slow


class TensorType(Type):
    """numpy.ndarray values of a given dtype and ndim; each dim's length may be statically known."""

    def __init__(self, dtype: str, shape: Optional[Iterable[Any]] = None,
                 broadcastable: Optional[Iterable[bool]] = None, name: Optional[str] = None):
        if dtype == "floatX":
            dtype = config.floatX
        known = _DTYPES.get(dtype) if isinstance(dtype, str) else None
        if known is None:
            canonical = str(np.dtype(dtype))
            if canonical not in ALL_DTYPES:
                raise TypeError(f"unsupported dtype {canonical!r} for a TensorType; supported: "
                                f"{', '.join(ALL_DTYPES)}")
            known = (canonical, np.dtype(canonical))
            if isinstance(dtype, str):
                _DTYPES[dtype] = known
        self.dtype, self.numpy_dtype = known
        self.shape: Shape = _normalize_shape(shape, broadcastable)
        self.name = name

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self.shape)

    @property
    def broadcastable(self) -> Tuple[bool, ...]:
        """Per dimension, whether its length is statically 1."""
        return tuple(s == 1 for s in self.shape)

    def clone(self, dtype: Optional[str] = None, shape: Optional[Iterable[Any]] = None,
              broadcastable: Optional[Iterable[bool]] = None, **kwargs: Any) -> "TensorType":
        """A TensorType like this one with dtype and/or shape changed."""
        if shape is None and broadcastable is None:
            shape = self.shape
        return TensorType(dtype or self.dtype, shape, broadcastable)

    # --- values ------------------------------------------------------------------------------
    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> Any:
        if isinstance(data, np.ndarray) and data.dtype == self.numpy_dtype and type(data) is np.ndarray:
            arr = data
        elif strict:
            raise TypeError(f"expected a numpy.ndarray of dtype {self.dtype}, got "
                            f"{_describe_value(data)} (strict input)")
        else:
            arr = self._convert(data, allow_downcast)
        if arr.ndim != self.ndim:
            raise TypeError(f"expected an array with {self.ndim} dimension(s) ({self}), got one with "
                            f"{arr.ndim} (shape {arr.shape})")
        for i, (want, got) in enumerate(zip(self.shape, arr.shape)):
            if want is not None and want != got:
                raise TypeError(f"expected length {want} in dimension {i} ({self}), got shape {arr.shape}")
        return arr

    def _convert(self, data: Any, allow_downcast: Optional[bool]) -> np.ndarray:
        if isinstance(data, Variable):
            raise TypeError(f"expected a value, got the symbolic Variable {data}; "
                            "pass numeric data (or use givens= to substitute a Variable)")
        if not isinstance(data, np.ndarray):
            return value_to_array(data, self.numpy_dtype, allow_downcast)   # the rules of scalar/convert.py
        if data.dtype.kind not in NUMERIC_KINDS:
            raise TypeError(f"cannot convert {_describe_value(data)} to a {self.dtype} array")
        if data.dtype == self.numpy_dtype:
            return np.asarray(data)  # drops ndarray subclasses
        if allow_downcast or np.can_cast(data.dtype, self.numpy_dtype, "safe"):
            return data.astype(self.dtype)    # an array's cast is numpy's (allow_input_downcast=True: it wraps)
        raise TypeError(f"cannot convert an array of dtype {data.dtype} to {self.dtype} without "
                        "losing precision; cast it yourself or use allow_input_downcast=True")

    def is_valid_value(self, data: Any) -> bool:
        try:
            self.filter(data, strict=True)
            return True
        except TypeError:
            return False

    def values_eq(self, a: Any, b: Any, force_same_dtype: bool = True) -> bool:
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or (force_same_dtype and a.dtype != b.dtype):
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))

    def values_eq_approx(self, a: Any, b: Any, rtol: Optional[float] = None,
                         atol: Optional[float] = None) -> bool:
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind not in "fc" and b.dtype.kind not in "fc":
            return bool(np.array_equal(a, b))
        low = "float32" in (str(a.dtype), str(b.dtype)) or "complex64" in (str(a.dtype), str(b.dtype))
        rtol = rtol if rtol is not None else (1e-4 if low else 1e-7)
        atol = atol if atol is not None else (1e-5 if low else 1e-10)
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))

    def may_share_memory(self, a: Any, b: Any) -> bool:
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return bool(np.may_share_memory(a, b))
        return False

    # --- relations between types ---------------------------------------------------------------
    def is_super(self, other: Any) -> bool:
        """True if every value of other is a value of self."""
        return (isinstance(other, TensorType) and other.dtype == self.dtype and other.ndim == self.ndim
                and all(s is None or s == o for s, o in zip(self.shape, other.shape)))

    def in_same_class(self, other: Any) -> bool:
        return isinstance(other, TensorType) and other.dtype == self.dtype and other.ndim == self.ndim

    # convert_variable (a SpecifyShape when only the static shapes differ) is installed by tensor/operators.py.

    # --- identity --------------------------------------------------------------------------------
    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other) and self.dtype == other.dtype and self.shape == other.shape

    def __hash__(self) -> int:
        return hash((type(self), self.dtype, self.shape))

    def __str__(self) -> str:
        if self.name:
            return self.name
        if all(s is None for s in self.shape) and self.ndim in _RANK_NAMES:
            return f"TensorType({self.dtype}, {_RANK_NAMES[self.ndim]})"
        dims = ", ".join("?" if s is None else str(s) for s in self.shape)
        return f"TensorType({self.dtype}, shape=({dims}{',' if self.ndim == 1 else ''}))"

    def __repr__(self) -> str:
        return str(self)

    def get_shape_info(self, obj: Any) -> Any:
        return obj.shape

    def scalar_type(self):
        """The ScalarType of the elements."""
        return get_scalar_type(self.dtype)


# ------------------------------------------------------------------------------------------------
# Constructors: scalar/vector/matrix/... with b/i/l/f/d/c/z prefixes (Theano's names)
# ------------------------------------------------------------------------------------------------

def tensor(dtype: Optional[str] = None, shape: Optional[Sequence[Any]] = None, name: Optional[str] = None,
           broadcastable: Optional[Sequence[bool]] = None) -> Variable:
    """A new symbolic tensor of dtype (default floatX) and shape (ints or None)."""
    if isinstance(dtype, str) and shape is None and broadcastable is None and dtype not in ALL_DTYPES \
            and dtype != "floatX":
        try:
            np.dtype(dtype)
        except TypeError:
            name, dtype = dtype, None  # tensor("x") style
    if shape is None and broadcastable is None:
        raise TypeError("tensor() needs shape= (a tuple of ints or None) or broadcastable=")
    return TensorType(dtype or config.floatX, shape, broadcastable)(name)


def _ranked(ndim: int, doc: str):
    def make(name: Optional[str] = None, dtype: Optional[str] = None,
             shape: Optional[Sequence[Any]] = None) -> Variable:
        if shape is None:
            shape = (None,) * ndim
        elif len(shape) != ndim:
            raise ValueError(f"shape {shape} does not have {ndim} dimension(s)")
        return TensorType(dtype or config.floatX, shape)(name)
    make.__doc__ = doc
    return make


scalar = _ranked(0, "A 0-d tensor (default dtype floatX).")
vector = _ranked(1, "A 1-d tensor (default dtype floatX).")
matrix = _ranked(2, "A 2-d tensor (default dtype floatX).")
tensor3 = _ranked(3, "A 3-d tensor (default dtype floatX).")
tensor4 = _ranked(4, "A 4-d tensor (default dtype floatX).")
tensor5 = _ranked(5, "A 5-d tensor (default dtype floatX).")
tensor6 = _ranked(6, "A 6-d tensor (default dtype floatX).")
tensor7 = _ranked(7, "A 7-d tensor (default dtype floatX).")


def row(name: Optional[str] = None, dtype: Optional[str] = None) -> Variable:
    """A 1xN matrix."""
    return TensorType(dtype or config.floatX, (1, None))(name)


def col(name: Optional[str] = None, dtype: Optional[str] = None) -> Variable:
    """An Nx1 matrix."""
    return TensorType(dtype or config.floatX, (None, 1))(name)


_PREFIXES = {"b": "int8", "w": "int16", "i": "int32", "l": "int64", "f": "float32", "d": "float64",
             "c": "complex64", "z": "complex128"}


_BASES = {"scalar": (), "vector": (None,), "matrix": (None, None), "tensor3": (None,) * 3,
          "tensor4": (None,) * 4, "tensor5": (None,) * 5, "tensor6": (None,) * 6, "tensor7": (None,) * 7,
          "row": (1, None), "col": (None, 1)}
for _p, _dt in _PREFIXES.items():
    for _b, _shape in _BASES.items():
        # Theano's T.dmatrix is a TensorType: T.dmatrix("x") makes a Variable, and it is usable as a type
        globals()[_p + _b] = TensorType(_dt, _shape)
del _p, _dt, _b, _shape

PREFIXED_CONSTRUCTORS = tuple(p + b for p in _PREFIXES for b in _BASES)
_PLURALS = {"scalar": "scalars", "vector": "vectors", "matrix": "matrices", "tensor3": "tensor3s",
            "tensor4": "tensor4s", "tensor5": "tensor5s", "tensor6": "tensor6s", "tensor7": "tensor7s",
            "row": "rows", "col": "cols"}


def _plural(make: Any, doc: str, takes_dtype: bool) -> Any:
    def several(*names: Any, dtype: Optional[str] = None) -> Any:
        if dtype is not None and not takes_dtype:
            raise TypeError(f"{several.__name__} has a fixed dtype; use the unprefixed form to choose one")
        kw = {} if dtype is None else {"dtype": dtype}
        if len(names) == 1 and isinstance(names[0], int):
            return [make(**kw) for _ in range(names[0])]
        if len(names) == 1:
            return make(names[0], **kw)
        return [make(n, **kw) for n in names]
    several.__doc__ = doc
    return several


for _b, _many in _PLURALS.items():
    globals()[_many] = _plural(globals()[_b], f"Several {_b}s (Theano's {_many}): by names, or a count.", True)
    globals()[_many].__name__ = _many
    for _p in _PREFIXES:
        globals()[_p + _many] = _plural(globals()[_p + _b], f"Several {_p}{_b}s: ``{_p}{_many}('x', 'y')`` "
                                        f"or ``{_p}{_many}(2)``; one name gives one variable.", False)
        globals()[_p + _many].__name__ = _p + _many
del _b, _many, _p

PLURAL_CONSTRUCTORS = tuple(_PLURALS.values()) + tuple(p + m for p in _PREFIXES for m in _PLURALS.values())

__all__ = ["TensorType", "tensor", "scalar", "vector", "matrix", "tensor3", "tensor4", "tensor5", "tensor6",
           "tensor7", "row", "col", *PREFIXED_CONSTRUCTORS, *PLURAL_CONSTRUCTORS]

