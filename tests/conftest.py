"""Fixtures shared across the test packages."""

import pytest


@pytest.fixture
def cache_dir(tmp_path):
    """The process's compiler uses a fresh object-cache directory (plans and rewritten graphs too)."""
    from graphjit.link.llvm.jit.compiler import get_compiler
    compiler = get_compiler()
    compiler.set_cache_dir(str(tmp_path))
    yield tmp_path
    compiler.set_cache_dir(None)
