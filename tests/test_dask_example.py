"""examples/dask_blocks.py runs (2 worker processes on loopback) and matches numpy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "dask_blocks.py")


def test_dask_blocks_example() -> None:
    proc = subprocess.run([sys.executable, EXAMPLE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "max abs error" in proc.stdout
