"""Fixtures shared across the test packages."""

import os
import pathlib
import shutil
import sys
import tempfile

import pytest

# The suite tests the checkout it runs from (pyproject's pythonpath puts src/ first for this process); child
# processes the tests start get the same src/ first through PYTHONPATH, whichever graphjit is installed.
SRC = str(pathlib.Path(__file__).resolve().parents[1] / "src")
os.environ["PYTHONPATH"] = os.pathsep.join([SRC] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                    if p and p != SRC])

# One object cache for the whole run, created by the controller before pytest-xdist starts its workers (they
# inherit the environment): a graph one worker compiled is a disk hit for the other, as for a user's processes;
# never the user's own cache.  Tests about the cache itself use the cache_dir fixture (a directory of their own).
if "PYTEST_XDIST_WORKER" not in os.environ and "GRAPHJIT_CACHE_DIR" not in os.environ:
    os.environ["GRAPHJIT_CACHE_DIR"] = _RUN_CACHE = tempfile.mkdtemp(prefix="graphjit-test-cache-")
else:
    _RUN_CACHE = None


def pytest_unconfigure(config):
    """The run's object cache goes with the run (the controller made it, the controller removes it)."""
    if _RUN_CACHE is not None:
        shutil.rmtree(_RUN_CACHE, ignore_errors=True)


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
