"""Modes: a linker plus a rewriter (with rewrite tags), and the registry of named modes."""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Iterable, Optional, Tuple, Union

from graphjit.config import config
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.rewriting.db import LazyDatabase
from graphjit.link.basic import Linker
from graphjit.link.python import PerformLinker
from graphjit.graph import forksafe

LinkerSpec = Union[str, Linker, None]
RewriterSpec = Union[str, Callable[[FunctionGraph], Any], Any, None]

_linkers: Dict[str, Tuple[Union[Callable[..., Linker], str], Dict[str, Any]]] = {}
REWRITERS: Dict[str, Any] = {}     # name -> rewriter (register_rewriter)
_modes: Dict[str, "Mode"] = {}


class NoRewriter:
    """The rewriter that leaves the graph as it is."""

    def __call__(self, fgraph: FunctionGraph) -> None:
        """Do nothing."""

    def __repr__(self) -> str:
        return "NoRewriter()"


def register_linker(name: str, factory: Union[Callable[..., Linker], str], **kwargs: Any) -> None:
    """Make Mode(linker=name) build its linker with factory(**kwargs) (names are case-insensitive).

    This is how a backend plugs in. factory is a callable or the dotted name ``"package.module:Class"``
    of one; a dotted name is imported only when a mode first needs the linker. So importing graphjit
    (and this module) loads no backend: the LLVM linkers below are registered by name, and link/llvm
    (with llvmlite) loads on the first compile with an LLVM mode; a PY-mode program never loads it. A
    third-party backend registers itself the same way; the compile layer never imports one directly.
    """
    _linkers[name.lower()] = (factory, kwargs)


def make_linker(name: str) -> Linker:
    """A new linker from the factory registered under name (importing it first if given by name)."""
    factory, kwargs = _linkers[name.lower()]
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(forksafe.import_module(module), attr)
    linker = factory(**kwargs)
    if not isinstance(linker, Linker):
        raise TypeError(f"the factory of linker {name!r} returned {linker!r}, not a Linker")
    return linker


class ScanAwareDatabase(LazyDatabase):
    """The tensor rewrite database, with the scan rewrites once a Scan can exist.

    A graph holds a Scan only if ``graphjit.scan_module.op`` was imported (building one, or unpickling one,
    imports it): until then the database is ``graphjit.tensor.rewriting``'s alone, so a compile does not import
    the scan package (its rewrites would find no Scan node).  Afterwards it is ``graphjit.scan_module.rewriting``'s
    (the same database object, the scan rewrites registered in it), which is also what a rewrite key names.
    """

    SCAN, TENSOR = "graphjit.scan_module.rewriting", "graphjit.tensor.rewriting"

    def __init__(self) -> None:
        self.attribute = "rewrite_db"

    @property
    def module(self) -> str:  # type: ignore[override]
        """The module the database is imported from: scan's once a Scan can exist, else tensor's."""
        return self.SCAN if "graphjit.scan_module.op" in sys.modules else self.TENSOR


def register_rewriter(name: str, rewriter: Any) -> None:
    """Make Mode(rewriter=name) use rewriter.

    A rewriter is a callable taking a FunctionGraph, or an object with ``rewrite(fgraph)``. If it
    has ``query(include=, exclude=, require=)``, Mode.rewriter calls it with the mode's tags, name
    first (so "fast_run" queries the tag fast_run), and uses the result: the rewrite database's hook.
    """
    REWRITERS[name.lower()] = rewriter


def run_rewriter(rewriter: Any, fgraph: FunctionGraph) -> Any:
    """Apply rewriter (callable or object with .rewrite) to fgraph in place."""
    if rewriter is None:
        return None
    rewrite = getattr(rewriter, "rewrite", None)
    if rewrite is not None:
        return rewrite(fgraph)
    if callable(rewriter):
        return rewriter(fgraph)
    raise TypeError(f"a rewriter must be callable or have a rewrite(fgraph) method, got {rewriter!r}")


def _merge(tags: Tuple[str, ...], new: Iterable[str]) -> Tuple[str, ...]:
    return tags + tuple(t for t in new if t not in tags)


