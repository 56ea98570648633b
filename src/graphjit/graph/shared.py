"""Shared variables: graph inputs whose value lives between calls, and the shared() constructor.

They are graph-layer objects (an op's module, e.g. tensor/random.py, makes them without importing the
compile layer); compile/sharedvalue.py re-exports them under their Theano-era path.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, List, Optional

from graphjit.graph.basic import Variable
from graphjit.graph.container import Container, container_lock
from graphjit.graph.type import Type, generic

SharedConstructor = Callable[..., "SharedVariable"]
SHARED_CONSTRUCTORS: List[SharedConstructor] = []


class SharedVariable(Variable):
    """A Variable with a value held in a Container, an implicit input of every function using it.

    ``default_update`` (a Variable or None) is the update applied by functions that do not give
    one explicitly (unless compiled with ``no_default_updates``).
    """

    def __init__(self, type: Type, value: Any, strict: bool = False,
                 allow_downcast: Optional[bool] = None, container: Optional[Container] = None,
                 name: Optional[str] = None):
        super().__init__(type, None, None, name)
        if container is not None:
            self.container = container
            if container.variable is None:
                container.variable = self
        else:
            self.container = Container(self, [type.filter(value, strict=strict,
                                                          allow_downcast=allow_downcast)],
                                       readonly=False, strict=strict, allow_downcast=allow_downcast)
        self.default_update: Optional[Variable] = None

    def get_value(self, borrow: bool = False, return_internal_type: bool = False) -> Any:
        """The current value: a copy (taken between calls of the Functions using it), or with borrow=True the
        internal object itself (which a running Function may be updating in place).

        return_internal_type is Theano's (its GPU values had an internal type other than numpy's); here the
        internal value already is the user-facing one (an ndarray, a numpy Generator...), so it changes nothing.
        """
        with container_lock(self.container)[1]:
            value = self.container.data
            return value if borrow else copy.deepcopy(value)

    def set_value(self, new_value: Any, borrow: bool = False) -> None:
        """Set the value (filtered through the Type), between calls of the Functions using it; it is copied
        first unless borrow=True."""
        value = new_value if borrow else copy.deepcopy(new_value)
        with container_lock(self.container)[1]:
            self.container.data = value

    @property
    def value(self) -> Any:
        """The internal value (no copy); assigning filters it."""
        return self.container.data

    @value.setter
    def value(self, new_value: Any) -> None:
        self.container.data = new_value

    def clone(self, **kwargs: Any) -> "SharedVariable":
        """A SharedVariable of the same Type sharing this one's container (and so its value)."""
        cp = self.__class__(type=self.type, value=None, strict=False, allow_downcast=None,
                            container=self.container, name=self.name)
        self._copy_tag_to(cp)
        cp.default_update = self.default_update
        return cp


def shared_constructor(ctor: SharedConstructor, remove: bool = False) -> SharedConstructor:
    """Register (or with remove=True unregister) a constructor tried by shared(); newest first.

    A constructor is called as ``ctor(value, name=, strict=, allow_downcast=, borrow=, **kwargs)``
    and returns a SharedVariable, or raises TypeError to let the next one try.
    """
    if remove:
        SHARED_CONSTRUCTORS.remove(ctor)
    elif ctor not in SHARED_CONSTRUCTORS:
        SHARED_CONSTRUCTORS.append(ctor)
    return ctor


def shared(value: Any, name: Optional[str] = None, strict: bool = False,
           allow_downcast: Optional[bool] = None, borrow: bool = False, **kwargs: Any
           ) -> SharedVariable:
    """A SharedVariable holding value (copied unless borrow=True), made by the first constructor that accepts it."""
    if isinstance(value, Variable):
        raise TypeError(f"shared() needs a value, not a symbolic Variable ({value.describe()})")
    refusals = []
    for ctor in reversed(SHARED_CONSTRUCTORS):
        try:
            var = ctor(value, name=name, strict=strict, allow_downcast=allow_downcast,
                       borrow=borrow, **kwargs)
        except TypeError as e:
            refusals.append(f"{getattr(ctor, '__name__', ctor)}: {e}")
            continue
        return var
    raise TypeError(f"no shared constructor accepts {type(value).__name__} value {value!r} "
                    f"with arguments {sorted(kwargs)}: " + "; ".join(refusals))


@shared_constructor
def generic_constructor(value: Any, name: Optional[str] = None, strict: bool = False,
                        allow_downcast: Optional[bool] = None, borrow: bool = False
                        ) -> SharedVariable:
    """A SharedVariable of the Generic type (any Python object)."""
    return SharedVariable(type=generic, value=value if borrow else copy.deepcopy(value),
                          strict=strict, allow_downcast=allow_downcast, name=name)
