"""What a native entry is instrumented with (ir/callbacks.py emits it): a plain value the linker keys plans
with, kept apart from the IR so that a warm process does not load the instrumentation's code."""

from __future__ import annotations

from typing import NamedTuple


class Instrumentation(NamedTuple):
    """What the entry is instrumented with: guard (GUARD_* bits), hooks (Python pre/post), profile (counters).

    (A NamedTuple, immutable and compared by value: a frozen dataclass costs more to define, in every cold
    compile.)"""

    guard: int = 0
    hooks: bool = False
    profile: bool = False

    @property
    def needs_table(self) -> bool:
        """Whether the entry calls back into Python (then it takes the callback table and keeps the GIL)."""
        return bool(self.guard or self.hooks)

    @property
    def active(self) -> bool:
        """Whether any instrumentation is on."""
        return bool(self.guard or self.hooks or self.profile)


NO_INSTRUMENTATION = Instrumentation()
