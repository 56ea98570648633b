"""The base of the debugging modes: a Mode whose linker, made from a registered one, is instrumented."""

from __future__ import annotations

from typing import Any

from graphjit.compile.mode import Mode, _make_linker
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
            base = self._linker if self._linker is not None else _make_linker(self._linker_name)
            self._linker = self.instrument(base)
            self._instrumented = True
        return self._linker

    def clone(self, **changes: Any) -> Mode:
        """A plain Mode with this mode's instrumented linker unless another one is given."""
        changes.setdefault("linker", self.linker)
        return Mode.clone(self, **changes)


def require_instrumentable(linker: Linker, mode: str) -> Any:
    """linker's ``instrumented`` method, or a TypeError naming the mode."""
    method = getattr(linker, "instrumented", None)
    if method is None:
        raise TypeError(f"{mode} needs a linker that can be instrumented (the LLVM linker or 'py'), "
                        f"got {linker!r}")
    return method
