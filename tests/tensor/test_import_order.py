"""Any tensor core module can be the first one a fresh process imports, and symbolic tensors then work in full.

The tensor core is layered (type -> variable -> basic -> elemwise -> math -> the op library -> operators.py, which
installs TensorVariable's operators): importing a submodule first still runs the package's ``__init__`` first,
which loads every layer in order. One fresh interpreter per module (a module cleaned out of sys.modules and
imported again is not a fresh import); they run in parallel to keep the test fast.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE = ("type", "variable", "basic", "elemwise", "math", "shape_base", "shape", "alloc", "subtensor",
        "elemwise_grad", "operators")

_PROGRAM = """
import importlib, sys
import numpy as np
first = importlib.import_module(sys.argv[1])
from graphjit.tensor.type import TensorType
x = TensorType("float64", (None,))("x")
y = x + 1
assert type(y).__name__ == "TensorVariable" and y.owner.op.scalar_op.name == "add", y
assert str(1 + x) == "Elemwise{add}.0" and str(x[0]) == "Subtensor{0}.0" and str(x.sum()) == "Sum.0"
assert str(np.exp(x)) == "Elemwise{exp}.0" and str(x.shape) == "Shape.0"
print("ok", first.__name__)
"""


def test_each_core_module_can_be_imported_first():
    """`import graphjit.tensor.<m>` first in a fresh process, then `x + 1` (and friends) on a tensor type."""
    procs = {m: subprocess.Popen([sys.executable, "-c", _PROGRAM, f"graphjit.tensor.{m}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for m in CORE}
    failures = []
    for m, p in procs.items():
        out, err = p.communicate(timeout=300)
        if p.returncode != 0 or f"ok graphjit.tensor.{m}" not in out:
            failures.append(f"graphjit.tensor.{m} first: exit {p.returncode}\n{err[-2000:]}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("statement", ["import graphjit.tensor", "import graphjit"])
def test_package_import_first(statement):
    """The package itself first (and graphjit's lazy top level) gives the same symbolic tensors."""
    program = statement + "\nimport graphjit.tensor as T\nx = T.dvector('x')\nassert str(x + 1) == 'Elemwise{add}.0'\n"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