class Mode:
    """How a function is compiled: which rewrites run on the graph and which linker compiles it.

    ``linker`` is a Linker or a registered linker name ("py"); ``rewriter`` a rewriter or a
    registered rewriter name ("fast_run", "fast_compile", "none"). ``including``, ``excluding``
    and ``requiring`` derive modes with more rewrite tags, which the rewrite database reads.
    """

    def __init__(self, linker: LinkerSpec = None, rewriter: RewriterSpec = None,
                 include: Iterable[str] = (), exclude: Iterable[str] = (),
                 require: Iterable[str] = (), name: Optional[str] = None, optimizer: RewriterSpec = "unset"):
        if optimizer != "unset":                # Theano's keyword (docs/debugging.md)
            if rewriter is not None:
                raise TypeError("Mode: give rewriter= or Theano's optimizer=, not both")
            rewriter = theano_optimizer(optimizer)
        if linker is None:
            linker = "py"
        self._linker_name: Optional[str] = None
        self._linker: Optional[Linker] = None
        if isinstance(linker, str):
            if linker.lower() not in _linkers:
                raise ValueError(f"unknown linker {linker!r}; registered: {sorted(_linkers)}")
            self._linker_name = linker      # built by its factory on first use of .linker
        elif isinstance(linker, Linker):
            self._linker = linker
        else:
            raise TypeError(f"Mode: linker must be a Linker or a registered name, got {linker!r}")
        if isinstance(rewriter, str) and rewriter.lower() not in REWRITERS:
            raise ValueError(f"unknown rewriter {rewriter!r}; registered: {sorted(REWRITERS)}")
        self.provided_rewriter: RewriterSpec = rewriter
        self.include: Tuple[str, ...] = _merge((), include)
        self.exclude: Tuple[str, ...] = _merge((), exclude)
        self.require: Tuple[str, ...] = _merge((), require)
        self.name = name

    @property
    def linker(self) -> Linker:
        """The linker; one given by name is made by its registered factory when first needed."""
        if self._linker is None:
            self._linker = make_linker(self._linker_name)
        return self._linker

    @property
    def rewriter(self) -> Any:
        """The rewriter to run: the provided one, queried with this mode's tags if it is a database."""
        r, base = self.provided_rewriter, ()
        if isinstance(r, str):
            r, base = REWRITERS[r.lower()], (r.lower(),)
        if r is None:
            return NoRewriter()
        query = getattr(r, "query", None)
        if query is not None:
            return query(include=_merge(base, self.effective_include), exclude=self.exclude,
                         require=self.require)
        return r

    @property
    def effective_include(self) -> Tuple[str, ...]:
        """The included tags and those the linker asks for (``Linker.rewrite_tags``: the LLVM linkers' inlining
        of OpFromGraph); reading it builds the linker."""
        return _merge(self.include, getattr(self.linker, "rewrite_tags", ()))

    def clone(self, **changes: Any) -> "Mode":
        """A copy of this mode with some of linker, rewriter, include, exclude, require, name changed."""
        linker = self._linker if self._linker is not None else self._linker_name
        fields: Dict[str, Any] = dict(linker=linker, rewriter=self.provided_rewriter,
                                      include=self.include, exclude=self.exclude,
                                      require=self.require, name=self.name)
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"Mode.clone: unknown fields {sorted(unknown)}")
        fields.update(changes)
        return Mode(**fields)

    def including(self, *tags: str) -> "Mode":
        """A mode that also runs the rewrites with these tags."""
        return self.clone(include=_merge(self.include, tags), name=None)

    def excluding(self, *tags: str) -> "Mode":
        """A mode that skips the rewrites with these tags."""
        return self.clone(exclude=_merge(self.exclude, tags), name=None)

    def requiring(self, *tags: str) -> "Mode":
        """A mode that only runs rewrites having all these tags."""
        return self.clone(require=_merge(self.require, tags), name=None)

    def __str__(self) -> str:
        tags = "".join(f", {k}={v}" for k, v in (("include", self.include), ("exclude", self.exclude),
                                                   ("require", self.require)) if v)
        label = f"{self.name}: " if self.name else ""
        return f"Mode({label}linker={self.linker!r}, rewriter={self.provided_rewriter!r}{tags})"

    __repr__ = __str__


