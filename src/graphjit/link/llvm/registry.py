"""What the LLVM backend knows about ops and Types, registered beside the code that lowers them.

The backend imports the ops and registers, keyed by class (or, for scalar ops, by the op object), the function
that emits each one; an op never imports the backend.  ``Op.lower``/``Type.llvm_layout`` remain only as the hooks
a user's own op or Type implements: for an op, the first class on its MRO that has an entry or defines ``lower``
decides; a Type uses its hooks only when no class on its MRO has a layout.

The backend's own registrations load lazily (builtin_table.py lists their modules): ``lookup``, ``unregister``
and a ``register`` from outside the backend (a user's lowering: a duplicate is refused at once) load them all
first (load_builtins).  A warm process never needs them: the cache keys (cache/keys.py) take only the versions
of registrations made outside graphjit (``user_version``; graphjit's own code is covered by its source digest).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Generic, Hashable, Mapping, Optional, TypeVar

from graphjit.link.llvm import builtin_table
from graphjit.graph import forksafe

T = TypeVar("T")

_LOAD_LOCK = forksafe.IMPORTS      # its imports nest with the library's other lazy imports: one lock
_state = {"loaded": False, "loading": False}


def builtins_loaded() -> bool:
    """Whether the backend's own lowering and layout modules are loaded (a warm process may never load them)."""
    return _state["loaded"]


def load_builtins() -> None:
    """Import every module of builtin_table.MODULES (once): they register the backend's lowerings and layouts;
    and those of builtin_table.DEFERRED whose trigger module is loaded (checked at every call)."""
    if _state["loaded"]:
        if _deferred:
            _load_deferred()
        return
    with _LOAD_LOCK:            # another thread loading them: wait; this thread (a module registering): go on
        if _state["loaded"] or _state["loading"]:
            return
        _state["loading"] = True
        try:
            for name in builtin_table.MODULES:
                importlib.import_module(name)
            _state["loaded"] = True
        finally:
            _state["loading"] = False
    _load_deferred()


_deferred = dict(builtin_table.DEFERRED)       # module -> trigger, until imported


def _load_deferred() -> None:
    """Import the deferred modules whose trigger is loaded (a Scan class exists only once its module is)."""
    for name, trigger in list(_deferred.items()):
        if trigger in sys.modules:
            with _LOAD_LOCK:
                if _deferred.pop(name, None) is not None:
                    importlib.import_module(name)


_BACKEND = __name__.rsplit(".", 1)[0] + "."      # graphjit.link.llvm.


def _before_registering(impl: Any) -> None:
    """A registration from outside the backend loads the backend's own first (a duplicate is refused at once);
    the backend's modules register while they load, in whatever order they are imported."""
    if not getattr(impl, "__module__", "").startswith(_BACKEND):
        load_builtins()


UNREGISTERED = ("unregistered",)     # user_version of a class whose backend registration was removed


def _from_outside(impl: Any) -> bool:
    """Whether impl was registered from outside graphjit (a user's: its version goes into the cache keys)."""
    return not getattr(impl, "__module__", "").startswith("graphjit.")


class Entry(Generic[T]):
    """A registered implementation with its version (in the cache keys when registered from outside graphjit,
    cache/keys.py), an optional applicability test, and options
    the registry's user reads (scalar_lowerings: ``loop_dtypes``, ``serial``, see link/llvm/scalar/lower.py).

    Immutable.  (A plain class: a frozen dataclass costs ~0.7 ms to define, paid by every cold compile.)"""

    __slots__ = ("impl", "version", "applies", "options")

    def __init__(self, impl: T, version: tuple = (1,), applies: Optional[Callable[..., bool]] = None,
                 options: Optional[Mapping[str, Any]] = None) -> None:
        set_ = object.__setattr__
        set_(self, "impl", impl)
        set_(self, "version", version)
        set_(self, "applies", applies)
        set_(self, "options", {} if options is None else options)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"an Entry is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"an Entry is immutable (cannot delete {name!r})")

    def _fields(self) -> tuple:
        return (self.impl, self.version, self.applies, self.options)

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Entry(impl={self.impl!r}, version={self.version!r}, applies={self.applies!r}, options={self.options!r})"


