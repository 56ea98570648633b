"""The rewrite database: named rewrites with tags and positions, selected by tag queries.

An entry is selected by ``query(include, exclude, require)`` when one of its tags (its name is
always one) is included (or include is empty), none is excluded, and it has every required tag. A SequenceDB runs its
selected entries in order of position; an entry that is itself a database is queried with the
same tags. An EquilibriumDB turns its selected node rewriters into one EquilibriumGraphRewriter.
Mode(rewriter="fast_run") queries the registered database with include=("fast_run", ...).
"""

from __future__ import annotations

import sys

from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

from graphjit.graph.rewriting.basic import GraphRewriter, NodeRewriter, SequentialGraphRewriter
from graphjit.graph.rewriting.walkers import EquilibriumGraphRewriter, WalkingGraphRewriter
from graphjit.graph import forksafe

Tags = Iterable[str]


@dataclass
class DBEntry:
    """One registered rewrite: its name, the rewriter (or database), tags and position."""

    name: str
    obj: Any
    tags: FrozenSet[str]
    position: float
    order: int = field(default=0)

    def selected(self, include: FrozenSet[str], exclude: FrozenSet[str], require: FrozenSet[str]
                 ) -> bool:
        """Whether a query with these tags selects this entry."""
        tags = self.tags | {self.name}
        return (not include or bool(tags & include)) and not (tags & exclude) and require <= tags


def _tags(tags: Any) -> FrozenSet[str]:
    if isinstance(tags, str):
        tags = (tags,)
    return frozenset(t.lower() for t in (tags or ()))


_CHANGES = [0]   # registrations and removals in any database of the process


class RewriteDatabase:
    """Named rewrites with tags; subclasses decide how a query's selection is combined."""

    def __init__(self, name: Optional[str] = None):
        self.name = name
        self._entries: Dict[str, DBEntry] = {}
        self._cache: Dict[Tuple[FrozenSet[str], ...], GraphRewriter] = {}

    def register(self, name: str, rewriter: Any, *tags: str, position: Optional[float] = None
                 ) -> Any:
        """Add rewriter under name with tags (position orders a SequenceDB); returns rewriter."""
        if name in self._entries:
            raise ValueError(f"a rewrite called {name!r} is already registered in {self}")
        if not isinstance(rewriter, (GraphRewriter, NodeRewriter, RewriteDatabase)):
            raise TypeError(f"register({name!r}): expected a GraphRewriter, NodeRewriter or "
                            f"RewriteDatabase, got {rewriter!r}")
        if position is None:
            position = max((e.position for e in self._entries.values()), default=0.0) + 1
        if isinstance(rewriter, (GraphRewriter, NodeRewriter)) and (
                rewriter.name is None or rewriter.name.startswith("<")):
            rewriter.name = name
        self._entries[name] = DBEntry(name, rewriter, _tags(tags), float(position), len(self._entries))
        self._cache.clear()
        _CHANGES[0] += 1
        return rewriter

    sealed_at: Optional[int] = None

    def seal(self) -> None:
        """Mark the database as holding its module's own rewrites (LazyDatabase.pristine)."""
        self.sealed_at = _CHANGES[0]

    def remove(self, name: str) -> None:
        """Unregister name."""
        del self._entries[name]
        self._cache.clear()
        _CHANGES[0] += 1

    def __getitem__(self, name: str) -> Any:
        return self._entries[name].obj

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def entries(self) -> List[DBEntry]:
        """The entries in the order they run (position, then registration)."""
        return sorted(self._entries.values(), key=lambda e: (e.position, e.order))

    def tags_of(self, name: str) -> FrozenSet[str]:
        """The tags of entry name."""
        return self._entries[name].tags

    def select(self, include: Tags = (), exclude: Tags = (), require: Tags = ()) -> List[DBEntry]:
        """The entries a query selects, in running order."""
        inc, exc, req = _tags(include), _tags(exclude), _tags(require)
        return [e for e in self.entries() if e.selected(inc, exc, req)]

    def query(self, include: Tags = (), exclude: Tags = (), require: Tags = ()) -> GraphRewriter:
        """One GraphRewriter running what the tags select (cached until the next register)."""
        key = (_tags(include), _tags(exclude), _tags(require))
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._build(*key)
        return found

    def _build(self, include: FrozenSet[str], exclude: FrozenSet[str], require: FrozenSet[str]
               ) -> GraphRewriter:
        raise NotImplementedError

    def _expand(self, entry: DBEntry, include: FrozenSet[str], exclude: FrozenSet[str],
                require: FrozenSet[str]) -> Any:
        obj = entry.obj
        if isinstance(obj, RewriteDatabase):
            return obj.query(include, exclude, require)
        return obj

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.name or ''})"

    __repr__ = __str__


class SequenceDB(RewriteDatabase):
    """Runs the selected rewriters one after the other, by position."""

    def _build(self, include: FrozenSet[str], exclude: FrozenSet[str], require: FrozenSet[str]
               ) -> GraphRewriter:
        steps: List[GraphRewriter] = []
        for entry in self.entries():
            if not entry.selected(include, exclude, require):
                continue
            obj = self._expand(entry, include, exclude, require)
            if isinstance(obj, NodeRewriter):
                obj = WalkingGraphRewriter(obj, name=entry.name)
            steps.append(obj)
        return SequentialGraphRewriter(*steps, name=self.name)


class EquilibriumDB(RewriteDatabase):
    """Runs the selected node rewriters (and graph rewriters, once per pass) to a fixed point."""

    def __init__(self, name: Optional[str] = None, max_passes: int = 20, max_use_ratio: float = 8.0):
        super().__init__(name)
        self.max_passes = max_passes
        self.max_use_ratio = max_use_ratio

    def _build(self, include: FrozenSet[str], exclude: FrozenSet[str], require: FrozenSet[str]
               ) -> GraphRewriter:
        node_rws: List[NodeRewriter] = []
        graph_rws: List[GraphRewriter] = []
        for entry in self.entries():
            if not entry.selected(include, exclude, require):
                continue
            obj = self._expand(entry, include, exclude, require)
            if isinstance(obj, NodeRewriter):
                node_rws.append(obj)
            elif isinstance(obj, EquilibriumGraphRewriter):
                node_rws.extend(obj.dispatch.rewriters)
                graph_rws.extend(obj.graph_rewriters)
            else:
                graph_rws.append(obj)
        return EquilibriumGraphRewriter(node_rws, graph_rws, max_passes=self.max_passes,
                                        max_use_ratio=self.max_use_ratio, name=self.name)


class LazyDatabase:
    """A database imported on first query (so compile/mode.py need not import the tensor layer)."""

    def __init__(self, module: str, attribute: str):
        self.module = module
        self.attribute = attribute

    def pristine(self) -> bool:
        """True while the database holds exactly what its module registered: not imported yet, or imported,
        sealed and no rewrite registered or removed anywhere since (any change counts: conservative)."""
        module = sys.modules.get(self.module)
        if module is None:
            return True
        db = getattr(module, self.attribute, None)
        return db is not None and db.sealed_at == _CHANGES[0]

    def resolve(self) -> RewriteDatabase:
        """The database itself."""
        return getattr(forksafe.import_module(self.module), self.attribute)

    def query(self, include: Tags = (), exclude: Tags = (), require: Tags = ()) -> GraphRewriter:
        """The database's query."""
        return self.resolve().query(include=include, exclude=exclude, require=require)

    def __repr__(self) -> str:
        return f"LazyDatabase({self.module}.{self.attribute})"
