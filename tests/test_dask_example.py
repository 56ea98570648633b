"""examples/dask_blocks.py runs (2 worker processes on loopback) and matches numpy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "dask_blocks.py")


def test_dask_extra_installs_a_matched_pair() -> None:
    """graphjit[dask] (part of the README's test command) resolves dask and distributed to one release: a bare
    "distributed" requirement once let pip pair dask 2026.11.0 with distributed 2021.4.1, which cannot import."""
    import dask
    import distributed
    assert distributed.__version__.split(".")[:2] == dask.__version__.split(".")[:2], \
        (dask.__version__, distributed.__version__)


@pytest.mark.soak
def test_dask_blocks_example() -> None:
    proc = subprocess.run([sys.executable, EXAMPLE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "max abs error" in proc.stdout
