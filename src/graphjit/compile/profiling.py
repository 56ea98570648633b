"""function(profile=True): ProfileStats, the run-time and compile-time profile of a Function (Theano's ProfileStats).

Run time comes from the linker's counters (link/llvm/ir/callbacks.py: the compiled function reads the monotonic
clock around every unit it runs and adds into an int64 array the Function owns; the PY linker times its nodes in
Python): per unit (a node, or a fused loop of several nodes) the nanoseconds and the number of runs, and the whole
function's.  Compile time comes from the FunctionMaker's phase recorder (graph/phase_timer.py,
``f.maker.compile_stats``): rewriting by step, IR build, LLVM optimisation, code generation, caches.
"""

from __future__ import annotations

import atexit
import sys
import threading
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from graphjit.graph.basic import Apply

_AT_EXIT: List["ProfileStats"] = []
_AT_EXIT_LOCK = threading.Lock()


class ProfileStats:
    """The profile of one Function: ``summary()`` prints it; the numbers are attributes and methods."""

    def __init__(self, function: Any, counters: Any, units: Sequence[Tuple[int, List[Apply]]]) -> None:
        self.name = function.name or "<unnamed function>"
        self._function = function
        self.counters = counters
        self.units = list(units)

    # ---------------------------------------------------------------- run time
    @property
    def calls(self) -> int:
        """How many calls completed."""
        return int(self.counters[-1])

    @property
    def total_time(self) -> float:
        """Seconds spent in the compiled function (or the PY linker's thunk) over all calls."""
        return float(self.counters[-2]) * 1e-9

    def unit_times(self) -> List[Tuple[List[Apply], float, int]]:
        """(nodes, seconds, runs) of every unit, in toposort order; a fused loop's nodes share one time."""
        return [(nodes, float(self.counters[2 * k]) * 1e-9, int(self.counters[2 * k + 1])) for k, nodes in self.units]

    @property
    def unit_time(self) -> float:
        """Seconds spent inside the units (the rest is the function's own work: allocation of outputs, checks)."""
        return sum(t for _, t, _ in self.unit_times())

    def class_times(self) -> Dict[str, Tuple[float, int, int]]:
        """Op class -> (seconds, runs, units); a fused loop counts as ``FusedLoop[<classes>]``."""
        out: Dict[str, Tuple[float, int, int]] = {}
        for nodes, seconds, runs in self.unit_times():
            key = _unit_class(nodes)
            t, r, n = out.get(key, (0.0, 0, 0))
            out[key] = (t + seconds, r + runs, n + 1)
        return out

    # ---------------------------------------------------------------- compile time
    def compile_times(self) -> List[Tuple[str, float, int]]:
        """(phase, seconds, depth): the maker's compile phases (graph/phase_timer.py) in the order they began,
        each followed by its parts ("rewrite:merge1" -> "merge1" under "rewrite"), then the total and the caches
        that were hit."""
        stats = self._function.maker.compile_stats
        rows: List[Tuple[str, float, int]] = []
        for name, seconds in stats.items():
            if ":" in name or name == "total":
                continue
            rows.append((name, seconds, 0))
            rows.extend((part.split(":", 1)[1], secs, 1) for part, secs in stats.items()
                        if part.startswith(name + ":"))
        if getattr(self._function.maker, "rewrites_cached", False):
            rows.append(("(rewritten graph from the cache)", 0.0, 0))
        native = self._function.native
        hits = [k for k in ("memory_hit", "plan_hit", "cache_hit") if native is not None and native.timings.get(k)]
        if hits:
            rows.append((f"({', '.join(hits)})", 0.0, 0))
        if "total" in stats:
            rows.append(("total", stats["total"], 0))
        return rows

    # ---------------------------------------------------------------- the table
    def summary(self, file: Optional[TextIO] = None, n_apply: int = 20) -> None:
        """Print the profile as Theano's ProfileStats does: totals, compile time, classes, Apply nodes."""
        print(self.summary_text(n_apply), file=file or sys.stdout)

    def summary_text(self, n_apply: int = 20) -> str:
        """The text summary() prints."""
        total, calls = self.total_time, self.calls
        lines = ["Function profiling", "==================", f"  Message: {self.name}",
                 f"  Time in {calls} calls of the compiled function: {total:.6e}s"
                 + (f" ({total / calls:.3e}s per call)" if calls else ""),
                 f"  Time in units (nodes and fused loops): {self.unit_time:.6e}s"
                 + (f" ({100 * self.unit_time / total:.1f}%)" if total else ""), "  Compile time:"]
        for name, seconds, depth in self.compile_times():
            lines.append(f"    {'  ' * depth}{name:<{44 - 2 * depth}} {seconds * 1e3:10.3f} ms")
        lines += ["", "Class", "---", "<% time> <sum %> <time (s)> <time per call> <#call> <#apply> <Class name>"]
        cumulative = 0.0
        for key, (seconds, runs, n) in sorted(self.class_times().items(), key=lambda e: -e[1][0]):
            share = 100 * seconds / total if total else 0.0
            cumulative += share
            per = seconds / runs if runs else 0.0
            lines.append(f"  {share:5.1f}%  {cumulative:5.1f}%  {seconds:.3e}s  {per:.3e}s  {runs:6d}  {n:4d}  {key}")
        lines += ["", "Apply", "---", "<% time> <sum %> <time (s)> <time per call> <#call> <index> <Apply (fused)>"]
        cumulative = 0.0
        rows = sorted(zip(self.units, self.unit_times()), key=lambda e: -e[1][1])
        for (k, _), (nodes, seconds, runs) in rows[:n_apply]:
            share = 100 * seconds / total if total else 0.0
            cumulative += share
            per = seconds / runs if runs else 0.0
            label = str(nodes[-1]) + (f"  (fused: {', '.join(str(n.op) for n in nodes[:-1])})" if len(nodes) > 1 else "")
            lines.append(f"  {share:5.1f}%  {cumulative:5.1f}%  {seconds:.3e}s  {per:.3e}s  {runs:6d}  {k:5d}  {label}")
        if len(rows) > n_apply:
            lines.append(f"  ... ({len(rows) - n_apply} more)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary_text()

    def reset(self) -> None:
        """Zero the run-time counters."""
        self.counters[:] = 0


def _unit_class(nodes: Sequence[Apply]) -> str:
    if len(nodes) == 1:
        return type(nodes[0].op).__name__
    names: List[str] = []
    for n in nodes:
        name = type(n.op).__name__
        if name not in names:
            names.append(name)
    return f"FusedLoop[{', '.join(names)}]"


def profile_of(function: Any) -> Optional[ProfileStats]:
    """The ProfileStats of a Function compiled with profiling (None otherwise)."""
    counters = getattr(function.fn, "profile_counters", None)
    if counters is None:
        return None
    return ProfileStats(function, counters, function.fn.profile_units)


def print_at_exit(stats: ProfileStats) -> None:
    """Print stats' summary (to stderr) when the process exits (config.profile)."""
    with _AT_EXIT_LOCK:
        if not _AT_EXIT:
            atexit.register(_print_all)
        _AT_EXIT.append(stats)


def _print_all() -> None:
    for stats in list(_AT_EXIT):
        try:
            stats.summary(file=sys.stderr)
        except Exception as e:      # noqa: BLE001 - the process is exiting: report, do not raise
            print(f"graphjit profile of {stats.name}: {e}", file=sys.stderr)
