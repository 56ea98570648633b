"""Fixtures shared across the test packages."""

import os
import pathlib
import sys

import pytest

# The suite tests the checkout it runs from (pyproject's pythonpath puts src/ first for this process); child
# processes the tests start get the same src/ first through PYTHONPATH, whichever graphjit is installed.
SRC = str(pathlib.Path(__file__).resolve().parents[1] / "src")
os.environ["PYTHONPATH"] = os.pathsep.join([SRC] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                    if p and p != SRC])


def pytest_collection_modifyitems(config, items):
    """Soak tests (pyproject's ``soak`` marker) run first, in their collected order: pytest-xdist hands out tests
    in collection order, so the long ones start while the short ones still balance the workers at the end."""
    soak = [item for item in items if item.get_closest_marker("soak") is not None]
    if soak:
        chosen = set(map(id, soak))
        items[:] = soak + [item for item in items if id(item) not in chosen]


@pytest.fixture
def cache_dir(tmp_path):
    """The process's compiler uses a fresh object-cache directory (plans and rewritten graphs too)."""
    from graphjit.link.llvm.jit.compiler import get_compiler
    compiler = get_compiler()
    compiler.set_cache_dir(str(tmp_path))
    yield tmp_path
    compiler.set_cache_dir(None)


@pytest.fixture(autouse=True)
def _fallback_warnings_per_test():
    """The LLVM linker warns once per op per process; each test starts afresh, so a test whose compile falls
    back to perform without declaring it (pytest.warns or a filterwarnings mark) fails whatever ran before it."""
    fallback = sys.modules.get("graphjit.link.llvm.ir.fallback")
    if fallback is not None:
        fallback._WARNED.clear()
    yield
