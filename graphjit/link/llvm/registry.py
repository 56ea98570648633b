"""What the LLVM backend knows about ops and Types, registered beside the code that lowers them.

The backend imports the ops and registers, keyed by class (or, for scalar ops, by the op object), the function
that emits each one; an op never imports the backend.  ``Op.lower``/``Type.llvm_layout`` remain only as the hooks
a user's own op or Type implements; registered entries win over them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Hashable, Mapping, Optional, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered implementation with its cache-key version, an optional applicability test, and options
    the registry's user reads (scalar_lowerings: ``loop_dtypes``, ``serial``, see link/llvm/scalar_math.py)."""

    impl: T
    version: tuple = (1,)
    applies: Optional[Callable[..., bool]] = None
    options: Mapping[str, Any] = field(default_factory=dict)


class ClassRegistry(Generic[T]):
    """Implementations keyed by class, looked up along the MRO (a subclass inherits its base's entry)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[type, Entry[T]] = {}

    def register(self, cls: type, *, version: tuple = (1,),
                 applies: Optional[Callable[..., bool]] = None) -> Callable[[T], T]:
        """Decorator: register the decorated function for cls (and its subclasses)."""
        def deco(impl: T) -> T:
            if cls in self._entries:
                raise ValueError(f"{self.what} for {cls.__qualname__} is already registered")
            self._entries[cls] = Entry(impl, version, applies)
            return impl
        return deco

    def lookup(self, cls: type) -> Optional[Entry[T]]:
        """The entry of cls or of its nearest registered base, or None."""
        for base in cls.__mro__:
            entry = self._entries.get(base)
            if entry is not None:
                return entry
        return None


class ObjectRegistry(Generic[T]):
    """Implementations keyed by a hashable object (a scalar op singleton)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[Hashable, Entry[T]] = {}

    def register(self, key: Hashable, *, version: tuple = (1,),
                 applies: Optional[Callable[..., bool]] = None, **options: Any) -> Callable[[T], T]:
        """Decorator: register the decorated function for key (options: kept on the Entry)."""
        def deco(impl: T) -> T:
            if key in self._entries:
                raise ValueError(f"{self.what} for {key!r} is already registered")
            self._entries[key] = Entry(impl, version, applies, dict(options))
            return impl
        return deco

    def lookup(self, key: Hashable) -> Optional[Entry[T]]:
        """The entry of key, or None."""
        return self._entries.get(key)


lowerings: ClassRegistry[Any] = ClassRegistry("lowering")
"""Op class -> ``lower(ctx, node, inputs) -> outputs``; ``applies(node)`` says whether it takes this node."""

layouts: ClassRegistry[Any] = ClassRegistry("layout")
"""Type class -> the Type's native layout handler (see the registering module for its protocol)."""

scalar_lowerings: ObjectRegistry[Any] = ObjectRegistry("scalar lowering")
"""Scalar op -> the body Elemwise inlines, for ops whose math is not declared as data."""
