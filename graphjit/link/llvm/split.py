"""Splitting a large graph's module in two: kernels (full pipeline) and glue (light passes, fast codegen).

A large graph's entry is thousands of instructions of checks, allocation and calls around its kernels.
Compiled in one module, every module-level and code-generation pass of the O3 pipeline walks it
(instruction selection, loop strength reduction, IPSCCP...), even with the glue marked optnone; compiled
as a module of its own it gets SROA (jit._LIGHT_PASSES) and the fast instruction selector, and the
kernels' module the whole pipeline.  Measured on the W3 training graph: LLVM time 1.14 s -> ~0.5 s.

The split works on the IR text the cache key was computed from (deterministic, so the parts are too):
glue = the exported definitions (``<prefix>entry``, ``<prefix>pywrap``...), the wrapper's ``pywrap.*``
helpers and the entry's own helpers (GLUE_HELPERS and context.glue_function's ``glue.*``); kernels =
every other definition.  Kernels the glue calls become exported symbols ``<prefix>k.<name>`` (linked
in the library's engine); globals, declarations, attributes and metadata go to both parts (private
definitions are then private to each).
"""

from __future__ import annotations

import re

from .context import GLUE_PREFIX

GLUE_HELPERS = ("gj.set_error",)
_NAME = re.compile(r'@"?([^"(\s]+)"?\(')


def _chunks(text: str) -> tuple[list[str], list[list[str]]]:
    """(top-level lines that are not function bodies, function definitions as line lists)."""
    other: list[str] = []
    defs: list[list[str]] = []
    current: list[str] | None = None
    for line in text.split("\n"):
        if current is None and line.startswith("define "):
            current = [line]
            if line.rstrip().endswith("}"):
                defs.append(current)
                current = None
        elif current is not None:
            current.append(line)
            if line == "}":
                defs.append(current)
                current = None
        else:
            other.append(line)
    return other, defs


def _name(define: list[str]) -> str:
    found = _NAME.search(define[0])
    if found is None:
        raise ValueError(f"cannot read the function name of {define[0][:80]!r}")
    return found.group(1)


def _is_glue(name: str, prefix: str) -> bool:
    return (name.startswith(prefix) or name.startswith("pywrap.") or name.startswith(GLUE_PREFIX)
            or name in GLUE_HELPERS)


def _declaration(define_line: str) -> str:
    """A ``declare`` for a definition's first line (linkage and the opening brace dropped)."""
    line = re.sub(r"^define (internal |private )?", "declare ", define_line.rstrip())
    return line[:-1].rstrip() if line.endswith("{") else line


def split_module(text: str, prefix: str) -> tuple[str, str] | None:
    """(kernels' IR, glue's IR) of a module's text with exported names already prefixed; None if no kernels."""
    other, defs = _chunks(text)
    glue = [d for d in defs if _is_glue(_name(d), prefix)]
    kernels = [d for d in defs if not _is_glue(_name(d), prefix)]
    if not kernels or not glue:
        return None
    glue_text = "\n".join("\n".join(d) for d in glue)
    called = [d for d in kernels if f'@"{_name(d)}"' in glue_text or f"@{_name(d)}(" in glue_text]
    renames = {_name(d): f"{prefix}k.{_name(d)}" for d in called}

    # one pass over the text for all names (a replace per name scanned the whole module twice per kernel)
    pattern = re.compile('|'.join(alt for old in sorted(renames, key=len, reverse=True)
                                  for alt in (re.escape(f'@"{old}"'), re.escape(f"@{old}("))))

    def rename(s: str) -> str:
        def new_name(m: re.Match) -> str:
            text = m.group(0)
            if text.endswith("("):
                return f'@"{renames[text[1:-1]]}"('
            return f'@"{renames[text[2:-1]]}"'
        return pattern.sub(new_name, s) if renames else s

    exported = {id(d) for d in called}
    kernel_defs = []
    for d in kernels:
        first = re.sub(r"^define (internal |private )", "define ", d[0]) if id(d) in exported else d[0]
        kernel_defs.append("\n".join([first] + d[1:]))
    head = "\n".join(other)
    kernel_text = rename(head + "\n" + "\n".join(kernel_defs) + "\n")
    declares = [_declaration(rename(d[0])) for d in called]
    glue_text = rename(head + "\n" + glue_text + "\n" + "\n".join(declares) + "\n")
    return kernel_text, glue_text
