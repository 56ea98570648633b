"""The IR modules of one library: glue and kernels built apart, their exported names fixed before any text exists.

A library's exported symbols are ``<prefix><name>`` (``<prefix>entry``, ``<prefix>pywrap``): the prefix names
the code in tracebacks and profiles.  It is chosen before the IR is built, from a seed the builder knows (a
graph's structural signature), so the text is final when it is produced and can be hashed for the object
cache as it is.  Two different IRs may still draw the same prefix; jit.compile_unique rebuilds with another.

A graph's library is two modules (LibraryModules): the glue (native entry, CPython wrapper, their helpers)
and the kernels (loops and the functions they call).  Kernels are created through kernel_function, which
defines them in the kernels module and, when glue calls one, exports it as ``<prefix>k.<name>`` and declares
it in the glue.  jit/compiler.py compiles the kernels with the full pipeline and a large glue with light passes, or
links a small glue into the kernels and compiles them as one module (its call overhead is the point).

Named struct types (named_struct: the array layouts, the runtime struct) are process-wide and shared by every
module; a module made here declares, when printed, exactly the named types its text uses, so the text stays a
function of the module alone (it is the cache key).  A literal struct is printed in full at every use (~60
characters per use and per parse; a large graph's glue used them ~5,000 times).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Sequence

from graphjit.link.llvm.jit.lazy_ir import ir    # llvmlite.ir on first use (never when warm)

_PREFIX_ATTR = "_gj_prefix"
_KERNELS_ATTR = "_gj_kernels"
_KEY_CHARS = 20
KERNEL_INFIX = "k."


_NAMED: dict[str, Any] = {}          # name -> ir.IdentifiedStructType (of the private context _NAMED_CONTEXT[0])
_NAMED_CONTEXT: list[Any] = []
_MODULE_CLASS: list[type] = []


def named_struct(name: str, elements: Sequence[Any]) -> Any:
    """The identified struct type ``%"name" = type {elements}`` shared by the modules of new_module (which
    declare it when their text uses it); a name is defined once per process (ValueError for other elements)."""
    ty = _NAMED.get(name)
    if ty is None:
        if not _NAMED_CONTEXT:
            _NAMED_CONTEXT.append(ir.Context())
        ty = _NAMED_CONTEXT[0].get_identified_type(name)
        ty.set_body(*elements)
        _NAMED[name] = ty
    elif ty.elements != tuple(elements):
        raise ValueError(f"struct type {name} is already {ty.structure_repr()}")
    return ty


def _declarations(body: str) -> list[str]:
    """The declarations of the named types body uses, and of those their bodies use, sorted by name."""
    used, todo = set(), [body]
    while todo:
        text = todo.pop()
        for name, ty in _NAMED.items():
            if name not in used and f'%"{name}"' in text:
                used.add(name)
                todo.append(ty.structure_repr())
    return [_NAMED[name].get_declaration() for name in sorted(used)]


def _module_class() -> type:
    """ir.Module that declares the named types it uses (made on first use: llvmlite.ir loads lazily)."""
    if not _MODULE_CLASS:
        class GraphjitModule(ir.Module):
            """An ir.Module whose text declares the named types (named_struct) it uses."""

            def _get_body_lines(self) -> list[str]:
                lines = super()._get_body_lines()
                return _declarations("\n".join(lines)) + lines
        _MODULE_CLASS.append(GraphjitModule)
    return _MODULE_CLASS[0]


def symbol_prefix(seed: str) -> str:
    """The exported-symbol prefix drawn from seed: ``gj_<20 hex digits>_``."""
    return f"gj_{hashlib.sha256(seed.encode()).hexdigest()[:_KEY_CHARS]}_"


def new_module(prefix: str, name: str = "graphjit") -> ir.Module:
    """An empty module whose exported symbols carry prefix (see exported_name)."""
    module = _module_class()(name=name, context=ir.Context())
    setattr(module, _PREFIX_ATTR, prefix)
    return module


def module_prefix(module: ir.Module) -> str:
    """The exported-symbol prefix of a module made by new_module (ValueError for any other module)."""
    prefix = getattr(module, _PREFIX_ATTR, None)
    if prefix is None:
        raise ValueError("a module compiled by graphjit must come from modules.new_module (its symbol prefix)")
    return prefix


def exported_name(module: ir.Module, name: str) -> str:
    """The symbol of an exported definition `name` of module: ``<prefix><name>``."""
    return module_prefix(module) + name


# How a library's glue is compiled (jit/ir_prep.py's part kinds, jit/pipelines.py's passes): linked with the
# kernels into one module at O<n>, apart with light passes (a large entry), apart with the small glue's passes (a
# small entry), or apart with the O1 pipeline (a very large entry that runs loops: a scan body's)
LINKED, GLUE = False, True
GLUE_SMALL = "glue-small"
GLUE_HOT = "glue-hot"


@dataclass
class LibraryModules:
    """One library's IR: glue and kernels, and how the glue is compiled (glue_kind: LINKED, GLUE, GLUE_SMALL or
    GLUE_HOT)."""

    prefix: str
    glue: ir.Module
    kernels: ir.Module
    glue_kind: Any = LINKED


def library_modules(prefix: str) -> LibraryModules:
    """A glue module and its kernels module, both naming their exports with prefix."""
    glue, kernels = new_module(prefix), new_module(prefix, "graphjit_kernels")
    setattr(glue, _KERNELS_ATTR, kernels)
    return LibraryModules(prefix, glue, kernels)


def kernel_function(module: ir.Module, name: str, fnty: ir.FunctionType) -> tuple[ir.Function, bool]:
    """(the kernel `name`, whether it is new: the caller then builds its body), for code built in module.

    Defined once in the kernels module of module (module itself when it is a kernels module or has none),
    internal, as ``<prefix>k.<name>``; called from glue, it becomes exported and the glue declares it.
    """
    kernels = getattr(module, _KERNELS_ATTR, module)
    prefix = getattr(kernels, _PREFIX_ATTR, None)
    full = name if prefix is None else f"{prefix}{KERNEL_INFIX}{name}"
    fn = kernels.globals.get(full)
    new = fn is None
    if new:
        fn = ir.Function(kernels, fnty, full)
        fn.linkage = "internal"
    elif fn.function_type != fnty:
        raise TypeError(f"kernel {full} already defined as {fn.function_type}, not {fnty}")
    if kernels is not module and full not in module.globals:
        fn.linkage = ""                             # external: the glue's object calls it
        ir.Function(module, fnty, full)
    return fn, new
