"""Node and graph rewriters: the units of rewriting, and the one place replacements are applied.

A node rewriter looks at one Apply node and proposes replacements for its outputs; a graph rewriter
changes a whole FunctionGraph. ``apply_node_rewrite`` applies a proposal: it checks that each new
variable keeps the Type of the one it replaces, replaces through ReplaceValidate (reverting when a
feature objects) and records the change in the graph's RewriteProfile.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from graphjit.graph.basic import Apply, Variable
from graphjit.graph.features import ReplaceValidate
from graphjit.graph.fg import FunctionGraph, InconsistencyError
from graphjit.graph import phase_timer
from graphjit.graph.gc_pause import gc_paused
from graphjit.graph.rewriting.utils import RewriteProfile, profile_of, verbose_report

Replacements = Union[None, bool, Sequence[Variable], Dict[Variable, Variable]]
Tracks = Optional[Sequence[Any]]


class RewriteTypeError(TypeError):
    """A rewrite proposed a replacement whose Type differs from the variable it replaces."""


class NodeRewriter:
    """Proposes replacements for the outputs of one node (subclasses define transform)."""

    name: Optional[str] = None

    def tracks(self) -> Tracks:
        """The op classes or op instances this rewriter looks at (None: every node)."""
        return None

    def transform(self, fgraph: FunctionGraph, node: Apply) -> Replacements:
        """New outputs for node (list or dict old->new), or None/False for no change."""
        raise NotImplementedError

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        """Attach the features this rewriter needs."""

    def __str__(self) -> str:
        return self.name or type(self).__name__

    __repr__ = __str__


class FromFunctionNodeRewriter(NodeRewriter):
    """A NodeRewriter made from a function fn(fgraph, node) (see node_rewriter)."""

    def __init__(self, fn: Callable[[FunctionGraph, Apply], Replacements], tracks: Tracks,
                 requirements: Sequence[Callable[[FunctionGraph], None]] = (),
                 name: Optional[str] = None):
        self.fn = fn
        self._tracks = None if tracks is None else list(tracks)
        self.requirements = list(requirements)
        self.name = name or fn.__name__
        self.__doc__ = fn.__doc__

    def tracks(self) -> Tracks:
        return self._tracks

    def transform(self, fgraph: FunctionGraph, node: Apply) -> Replacements:
        return self.fn(fgraph, node)

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        for req in self.requirements:
            req(fgraph)

    def __call__(self, fgraph: FunctionGraph, node: Apply) -> Replacements:
        return self.fn(fgraph, node)


def node_rewriter(tracks: Tracks, requirements: Sequence[Callable[[FunctionGraph], None]] = (),
                  name: Optional[str] = None) -> Callable[[Callable[..., Replacements]],
                                                          FromFunctionNodeRewriter]:
    """Decorator: make fn(fgraph, node) -> replacements a NodeRewriter tracking the given ops."""
    if tracks is not None and not isinstance(tracks, (list, tuple)):
        raise TypeError(f"node_rewriter: tracks must be a list of ops or op classes, got {tracks!r}")

    def decorate(fn: Callable[..., Replacements]) -> FromFunctionNodeRewriter:
        return FromFunctionNodeRewriter(fn, tracks, requirements, name)

    return decorate


def normalize_replacements(node: Apply, result: Replacements, rewriter: Any
                           ) -> List[Tuple[Variable, Variable]]:
    """The (old, new) pairs a transform proposed (an empty list for no change)."""
    if result is None or result is False:
        return []
    if isinstance(result, dict):
        pairs = list(result.items())
    elif isinstance(result, (list, tuple)):
        if len(result) != len(node.outputs):
            raise ValueError(f"rewrite {rewriter} gave {len(result)} replacement(s) for the "
                             f"{len(node.outputs)} output(s) of {node}")
        pairs = list(zip(node.outputs, result))
    else:
        raise TypeError(f"rewrite {rewriter} returned {result!r}; expected a list, a dict, "
                        "None or False")
    return [(old, new) for old, new in pairs if new is not None and new is not old]


def check_replacement_type(old: Variable, new: Variable, rewriter: Any) -> Variable:
    """new, converted to old's Type if it is only more or less specific; raises naming the rewrite."""
    if old.type == new.type:
        return new
    converted = old.type.convert_variable(new)
    if converted is None:
        raise RewriteTypeError(f"rewrite {rewriter} replaces {old} of type {old.type} by {new} of "
                               f"type {new.type}; a rewrite must keep the Type")
    return converted


