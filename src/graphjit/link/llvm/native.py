"""Old name of native_view.py (``f.native``, what the LLVM linker produced for a Function): its names, re-exported."""

from graphjit.link.llvm.native_view import CompiledGraph, NativeInfo  # noqa: F401

__all__ = ["CompiledGraph", "NativeInfo"]
