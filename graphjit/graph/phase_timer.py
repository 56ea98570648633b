"""Compile-phase timing: a recorder that ``phase(name)`` blocks add their wall time to while it is active.

Nothing is timed unless a recorder is active (``recording(recorder)``): ``phase`` is then a no-op context
manager costing one global read.  Nested phases are recorded under their own names too (a rewriter's steps
inside "rewrite"): a table shows them indented by ``depth``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Dict, Iterator, List, Optional, Tuple

_local = threading.local()


class PhaseRecorder:
    """Seconds spent per named phase, in first-seen order, with the nesting depth of each."""

    def __init__(self) -> None:
        self.times: Dict[str, float] = {}
        self.depths: Dict[str, int] = {}
        self._depth = 0

    def add(self, name: str, seconds: float, depth: Optional[int] = None) -> None:
        """Add seconds to the phase called name."""
        self.times[name] = self.times.get(name, 0.0) + seconds
        self.depths.setdefault(name, self._depth if depth is None else depth)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as phase name (nested inside the current phase)."""
        depth = self._depth
        self._depth += 1
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._depth = depth
            self.add(name, time.perf_counter() - t0, depth)

    def items(self) -> List[Tuple[str, float, int]]:
        """(name, seconds, depth) of every phase, in first-seen order."""
        return [(n, t, self.depths[n]) for n, t in self.times.items()]


def active() -> Optional[PhaseRecorder]:
    """The recorder of this thread, if one is recording."""
    return getattr(_local, "recorder", None)


@contextlib.contextmanager
def recording(recorder: PhaseRecorder) -> Iterator[PhaseRecorder]:
    """Make recorder the active one (for this thread) inside the block."""
    saved = active()
    _local.recorder = recorder
    try:
        yield recorder
    finally:
        _local.recorder = saved


def phase(name: str) -> "contextlib.AbstractContextManager[None]":
    """A block timed as phase name by the active recorder (nothing when none is active)."""
    recorder = active()
    return recorder.phase(name) if recorder is not None else contextlib.nullcontext()
