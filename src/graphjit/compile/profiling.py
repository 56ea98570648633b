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
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from graphjit.graph.basic import Apply
from graphjit.graph import forksafe

_AT_EXIT: List["ProfileStats"] = []
_AT_EXIT_LOCK = forksafe.new_lock()


class ProfileStats:
    """The profile of one Function: ``summary()`` prints it; the numbers are attributes and methods, under
    Theano's names too (``fct_callcount``, ``fct_call_time``, ``compile_time``, ``apply_time``,
    ``apply_callcount``).

    A fused loop runs its nodes as one unit, so its time is known only as a whole: ``apply_time`` and
    ``apply_callcount`` give it to the loop's root (its last node: the reduction, or the elementwise node whose
    result the loop stores), and ``apply_fused`` maps that node to all the nodes of the loop.  The other nodes
    of a fused loop have no entry, so the times of ``apply_time`` add up to ``unit_time``.
    """

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
    def fct_callcount(self) -> int:
        """Theano's name of ``calls``: how many calls completed."""
        return self.calls

    @property
    def fct_call_time(self) -> float:
        """Theano's name of ``total_time``: seconds in the compiled function over all calls (measured inside it:
        the Python-side handling of arguments before it starts is not included)."""
        return self.total_time

    @property
    def compile_time(self) -> float:
        """Seconds spent compiling the function (the maker's ``total``, rewriting and linking included)."""
        return float(self._function.maker.compile_stats.get("total", 0.0))

    @property
    def apply_time(self) -> Dict[Apply, float]:
        """Apply node -> seconds over all calls; a fused loop's time goes to its root (see the class doc)."""
        return {nodes[-1]: seconds for nodes, seconds, _ in self.unit_times()}

    @property
    def apply_callcount(self) -> Dict[Apply, int]:
        """Apply node -> how many times it ran; a fused loop's runs are its root's (see the class doc)."""
        return {nodes[-1]: runs for nodes, _, runs in self.unit_times()}

    @property
    def apply_fused(self) -> Dict[Apply, List[Apply]]:
        """The root of every fused loop of several nodes -> the loop's nodes, in order (the root last)."""
        return {nodes[-1]: list(nodes) for _, nodes in self.units if len(nodes) > 1}

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
    def summary(self, file: Optional[TextIO] = None, n_apply: int = 20, n_ops_to_print: Optional[int] = None,
                n_apply_to_print: Optional[int] = None) -> None:
        """Print the profile as Theano's ProfileStats does: totals, compile time, classes, Apply nodes
        (Theano's n_apply_to_print is n_apply; n_ops_to_print, the classes shown, defaults to all)."""
        n = n_apply if n_apply_to_print is None else n_apply_to_print
        print(self.summary_text(n, n_ops_to_print), file=file or sys.stdout)

    def summary_text(self, n_apply: int = 20, n_classes: Optional[int] = None) -> str:
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
        classes = sorted(self.class_times().items(), key=lambda e: -e[1][0])
        for key, (seconds, runs, n) in classes[:n_classes]:
            share = 100 * seconds / total if total else 0.0
            cumulative += share
            per = seconds / runs if runs else 0.0
            lines.append(f"  {share:5.1f}%  {cumulative:5.1f}%  {seconds:.3e}s  {per:.3e}s  {runs:6d}  {n:4d}  {key}")
        if n_classes is not None and len(classes) > n_classes:
            lines.append(f"  ... ({len(classes) - n_classes} more)")
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