def apply_node_rewrite(fgraph: FunctionGraph, rewriter: NodeRewriter, node: Apply) -> bool:
    """Run rewriter on node and apply its replacements; True if the graph changed."""
    profile = profile_of(fgraph)
    start = time.perf_counter()
    result = rewriter.transform(fgraph, node)
    pairs = normalize_replacements(node, result, rewriter)
    if not pairs:
        if profile is not None:
            profile.record(rewriter, time.perf_counter() - start, applied=False)
        return False
    pairs = [(old, check_replacement_type(old, new, rewriter)) for old, new in pairs]
    applied = replace_pairs(fgraph, pairs, str(rewriter))
    if profile is not None:
        profile.record(rewriter, time.perf_counter() - start, applied=applied)
    return applied


def replace_pairs(fgraph: FunctionGraph, pairs: List[Tuple[Variable, Variable]], reason: str) -> bool:
    """Replace and validate (reverting on InconsistencyError); False if a feature refused."""
    if not hasattr(fgraph, "replace_all_validate"):
        fgraph.attach_feature(ReplaceValidate())
    try:
        fgraph.replace_all_validate(pairs, reason=reason)
    except InconsistencyError:
        return False
    verbose_report(reason, pairs)
    return True


class GraphRewriter:
    """Changes a whole FunctionGraph (subclasses define apply)."""

    name: Optional[str] = None

    def apply(self, fgraph: FunctionGraph) -> Any:
        """Rewrite fgraph in place."""
        raise NotImplementedError

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        """Attach the features this rewriter needs (ReplaceValidate by default)."""
        if not hasattr(fgraph, "replace_all_validate"):
            fgraph.attach_feature(ReplaceValidate())

    def rewrite(self, fgraph: FunctionGraph) -> Any:
        """add_requirements then apply, recording a RewriteProfile on fgraph.rewrite_profile."""
        top = profile_of(fgraph) is None
        if top:
            fgraph.rewrite_profile = RewriteProfile()
        profile = fgraph.rewrite_profile
        profile.depth += 1
        start = time.perf_counter()
        # rewriting allocates many small objects: the cyclic GC would rescan the graph repeatedly (graph/gc_pause.py)
        try:
            with gc_paused():
                self.add_requirements(fgraph)
                return self.apply(fgraph)
        finally:
            profile.depth -= 1
            seconds = time.perf_counter() - start
            profile.record_graph(self, seconds, top)
            if profile.depth == 1:      # the steps of the top-level rewriter are the phases' parts
                phase_timer.add(f"rewrite:{self}", seconds)

    def __call__(self, fgraph: FunctionGraph) -> Any:
        return self.rewrite(fgraph)

    def __str__(self) -> str:
        return self.name or type(self).__name__

    __repr__ = __str__


class FromFunctionGraphRewriter(GraphRewriter):
    """A GraphRewriter made from a function fn(fgraph) (see graph_rewriter)."""

    def __init__(self, fn: Callable[[FunctionGraph], Any], name: Optional[str] = None,
                 requirements: Sequence[Callable[[FunctionGraph], None]] = ()):
        self.fn = fn
        self.name = name or fn.__name__
        self.requirements = list(requirements)

    def apply(self, fgraph: FunctionGraph) -> Any:
        return self.fn(fgraph)

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        super().add_requirements(fgraph)
        for req in self.requirements:
            req(fgraph)


def graph_rewriter(fn: Callable[[FunctionGraph], Any]) -> FromFunctionGraphRewriter:
    """Decorator: make fn(fgraph) a GraphRewriter."""
    return FromFunctionGraphRewriter(fn)


class SequentialGraphRewriter(GraphRewriter):
    """Runs graph rewriters one after the other."""

    def __init__(self, *rewriters: GraphRewriter, name: Optional[str] = None):
        self.rewriters: List[GraphRewriter] = list(rewriters)
        self.name = name

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        super().add_requirements(fgraph)
        for r in self.rewriters:
            r.add_requirements(fgraph)

    def apply(self, fgraph: FunctionGraph) -> None:
        for r in self.rewriters:
            r.rewrite(fgraph)

    def __str__(self) -> str:
        return self.name or f"Sequence({', '.join(str(r) for r in self.rewriters)})"


def rewriter_names(rewriters: Iterable[Any]) -> List[str]:
    """The names of rewriters (for messages)."""
    return [str(r) for r in rewriters]