_THEANO_OPTIMIZERS = {"none": "none", "fast_run": "fast_run", "fast_compile": "fast_compile", "merge": "merge",
                      "default": "fast_run", "o4": "fast_run", "o3": "fast_run", "o2": "fast_run",
                      "o1": "fast_compile", "unsafe": "fast_run"}


def theano_optimizer(optimizer: RewriterSpec) -> RewriterSpec:
    """The rewriter a Theano ``optimizer=`` names: None/'None' -> 'none', 'fast_run', 'fast_compile', 'merge',
    'default' (-> 'fast_run'); a rewriter object is itself."""
    if optimizer is None:
        return "none"
    if isinstance(optimizer, str):
        found = _THEANO_OPTIMIZERS.get(optimizer.lower())
        if found is None and optimizer.lower() not in REWRITERS:
            raise ValueError(f"unknown optimizer {optimizer!r}; Theano's names: None, 'fast_run', 'fast_compile', "
                             f"'merge', 'default'; graphjit's rewriters: {sorted(REWRITERS)}")
        return found or optimizer
    return optimizer


def register_mode(name: str, mode: Mode) -> Mode:
    """Register (or replace) the mode called name; returns it.

    e.g. ``register_mode("FAST_RUN", get_mode("FAST_RUN").clone(linker=LLVMLinker()))``.
    """
    if not isinstance(mode, Mode):
        raise TypeError(f"register_mode: expected a Mode, got {mode!r}")
    if mode.name != name:
        mode = mode.clone(name=name)
    _modes[name] = mode
    return mode


def registered_modes() -> Tuple[str, ...]:
    """The names of the registered modes."""
    return tuple(_modes)


def get_mode(mode: Union[str, Mode, None] = None) -> Mode:
    """The Mode named by mode (config.mode when None); a Mode is returned as is."""
    if isinstance(mode, Mode):
        return mode
    if mode is None:
        mode = config.mode
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a Mode, a mode name or None, got {mode!r}")
    found = _modes.get(mode) or _modes.get(mode.upper())
    if found is None:
        raise ValueError(f"unknown mode {mode!r}; registered modes: {', '.join(_modes)}")
    return found


register_linker("py", PerformLinker)
register_linker("perform", PerformLinker)
register_linker("llvm", "graphjit.link.llvm.linker:LLVMLinker", opt_level=3)
register_linker("llvm_o1", "graphjit.link.llvm.linker:LLVMLinker", opt_level=1)
register_linker("llvm_o0", "graphjit.link.llvm.linker:LLVMLinker", opt_level=0)
register_linker("debug", "graphjit.link.llvm.linker:DebugLinker", opt_level=1)
# Theano's linker names, mapped to graphjit's (docs/debugging.md): its C linkers compiled every node; here the LLVM
# linker compiles the whole graph into one function
for _name in ("vm", "cvm", "c", "c|py", "vm_nogc", "cvm_nogc", "c|py_nogc"):
    register_linker(_name, "graphjit.link.llvm.linker:LLVMLinker", opt_level=3)
register_rewriter("none", NoRewriter())
register_rewriter("merge", LazyDatabase("graphjit.tensor.rewriting", "rewrite_db"))  # queried by the tag merge
for _name in ("fast_run", "fast_compile"):  # the tensor rewrite database with the scan rewrites, queried by tag
    register_rewriter(_name, ScanAwareDatabase())
register_mode("PY", Mode(linker="py", rewriter="fast_run"))
register_mode("FAST_RUN", Mode(linker="llvm", rewriter="fast_run"))
register_mode("FAST_COMPILE", Mode(linker="llvm_o0", rewriter="fast_compile"))
register_mode("DEBUG", Mode(linker="debug", rewriter="fast_run"))
