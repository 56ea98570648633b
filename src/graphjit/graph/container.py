"""Containers: the typed one-element storage cells holding a graph's values, and the lock each gets.

A Function reads its inputs from and writes its outputs to Containers; a shared variable owns one for
the value it keeps between calls. Every container holding state between calls gets one re-entrant lock,
made on first use and numbered in creation order (compile/locking.py takes them in that order).
"""

from __future__ import annotations

import copy
import itertools
import threading
import weakref
from typing import Any, List, Optional, Tuple

from graphjit.graph.basic import Variable
from graphjit.graph.type import Type
from graphjit.graph import forksafe

StorageCell = List[Any]

_ORDER = itertools.count()          # next() is atomic under the GIL
# beside the container, not in it: a container pickles with its value, a lock does not pickle
_LOCKS: "weakref.WeakKeyDictionary[Any, Tuple[int, threading.RLock]]" = weakref.WeakKeyDictionary()


def container_lock(container: Any) -> Tuple[int, threading.RLock]:
    """(order, lock) of a state container, made on first use (the same for every Function sharing it)."""
    entry = _LOCKS.get(container)
    if entry is None:
        # setdefault is one dict operation under the GIL: two threads making it at once agree on one lock
        entry = _LOCKS.setdefault(container, (next(_ORDER), forksafe.new_rlock()))
    return entry


class Container:
    """A one-element storage cell whose value is filtered through a Type when set."""

    def __init__(self, r: Variable | Type, storage: StorageCell, readonly: bool = False,
                 strict: bool = False, allow_downcast: Optional[bool] = None,
                 name: Optional[str] = None):
        if not isinstance(storage, list) or len(storage) != 1:
            raise TypeError(f"Container storage must be a one-element list, got {storage!r}")
        if isinstance(r, Type):
            self.type, self.variable = r, None
        elif isinstance(r, Variable):
            self.type, self.variable = r.type, r
        else:
            raise TypeError(f"Container needs a Variable or a Type, got {r!r}")
        self.name = name if name is not None else getattr(self.variable, "name", None)
        self.storage = storage
        self.readonly = readonly
        self.strict = strict
        self.allow_downcast = allow_downcast

    def describe(self) -> str:
        """How error messages name this container's value."""
        if self.variable is not None:
            return self.variable.describe()
        return f"'{self.name}' of type {self.type}" if self.name else f"a value of type {self.type}"

    @property
    def data(self) -> Any:
        """The current value."""
        return self.storage[0]

    @data.setter
    def data(self, value: Any) -> None:
        if value is None and not self.readonly:
            self.storage[0] = None      # empties the cell
            return
        self.put(value)

    def put(self, value: Any) -> None:
        """Store value filtered through the Type; None is a value too (Generic holds it, a tensor refuses it)."""
        if self.readonly:
            raise ValueError(f"cannot set the read-only container of {self.describe()}")
        try:
            self.storage[0] = self.type.filter(value, strict=self.strict,
                                               allow_downcast=self.allow_downcast)
        except (TypeError, ValueError, OverflowError) as e:
            strict = " (strict: the value must already have exactly this type)" if self.strict else ""
            raise type(e)(f"bad value for {self.describe()}{strict}: {e}") from e

    value = data

    def copy(self, storage: Optional[StorageCell] = None) -> "Container":
        """A container with the same settings over a new cell (a copy of the value by default)."""
        if storage is None:
            storage = [copy.deepcopy(self.storage[0])]
        cp = Container(self.type, storage, self.readonly, self.strict, self.allow_downcast, self.name)
        cp.variable = self.variable
        return cp

    def __str__(self) -> str:
        return f"<{self.storage[0]!s}>"

    def __repr__(self) -> str:
        return f"<{self.storage[0]!r}>"
