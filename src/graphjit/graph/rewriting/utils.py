"""What rewriting reports: the per-graph RewriteProfile (what fired, how long) and verbose output."""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from graphjit.config import config
from graphjit.graph.basic import Variable


class RewriteProfile:
    """Per-rewrite counts and times of one rewriting run (``fgraph.rewrite_profile``)."""

    def __init__(self) -> None:
        # id(rewriter) -> [rewriter, times applied, times tried, seconds]
        self._node: Dict[int, List[Any]] = {}
        # name -> [runs, seconds]
        self.graph_rewrites: Dict[str, List[float]] = {}
        self.total_time = 0.0
        self.budget_exceeded: List[str] = []
        self.depth = 0      # graph rewriters running (GraphRewriter.rewrite): 1 inside the top-level one

    def record(self, rewriter: Any, seconds: float, applied: bool) -> None:
        """Count one try of a node rewriter."""
        entry = self._node.get(id(rewriter))
        if entry is None:
            entry = self._node[id(rewriter)] = [rewriter, 0, 0, 0.0]
        entry[1] += applied
        entry[2] += 1
        entry[3] += seconds

    @property
    def node_rewrites(self) -> Dict[str, List[float]]:
        """name -> [times applied, times tried, seconds]."""
        result: Dict[str, List[float]] = {}
        for rewriter, applied, tried, seconds in self._node.values():
            entry = result.setdefault(str(rewriter), [0, 0, 0.0])
            entry[0] += applied
            entry[1] += tried
            entry[2] += seconds
        return result

    def record_graph(self, rewriter: Any, seconds: float, top: bool) -> None:
        """Count one run of a graph rewriter (the top-level one sets total_time)."""
        entry = self.graph_rewrites.setdefault(str(rewriter), [0, 0.0])
        entry[0] += 1
        entry[1] += seconds
        if top:
            self.total_time += seconds

    def applied(self) -> Dict[str, int]:
        """name -> number of times the node rewrite changed the graph (only those that fired)."""
        return {k: int(v[0]) for k, v in self.node_rewrites.items() if v[0]}

    def summary(self) -> str:
        """A table: rewrites that fired (count, time), then graph rewriters by time."""
        lines = [f"rewriting took {self.total_time * 1e3:.2f} ms"]
        fired = sorted(((v[0], v[1], v[2], k) for k, v in self.node_rewrites.items() if v[0]),
                       key=lambda e: (-e[0], e[3]))
        lines.append(f"  {'node rewrite':<36}{'applied':>8}{'tried':>8}{'ms':>9}")
        for applied, tried, seconds, name in fired:
            lines.append(f"  {name:<36}{int(applied):>8}{int(tried):>8}{seconds * 1e3:>9.3f}")
        lines.append(f"  {'graph rewriter':<36}{'runs':>8}{'':>8}{'ms':>9}")
        for name, (runs, seconds) in sorted(self.graph_rewrites.items(), key=lambda kv: -kv[1][1]):
            lines.append(f"  {name:<36}{int(runs):>8}{'':>8}{seconds * 1e3:>9.3f}")
        for msg in self.budget_exceeded:
            lines.append(f"  budget exceeded: {msg}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def profile_of(fgraph: Any) -> Optional[RewriteProfile]:
    """The RewriteProfile being filled for fgraph, or None."""
    return getattr(fgraph, "rewrite_profile", None)


def rewriter_profile(target: Any, file: Optional[TextIO] = None) -> RewriteProfile:
    """Print (to file, default stdout) and return the RewriteProfile of a Function or FunctionGraph."""
    fgraph = getattr(getattr(target, "maker", None), "fgraph", target)
    profile = profile_of(fgraph)
    if profile is None:
        raise ValueError(f"{target} has no rewrite profile (it was not rewritten by a GraphRewriter)")
    print(profile.summary(), file=file or sys.stdout)
    return profile


def verbose_report(reason: str, pairs: Sequence[Tuple[Variable, Variable]]) -> None:
    """Print each replacement when config.rewrite_verbose is set."""
    if not getattr(config, "rewrite_verbose", False):
        return
    for old, new in pairs:
        print(f"rewrite {reason}: {old} -> {new}")


class ChangeCounter:
    """A feature counting the changes of a graph (``fgraph.change_counter.version``)."""

    def __init__(self) -> None:
        self.version = 0

    def on_attach(self, fgraph: Any) -> None:
        fgraph.change_counter = self

    def on_detach(self, fgraph: Any) -> None:
        del fgraph.change_counter

    def on_import(self, fgraph: Any, node: Any, reason: Any) -> None:
        self.version += 1

    def on_prune(self, fgraph: Any, node: Any, reason: Any) -> None:
        self.version += 1

    def on_change_input(self, fgraph: Any, node: Any, i: int, old: Any, new: Any, reason: Any) -> None:
        self.version += 1


def graph_version(fgraph: Any) -> int:
    """A number that changes whenever fgraph changes (attaches a ChangeCounter on first use)."""
    counter = getattr(fgraph, "change_counter", None)
    if counter is None:
        counter = ChangeCounter()
        fgraph.attach_feature(counter)
    return counter.version
