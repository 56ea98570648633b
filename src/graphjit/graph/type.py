"""Type: the constraints on the values a Variable may hold, plus Generic, SingletonType and NullType."""

from __future__ import annotations

from typing import Any, Optional

from graphjit.graph.basic import Constant, Variable
from graphjit.graph.type_base import TypeBase
from graphjit.graph.utils import MethodNotDefined


class Type(TypeBase):
    """A set of constraints on data objects; creates Variables and filters values.

    The LLVM backend registers the layouts of graphjit's Types itself (link/llvm/cpython/boxing.py).  A user's Type may
    implement the hooks it uses for a Type class it has no layout for (DESIGN.md section 3):
    ``llvm_layout(ctx) -> ir.Type`` (the LLVM type of a value), ``llvm_unbox(wrapper, obj, index)`` (check and
    extract a ``PyObject*`` argument), ``llvm_box(ctx, value)`` (the ``PyObject*`` of a value),
    ``llvm_cleanup(ctx, value)``, and ``llvm_version()`` (in the cache key).  Without them, values cross the
    native entry as a ``PyObject*`` filtered by ``filter``.
    """

    variable_type = Variable
    constant_type = Constant

    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> Any:
        """Return data, possibly converted to conform to this Type; raise TypeError if impossible."""
        raise MethodNotDefined(f"{type(self).__name__}.filter")

    def filter_inplace(self, value: Any, storage: Any, strict: bool = False,
                       allow_downcast: Optional[bool] = None) -> Any:
        """Like filter, allowed to reuse storage; by default calls filter."""
        return self.filter(value, strict, allow_downcast)

    def is_valid_value(self, data: Any) -> bool:
        """True if data is a legal value for a Variable of this Type."""
        try:
            self.filter(data, strict=True)
            return True
        except (TypeError, ValueError):
            return False

    def value_validity_msg(self, data: Any) -> str:
        """Why data is or is not valid."""
        try:
            self.filter(data, strict=True)
            return "value is valid"
        except (TypeError, ValueError) as e:
            return str(e)

    def filter_variable(self, other: Any, allow_convert: bool = True) -> Variable:
        """Convert a symbolic Variable (or constant data) into one of this Type, or raise TypeError."""
        if not isinstance(other, Variable):
            other = self.constant_type(self, other)
        if other.type == self:
            return other
        if allow_convert:
            converted = self.convert_variable(other)
            if converted is not None:
                return converted
        raise TypeError(f"cannot convert Type {other.type} (of Variable {other}) into Type {self}; "
                        f"you can try to manually convert {other} into a {self}")

    def convert_variable(self, var: Variable) -> Optional[Variable]:
        """Patch var so its type matches self if that is always safe; else None."""
        return None

    def in_same_class(self, other: "Type") -> bool:
        """True if other may describe the same values (used to check rewrites)."""
        return self == other

    def is_super(self, other: "Type") -> bool:
        """True if every value valid for other is valid for self."""
        return self == other

    def values_eq(self, a: Any, b: Any) -> bool:
        """True if a and b are exactly equal values of this Type."""
        return a == b

    def values_eq_approx(self, a: Any, b: Any) -> bool:
        """True if a and b are approximately equal (exact by default)."""
        return self.values_eq(a, b)

    def make_variable(self, name: Optional[str] = None) -> Variable:
        """A new Variable of this Type."""
        return self.variable_type(self, None, None, name)

    def make_constant(self, value: Any, name: Optional[str] = None) -> Constant:
        """A new Constant of this Type."""
        return self.constant_type(self, value, name)

    def __call__(self, name: Optional[str] = None) -> Variable:
        """A new Variable of this Type (Type is a variable factory)."""
        return self.make_variable(name)

    def clone(self, **kwargs) -> "Type":
        """A copy of this Type with some attributes changed."""
        if not kwargs:
            return self
        raise MethodNotDefined(f"{type(self).__name__}.clone")

    def may_share_memory(self, a: Any, b: Any) -> bool:
        """True if values a and b may share memory (identity by default)."""
        return a is b

    def get_shape_info(self, obj: Any) -> Any:
        """What the memory profiler needs to know about a value."""
        return obj

    # The LLVM hooks (see the class docstring). Types without a layout go through PyObject* + filter.
    def llvm_version(self) -> tuple:
        """Version of this Type's LLVM layout hooks, part of the cache key."""
        return ()


class SingletonType(Type):
    """A Type with no attributes: all instances of a class are equal."""

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __str__(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return str(self)


class Generic(SingletonType):
    """Any Python object (a PyObject* for the LLVM linker)."""

    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> Any:
        return data

    def is_valid_value(self, data: Any) -> bool:
        return True

    def values_eq(self, a: Any, b: Any) -> bool:
        try:
            import numpy as np
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                return bool(np.array_equal(a, b))
        except ImportError:  # pragma: no cover
            pass
        return bool(a == b)

    def __str__(self) -> str:
        return "generic"


generic = Generic()


class NullType(Type):
    """The Type of an undefined gradient; a graph containing it cannot be compiled."""

    def __init__(self, why_null: str = "(no explanation given)"):
        self.why_null = why_null

    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> Any:
        raise ValueError(f"No values may be assigned to a NullType: {self.why_null}")

    def filter_variable(self, other: Any, allow_convert: bool = True) -> Variable:
        raise ValueError("No values may be assigned to a NullType")

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __str__(self) -> str:
        return "NullType"
