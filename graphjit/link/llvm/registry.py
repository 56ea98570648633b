"""What the LLVM backend knows about ops and Types, registered beside the code that lowers them.

The backend imports the ops and registers, keyed by class (or, for scalar ops, by the op object), the function
that emits each one; an op never imports the backend.  ``Op.lower``/``Type.llvm_layout`` remain only as the hooks
a user's own op or Type implements: for an op, the first class on its MRO that has an entry or defines ``lower``
decides; a Type uses its hooks only when no class on its MRO has a layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Hashable, Mapping, Optional, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered implementation with its cache-key version, an optional applicability test, and options
    the registry's user reads (scalar_lowerings: ``loop_dtypes``, ``serial``, see link/llvm/ops/scalar.py)."""

    impl: T
    version: tuple = (1,)
    applies: Optional[Callable[..., bool]] = None
    options: Mapping[str, Any] = field(default_factory=dict)


class ClassRegistry(Generic[T]):
    """Implementations keyed by class, looked up along the MRO (a subclass inherits its base's entry).

    hook: the name of the method a user's own class implements instead (``lower``); a class defining it stops
    the search, so a user's subclass of a registered class keeps its own method.
    """

    def __init__(self, what: str, hook: Optional[str] = None) -> None:
        self.what = what
        self.hook = hook
        self._entries: dict[type, Entry[T]] = {}
        self._resolved: dict[type, Optional[Entry[T]]] = {}     # lookup's answers (cleared on any change)

    def register(self, cls: type, *, version: tuple = (1,),
                 applies: Optional[Callable[..., bool]] = None, **options: Any) -> Callable[[T], T]:
        """Decorator: register the decorated function for cls (and its subclasses); options are kept on the Entry
        (lowerings: ``callback=True`` when the emitted code calls back into Python, see ir/callbacks.py)."""
        if not isinstance(cls, type):
            raise TypeError(f"{self.what}s are registered for a class, not {cls!r}")

        def deco(impl: T) -> T:
            if cls in self._entries:
                raise ValueError(f"{self.what} for {cls.__qualname__} is already registered")
            self._entries[cls] = Entry(impl, tuple(version), applies, dict(options))
            self._resolved.clear()
            return impl
        return deco

    def unregister(self, cls: type) -> None:
        """Forget the entry of cls (a plugin reloading its lowering; tests)."""
        del self._entries[cls]
        self._resolved.clear()

    def lookup(self, cls: type) -> Optional[Entry[T]]:
        """The entry of cls or of its nearest registered base; None if there is none, or if a class on the
        way defines the hook method (then the caller uses the hook)."""
        try:
            return self._resolved[cls]
        except KeyError:
            pass
        entry = None
        for base in cls.__mro__:
            if base in self._entries:
                entry = self._entries[base]
                break
            if self.hook is not None and self.hook in vars(base):
                break
        self._resolved[cls] = entry
        return entry


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


lowerings: ClassRegistry[Any] = ClassRegistry("lowering", hook="lower")
"""Op class -> ``lower(ctx: GraphContext, node, inputs) -> outputs`` (ir/native_entry.py dispatches, lower_*.py
register); ``applies(node)`` says whether it takes this node (else the node calls back into perform)."""

layouts: ClassRegistry[Any] = ClassRegistry("layout")
"""Type class -> its boxing.TypeLayout subclass (how values of the Type cross the native entry); a subclass of a
registered Type keeps its base's layout, whose arguments the lowerings expect (the llvm_* hooks serve Types with
no registered base)."""

scalar_lowerings: ObjectRegistry[Any] = ObjectRegistry("scalar lowering")
"""Scalar op -> the body Elemwise inlines, for ops whose math is not declared as data."""

branch_lowerings: ClassRegistry[Any] = ClassRegistry("branch lowering")
"""Branching op class (graph/lazy.py) -> ``lower(ctx, node, regions) -> outputs``, where ``regions[k]()`` emits
the nodes only branch k needs at the builder's position (ir/native_entry.py calls it in place of the op's
``lowerings`` entry when the node has regions; that entry must exist too, and gives the node's version)."""
