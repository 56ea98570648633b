"""A library's IR made ready for compiling: its parts (kernels, glue, bulk halves), external calls bound through
the GOT, and the check that every export carries the library's prefix (used by jit/compiler.py)."""

from __future__ import annotations

import functools
from typing import Union

from graphjit.link.llvm.jit.lazy_ir import ir    # llvmlite.ir on first use (never when warm)

from graphjit.link.llvm.jit import bulk
from graphjit.link.llvm.jit.binding import llvm
# a cycle (context asks get_compiler()), and IR building only (a warm process loads objects): the package's lazy
# attribute, read at call time
from graphjit.link import llvm as _llvm
from graphjit.link.llvm.ir.modules import GLUE, GLUE_HOT, GLUE_SMALL, LINKED, LibraryModules, module_prefix

# what a part of a library's IR is: linked with the other LINKED parts into one module (kernels and a small
# glue), a glue compiled apart (GLUE, GLUE_SMALL, GLUE_HOT: ir/modules.py), or a BULK half of a large graph's kernels
BULK = "bulk"
BULK_VECTOR = "bulk-vector"          # a BULK part of kernels emitted already vectorised: bulk.VECTOR_PASSES
Kind = Union[bool, str]
Parts = list[tuple[str, Kind]]
Buildable = Union[LibraryModules, "ir.Module"]


def ir_parts(modules: Buildable) -> tuple[str, Parts]:
    """(symbol prefix, parts) of a library's modules, made ready for the GOT (bind_through_got)."""
    if isinstance(modules, ir.Module):
        prefix = module_prefix(modules)
        _prepare(modules)
        return prefix, [(str(modules), False)]
    _prepare(modules.glue)
    glue = [(str(modules.glue), modules.glue_kind)]
    if all(fn.is_declaration for fn in modules.kernels.functions):
        return modules.prefix, glue
    _prepare(modules.kernels)
    if modules.glue_kind is GLUE:
        split = bulk.split_kernels(modules.kernels)
        if split is not None:
            return modules.prefix, [(text, BULK_VECTOR if vector else BULK) for text, vector in split] + glue
    return modules.prefix, [(str(modules.kernels), LINKED)] + glue


def _prepare(module: ir.Module) -> None:
    """Finish a module (context.finish_module) and route its external calls through the GOT (idempotent)."""
    _llvm.context.finish_module(module)
    for fn in module.functions:
        if fn.is_declaration and not fn.name.startswith("llvm."):
            fn.attributes.add("nonlazybind")
    if "llvm.module.flags" not in module.namedmetadata:
        # the backend's own library calls (sin, memset...) through the GOT too (behaviour 7: max)
        flag = [ir.IntType(32)(7), ir.MetaDataString(module, "RtLibUseGOT"), ir.IntType(32)(1)]
        module.add_named_metadata("llvm.module.flags", flag)


def key_text(parts: Parts) -> str:
    """The text a library's key hashes: each part's IR after a line naming its kind."""
    return "".join(f"; part {_label(kind)}\n{text}" for text, kind in parts)


def _label(kind: Kind) -> str:
    return ("glue" if kind is GLUE else "linked" if kind is LINKED else str(kind))


def bind_through_got(mod: llvm.ModuleRef) -> llvm.ModuleRef:
    """mod, with every function defined outside the object declared ``nonlazybind``: calls load its address
    from the GOT (no PLT stubs).

    RuntimeDyld's x86-64 PLT stub jumps through a GOT entry that llvmlite's memory manager does not reserve
    room for (it counts only GOT-relative relocations): an object without writable data of its own then
    aborts the process when it is linked.  ir_parts marks the declarations of the IR it builds; this marks
    those the optimiser added (a library call it chose, a libmvec variant).  llvmlite before 0.48 puts the
    attribute of ``add_function_attribute`` on the return value: there the declarations are marked in the
    module's text, parsed again (only when the optimiser added one).
    """
    unbound = [fn for fn in mod.functions if fn.is_declaration and not fn.name.startswith("llvm.")
               and b"nonlazybind" not in b" ".join(fn.attributes).split()]
    # (llvmlite yields a function's attributes one by one; older versions: one space-separated string)
    if not unbound:
        return mod
    if function_attributes_work():
        for fn in unbound:
            fn.add_function_attribute("nonlazybind")
        return mod
    return _bind_in_text(mod, {fn.name for fn in unbound})


def _bind_in_text(mod: llvm.ModuleRef, names: set) -> llvm.ModuleRef:
    """mod parsed again from its text with ``nonlazybind`` appended to the declarations of names."""
    lines = str(mod).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("declare ") and _declared_name(line) in names:
            lines[i] = line + " nonlazybind"
    again = llvm.parse_assembly("\n".join(lines) + "\n", getattr(mod, "_context", None))
    again.verify()
    return again


def _declared_name(line: str) -> str:
    """The function name of a ``declare`` line (quoted or not)."""
    at = line.index(" @") + 2
    if line[at] == '"':
        return line[at + 1:line.index('"', at + 1)]
    return line[at:line.index("(", at)]


@functools.lru_cache(maxsize=None)
def function_attributes_work() -> bool:
    """Whether this llvmlite's ValueRef.add_function_attribute adds a function attribute (0.48 and later)."""
    mod = llvm.parse_assembly("declare void @probe()\n")
    fn = mod.get_function("probe")
    fn.add_function_attribute("nonlazybind")
    return b"nonlazybind" in b" ".join(fn.attributes).split()


def check_exports(mod: llvm.ModuleRef, prefix: str) -> None:
    """Every externally visible definition must carry the module's prefix (its name in tracebacks and profiles)."""
    for value in [*mod.functions, *mod.global_variables]:
        if value.is_declaration or value.linkage != llvm.Linkage.external:
            continue
        if not value.name.startswith(prefix):
            raise ValueError(f"exported symbol {value.name!r} lacks the prefix {prefix!r}; name exports "
                             "with modules.exported_name and give helpers internal/private linkage")


__all__ = ["LINKED", "GLUE", "GLUE_SMALL", "GLUE_HOT", "BULK", "BULK_VECTOR", "Kind", "Parts", "Buildable", "ir_parts", "bind_through_got"]
