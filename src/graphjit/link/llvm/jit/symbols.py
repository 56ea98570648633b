"""The symbols compiled code needs from the process, re-established before any object is linked.

Lowerings publish runtime symbols with ``jit.binding.add_symbol`` while they build IR.  A cache hit
(a plan, a rewritten graph, an unpickled Function) loads object code without lowering anything, so
whatever a lowering would have published must be published another way, or the call jumps to address 0.
Two mechanisms:

* ``provide(name, publish)``: whoever can publish a symbol registers how (the runtime's BLAS, the fallback
  callback, numba's NRT, each ``as_op`` cfunc when its op is created).  ``resolve`` calls the publisher of
  every symbol an object needs that the process does not resolve yet.
* ``provided_by(prefix, module)``: the providers of a family of symbols live in a module imported only when an
  object needs one of them (numpy's random draws), so a warm process that needs none does not pay its import.
* ``resolve`` raises UnresolvedSymbolError (naming the symbols) when something is still missing, before
  anything is linked: the plan path then builds the IR, whose lowering publishes (slower, never a crash).
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Iterable

from graphjit.link.llvm.jit import binding as _binding
from graphjit.link.llvm.jit.objfile import symbols
from graphjit.graph import forksafe

_PROVIDERS: dict[str, Callable[[], object]] = {}
# symbol prefix -> the module whose import registers the providers of those symbols (imported when needed)
_BY_PREFIX: dict[str, str] = {}
_RESOLVED: set[str] = set()
_LOCK = forksafe.new_rlock()


class CallbackSymbol:
    """A Python function that compiled code calls through a C symbol, published once per process; the ctypes
    thunk is kept alive as long as the process (compiled code may call it at any time)."""

    def __init__(self, name: str, signature: Any, fn: Callable[..., Any]) -> None:
        self.name, self.signature, self.fn = name, signature, fn
        self.thunk: Any = None
        self.lock = forksafe.new_lock()
        provide(name, self.publish)      # for cache hits that skip lowering

    def publish(self) -> None:
        """Publish the symbol (once: later calls return at once)."""
        if self.thunk is not None:
            return
        with self.lock:
            if self.thunk is None:
                thunk = self.signature(self.fn)
                _binding.add_symbol(self.name, ctypes.cast(thunk, ctypes.c_void_p).value)
                self.thunk = thunk


class UnresolvedSymbolError(RuntimeError):
    """Object code refers to symbols nothing in this process publishes."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(names)
        super().__init__(f"graphjit: the compiled code needs the symbol(s) {', '.join(self.names)}, which nothing "
                         "in this process publishes (a lowering that calls add_symbol must "
                         "register the symbol with graphjit.link.llvm.jit.symbols.provide)")


def provide(name: str, publish: Callable[[], object]) -> None:
    """Register how to publish symbol name (called when an object needs it and the process lacks it).

    The first registration of a name is kept: a name stands for one thing (as_op derives it from the
    function's code and signature).
    """
    with _LOCK:
        _PROVIDERS.setdefault(name, publish)


def provided_by(prefix: str, module: str) -> None:
    """Symbols starting with prefix are provided by module, imported only when an object needs one of them (a
    warm process whose objects need none does not import it)."""
    with _LOCK:
        _BY_PREFIX[prefix] = module


def _known(name: str) -> bool:
    if name in _RESOLVED:
        return True
    if _binding.address_of_symbol(name):
        _RESOLVED.add(name)              # published symbols and loaded libraries stay for the process
        return True
    return False


def resolve(objects: list[bytes]) -> None:
    """Publish what the objects need (ValueError if one is malformed; UnresolvedSymbolError if a symbol stays
    missing).  Objects of a format objfile does not read are not checked."""
    needed: set[str] = set()
    defined: set[str] = set()
    for obj in objects:
        found = symbols(obj)
        if found is not None:
            needed |= found[0]
            defined |= found[1]
    missing = [n for n in needed - defined if not _known(n)]
    if not missing:
        return
    with _LOCK:
        modules = {m for n in missing if n not in _PROVIDERS for p, m in _BY_PREFIX.items() if n.startswith(p)}
    for module in sorted(modules):          # outside _LOCK: an import registers providers, which takes it
        forksafe.import_module(module)
    with _LOCK:
        for name in missing:
            publish = _PROVIDERS.get(name)
            if publish is not None and not _known(name):
                publish()
        still = [n for n in missing if not _known(n)]
    if still:
        raise UnresolvedSymbolError(still)
