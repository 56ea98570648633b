"""Compile-phase timing: ``with phase("rewrite:merge1"): ...`` adds its seconds to this thread's recorder.

A FunctionMaker opens a recorder (``recording(rec)``) around its rewriting and linking; the rewriters, the
LLVM linker and its compiler mark their phases with ``phase(name)`` (or ``add(name, seconds)`` for a time
they measured anyway). With no recorder open a phase costs one thread-local lookup. Phase names without a
colon are the top-level phases and do not overlap; ``"a:b"`` is a part of phase ``a`` (e.g. one rewriter of
``rewrite``), so only the names without a colon add up to (at most) the total.
"""

from __future__ import annotations

import threading
import time
from typing import Dict, Iterator, Optional
from contextlib import contextmanager

_state = threading.local()


class PhaseRecorder:
    """Seconds and counts per phase name (one compile's, or several resumed into it)."""

    __slots__ = ("seconds", "counts")

    def __init__(self) -> None:
        self.seconds: Dict[str, float] = {}
        self.counts: Dict[str, int] = {}

    def add(self, name: str, seconds: float) -> None:
        """Count one occurrence of phase name lasting seconds."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        self.counts[name] = self.counts.get(name, 0) + 1

    def top_level(self) -> float:
        """The sum of the top-level phases (names without a colon, "total" excluded)."""
        return sum(s for k, s in self.seconds.items() if ":" not in k and k != "total")

    def as_dict(self) -> Dict[str, float]:
        """phase -> seconds, a copy."""
        return dict(self.seconds)


def current() -> Optional[PhaseRecorder]:
    """The recorder open in this thread, or None."""
    return getattr(_state, "rec", None)


class _Phase:
    __slots__ = ("name", "rec", "t0")

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> "_Phase":
        self.rec = rec = getattr(_state, "rec", None)
        if rec is not None:
            self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.rec is not None:
            self.rec.add(self.name, time.perf_counter() - self.t0)


def phase(name: str) -> _Phase:
    """A context manager timing its block as phase name (into this thread's recorder, if any)."""
    return _Phase(name)


def add(name: str, seconds: float) -> None:
    """Record seconds already measured as phase name (no-op without a recorder)."""
    rec = getattr(_state, "rec", None)
    if rec is not None:
        rec.add(name, seconds)


@contextmanager
def recording(rec: Optional[PhaseRecorder] = None, total: bool = True) -> Iterator[PhaseRecorder]:
    """Make rec (a new recorder if None) this thread's recorder for the block; total: add the block's time
    as "total". The previous recorder is restored after (a compile inside a compile records separately)."""
    rec = PhaseRecorder() if rec is None else rec
    previous = getattr(_state, "rec", None)
    _state.rec = rec
    t0 = time.perf_counter()
    try:
        yield rec
    finally:
        _state.rec = previous
        if total:
            rec.add("total", time.perf_counter() - t0)
