"""The fast_run/fast_compile database without the scan package (compile/mode.py ScanAwareDatabase): a compile
that cannot meet a Scan does not import it, and rewrites a graph exactly as the full database does."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.mode import ScanAwareDatabase, REWRITERS
from graphjit.graph.fg import FunctionGraph
from graphjit.printing import debugprint

from tests.w9_graphs import w9

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

_NO_SCAN = """
import json, sys
import numpy as np
import graphjit as gj, graphjit.tensor as gt
from graphjit.compile.mode import REWRITERS
x = gt.dmatrix("x")
w = gj.shared(np.ones((3, 2)), name="w")
cost = gt.sum(gt.tanh(gt.dot(x, w)) ** 2)
f = gj.function([x], cost, updates=[(w, w - 0.1 * gj.grad(cost, w))], mode=sys.argv[1])
value = float(f(np.ones((4, 3))))
print(json.dumps([value, sorted(m for m in sys.modules if m.startswith("graphjit.scan_module")),
                  REWRITERS[sys.argv[2]].module]))
"""


@pytest.mark.parametrize("mode, rewriter", [("FAST_RUN", "fast_run"), ("FAST_COMPILE", "fast_compile"),
                                           ("PY", "fast_run")])
def test_a_compile_without_scan_does_not_import_it(tmp_path, mode, rewriter):
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "src"), "GRAPHJIT_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _NO_SCAN, mode, rewriter], capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.returncode == 0, out.stderr
    value, scan_modules, module = json.loads(out.stdout.strip().splitlines()[-1])
    assert np.isfinite(value)
    assert scan_modules == []
    assert module == ScanAwareDatabase.TENSOR


def test_the_database_names_scan_once_a_scan_can_exist():
    import graphjit.scan_module  # noqa: F401 - (this process may have imported it already: then it is the same)
    db = REWRITERS["fast_run"]
    assert isinstance(db, ScanAwareDatabase) and isinstance(REWRITERS["fast_compile"], ScanAwareDatabase)
    assert db.module == ScanAwareDatabase.SCAN
    assert db.resolve() is __import__("graphjit.tensor.rewriting", fromlist=["rewrite_db"]).rewrite_db


def _mlp_step():
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    w1, w2 = gt.dmatrix("w1"), gt.dmatrix("w2")
    h = gt.tanh(gt.dot(x, w1))
    p = 1.0 / (1.0 + gt.exp(-gt.dot(h, w2)))
    cost = gt.mean((p - y) ** 2)
    g1, g2 = gj.grad(cost, [w1, w2])
    return [x, y, w1, w2], [cost, w1 - 0.1 * g1, w2 - 0.1 * g2]


def _w9(n):
    x, w = gt.dmatrix("x"), gt.dmatrix("w")
    return [x, w], w9.evaluate(w9.spec(n, 0), gt, x, w)


def _rewritten(inputs, outputs, with_scan, tag):
    """The graph rewritten by the tensor database's query (with or without the scan rewrites selected)."""
    from graphjit.tensor.rewriting import rewrite_db
    exclude = () if with_scan else ("scan",)
    fg = FunctionGraph(inputs, outputs)
    rewrite_db.query(include=[tag], exclude=exclude).rewrite(fg)
    return debugprint(fg.outputs, file="str"), len(fg.apply_nodes)


@pytest.mark.parametrize("tag", ["fast_run", "fast_compile"])
@pytest.mark.parametrize("build", [_mlp_step, lambda: _w9(300)], ids=["mlp_step", "w9_300"])
def test_scan_rewrites_change_nothing_in_a_graph_without_scan(build, tag):
    """What the scan-free database leaves out only ever rewrites Scan nodes: the same graph out."""
    import graphjit.scan_module.rewriting  # noqa: F401 - registers the scan rewrites (tag "scan")
    full = _rewritten(*build(), True, tag)
    scan_free = _rewritten(*build(), False, tag)
    assert scan_free == full
    assert full[1] > 0
