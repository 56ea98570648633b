"""In and Out: how a Variable enters or leaves a compiled function (defaults, updates, borrowing)."""

from __future__ import annotations

from typing import Any, Optional

from graphjit.graph.basic import Constant, Variable


class In:
    """A function input: its Variable plus name, default value, update and aliasing flags.

    ``value`` is the default used when the argument is omitted (a Container for shared variables).
    With ``update`` the input is state: the update's value replaces it after each call.
    ``mutable=True`` lets the compiled graph overwrite the argument in place (and implies borrow).
    ``strict=True`` refuses any conversion of the argument; ``borrow=True`` lets outputs alias it.
    """

    def __init__(self, variable: Variable, name: Optional[str] = None, value: Any = None,
                 update: Optional[Variable] = None, mutable: bool = False, strict: bool = False,
                 allow_downcast: Optional[bool] = None, borrow: bool = False,
                 implicit: bool = False):
        if isinstance(variable, Constant):
            raise TypeError(f"a Constant cannot be a function input: {variable.describe()}; "
                            "constants have a fixed value, leave them out of the inputs")
        if not isinstance(variable, Variable):
            raise TypeError(f"In() needs a Variable, got {variable!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"In(): name must be a string, got {name!r}")
        if update is not None and not isinstance(update, Variable):
            raise TypeError(f"In(): the update of {variable.describe()} must be a Variable, "
                            f"got {update!r}")
        self.variable = variable
        self.name = name if name is not None else variable.name
        self.value = value
        self.update = update
        self.mutable = mutable
        self.strict = strict
        self.allow_downcast = allow_downcast
        self.borrow = borrow or mutable
        self.implicit = implicit

    def __str__(self) -> str:
        flags = [f for f in ("mutable", "strict", "borrow", "implicit") if getattr(self, f)]
        extra = f", update={self.update}" if self.update is not None else ""
        return f"In({self.variable}{extra}{', ' if flags else ''}{', '.join(flags)})"

    def __repr__(self) -> str:
        return str(self)


class Out:
    """A function output; ``borrow=True`` lets the function return its internal storage (no copy).

    ``return_internal_type`` is accepted for code written against Theano's GPU values (whose internal type was
    not numpy's; Theano's ``get_value`` took it): an output here always is its user-facing value, so it changes
    nothing, as in ``SharedVariable.get_value``.
    """

    def __init__(self, variable: Variable, borrow: bool = False, return_internal_type: bool = False):
        if not isinstance(variable, Variable):
            raise TypeError(f"Out() needs a Variable, got {variable!r}")
        self.variable = variable
        self.borrow = bool(borrow)
        self.return_internal_type = bool(return_internal_type)

    def __str__(self) -> str:
        return f"Out({self.variable}{', borrow' if self.borrow else ''})"

    def __repr__(self) -> str:
        return str(self)