class ClassRegistry(Generic[T]):
    """Implementations keyed by class, looked up along the MRO (a subclass inherits its base's entry).

    hook: the name of the method a user's own class implements instead (``lower``); a class defining it stops
    the search, so a user's subclass of a registered class keeps its own method.
    """

    def __init__(self, what: str, hook: Optional[str] = None) -> None:
        self.what = what
        self.hook = hook
        self._entries: dict[type, Entry[T]] = {}
        # what the keys take for a class's own entry: the version of one registered from outside graphjit,
        # UNREGISTERED where the backend's own was removed (graphjit's sources no longer describe what lowers it)
        self._user: dict[type, tuple] = {}
        self._resolved: dict[type, Optional[Entry[T]]] = {}     # lookup's answers (cleared on any change)

    def register(self, cls: type, *, version: tuple = (1,),
                 applies: Optional[Callable[..., bool]] = None, **options: Any) -> Callable[[T], T]:
        """Decorator: register the decorated function for cls (and its subclasses); options are kept on the Entry
        (lowerings: ``callback=True`` when the emitted code calls back into Python, see ir/callbacks.py)."""
        if not isinstance(cls, type):
            raise TypeError(f"{self.what}s are registered for a class, not {cls!r}")

        def deco(impl: T) -> T:
            _before_registering(impl)
            if cls in self._entries:
                raise ValueError(f"{self.what} for {cls.__qualname__} is already registered")
            self._entries[cls] = Entry(impl, tuple(version), applies, dict(options))
            if _from_outside(impl):
                self._user[cls] = tuple(version)
            else:
                self._user.pop(cls, None)
            self._resolved.clear()
            return impl
        return deco

    def unregister(self, cls: type) -> None:
        """Forget the entry of cls (a plugin reloading its lowering; tests)."""
        load_builtins()
        entry = self._entries.pop(cls)
        if _from_outside(entry.impl):
            self._user.pop(cls, None)
        else:
            self._user[cls] = UNREGISTERED
        self._resolved.clear()

    def lookup(self, cls: type) -> Optional[Entry[T]]:
        """The entry of cls or of its nearest registered base; None if there is none, or if a class on the
        way defines the hook method (then the caller uses the hook)."""
        try:
            return self._resolved[cls]
        except KeyError:
            pass
        load_builtins()
        entry = None
        for base in cls.__mro__:
            if base in self._entries:
                entry = self._entries[base]
                break
            if self.hook is not None and self.hook in vars(base):
                break
        self._resolved[cls] = entry
        return entry

    def version(self, cls: type) -> tuple | None:
        """The version of lookup(cls)'s entry (None: no entry, or a hook decides); loads the backend's own."""
        entry = self.lookup(cls)
        return entry.version if entry is not None else None

    def user_version(self, cls: type) -> tuple | None:
        """What the cache keys take for cls's own entry: the version of one registered from outside graphjit,
        UNREGISTERED if the backend's own was unregistered, else None.  Never loads the backend's registrations
        (a registration or unregistration from outside loaded them already)."""
        return self._user.get(cls)


class ObjectRegistry(Generic[T]):
    """Implementations keyed by a hashable object (a scalar op singleton)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[Hashable, Entry[T]] = {}
        self._user: dict[Hashable, tuple] = {}      # the version of each entry registered from outside graphjit

    def register(self, key: Hashable, *, version: tuple = (1,),
                 applies: Optional[Callable[..., bool]] = None, **options: Any) -> Callable[[T], T]:
        """Decorator: register the decorated function for key (options: kept on the Entry)."""
        def deco(impl: T) -> T:
            _before_registering(impl)
            if key in self._entries:
                raise ValueError(f"{self.what} for {key!r} is already registered")
            self._entries[key] = Entry(impl, version, applies, dict(options))
            if _from_outside(impl):
                self._user[key] = tuple(version)
            return impl
        return deco

    def user_versions(self) -> tuple:
        """(key's class, key as text, version) of every entry registered from outside graphjit, sorted."""
        return tuple(sorted((f"{type(k).__module__}.{type(k).__qualname__}", str(k), v) for k, v in self._user.items()))

    def lookup(self, key: Hashable) -> Optional[Entry[T]]:
        """The entry of key, or None."""
        load_builtins()
        return self._entries.get(key)


lowerings: ClassRegistry[Any] = ClassRegistry("lowering", hook="lower")
"""Op class -> ``lower(ctx: GraphContext, node, inputs) -> outputs`` (driver/native_entry.py dispatches, lower_*.py
register); ``applies(node)`` says whether it takes this node (else the node calls back into perform)."""

layouts: ClassRegistry[Any] = ClassRegistry("layout")
"""Type class -> its boxing.TypeLayout subclass (how values of the Type cross the native entry); a subclass of a
registered Type keeps its base's layout, whose arguments the lowerings expect (the llvm_* hooks serve Types with
no registered base)."""

scalar_lowerings: ObjectRegistry[Any] = ObjectRegistry("scalar lowering")
"""Scalar op -> the body Elemwise inlines, for ops whose math is not declared as data."""

branch_lowerings: ClassRegistry[Any] = ClassRegistry("branch lowering")
"""Branching op class (graph/branch_schedule.py) -> ``lower(ctx, node, regions) -> outputs``, where ``regions[k]()`` emits
the nodes only branch k needs at the builder's position (driver/native_entry.py calls it in place of the op's
``lowerings`` entry when the node has regions; that entry must exist too, and gives the node's version)."""
