"""The base of the debugging modes: a Mode whose linker, made from a registered one, is instrumented."""

from __future__ import annotations

import copy
from typing import Any

from graphjit.compile.mode import Mode, make_linker
from graphjit.link.basic import Linker


class InstrumentedMode(Mode):
    """A Mode building its linker from a registered name, then passing it to ``instrument(linker)``.

    Subclasses define ``instrument``; the linker is made on first use (so creating the mode loads no backend).
    Derived modes (``including``, ``clone``) keep the instrumented linker.
    """

    def instrument(self, linker: Linker) -> Linker:
        """The instrumented linker (subclasses)."""
        return linker

    @property
    def linker(self) -> Linker:
        """The registered linker, instrumented (made on first use)."""
        if not getattr(self, "_instrumented", False):
            base = self._linker if self._linker is not None else make_linker(self._linker_name)
            self._linker = self.instrument(base)
            self._instrumented = True
        return self._linker

    def clone(self, **changes: Any) -> Mode:
        """A copy of this mode with some of rewriter, include, exclude, require, name changed (still instrumented,
        its linker still made on first use); with another linker, a plain Mode."""
        if "linker" in changes:
            return Mode.clone(self, **changes)
        fields = {"rewriter": "provided_rewriter", "include": "include", "exclude": "exclude",
                  "require": "require", "name": "name"}
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"{type(self).__name__}.clone: unknown fields {sorted(unknown)}")
        cp = copy.copy(self)
        for key, value in changes.items():
            setattr(cp, fields[key], tuple(value) if key in ("include", "exclude", "require") else value)
        return cp


def require_instrumentable(linker: Linker, mode: str) -> Any:
    """linker's ``instrumented`` method, or a TypeError naming the mode."""
    method = getattr(linker, "instrumented", None)
    if method is None:
        raise TypeError(f"{mode} needs a linker that can be instrumented (the LLVM linker or 'py'), "
                        f"got {linker!r}")
    return method
