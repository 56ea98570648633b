"""to_dot (DOT text) and pydotprint (an image through the optional graphviz package and dot program)."""

import re
import os
import shutil
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.printing import pydotprint, to_dot
from tests.perform_only import PlusOne
from graphjit.printing.dot import COLOURS

# PlusOne has no lowering: its fallback is what these pictures mark
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def compiled():
    x = gt.dvector("x")
    b = gj.shared(np.ones(3), name="b")
    u = PlusOne()(x)
    out = (gt.exp(-x) * 2 + b).sum() + u.sum()
    out.name = "total"
    return gj.function([x], [out, x * 3]), x


def _fill(dot, label_start):
    line = next(ln for ln in dot.splitlines() if f'label="{label_start}' in ln)
    return re.search(r"fillcolor=(\w+)", line).group(1)


def test_function_picture_colours_and_clusters():
    f, x = compiled()
    dot = to_dot(f)
    assert dot.startswith('digraph "graphjit" {') and dot.rstrip().endswith("}")
    assert _fill(dot, "x\\n") == COLOURS["input"] and _fill(dot, "b\\n") == COLOURS["shared"]
    assert _fill(dot, "total") == COLOURS["output"] and _fill(dot, "TensorConstant{[2.]}") == COLOURS["constant"]
    assert _fill(dot, "PlusOne") == COLOURS["fallback"] and "(python perform)" in dot
    groups = [g for g in f.native.fused_groups(f.maker.fgraph) if len(g) > 1]
    assert len(groups) == 1 and len(groups[0]) == 5             # neg, exp, mul, add and the sum
    cluster = dot.split("subgraph cluster_fused_")[1].split("\n  }")[0]
    assert cluster.count("shape=box") == 5 and "Elemwise{neg}" in cluster and "Sum" in cluster
    assert len(f.native.fused_groups(f.maker.fgraph)) == f.native.n_loop_groups
    # every node and every edge endpoint is declared
    declared = set(re.findall(r"^\s*(\w+) \[label=", dot, re.M))
    for a, b in re.findall(r"^\s*(\w+) -> (\w+)", dot, re.M):
        assert a in declared and b in declared
    assert "TensorType(float64, vector)" in dot and "TensorType" not in to_dot(f, print_type=False)


def test_variables_and_python_mode_have_no_clusters():
    x = gt.dmatrix("x")
    e = gt.tanh(x).sum(axis=0)
    dot = to_dot(e)
    assert "cluster" not in dot and "tanh" in dot and _fill(dot, "x\\n") == COLOURS["input"]
    py = gj.function([x], e, mode="PY")
    assert "cluster" not in to_dot(py)
    assert 'label="Elemwise{tanh}' in to_dot([e, x * 2], max_label=15)
    with pytest.raises(TypeError, match="to_dot needs"):
        to_dot(3)


def test_pydotprint_dot_format_needs_nothing(tmp_path, monkeypatch):
    f, _ = compiled()
    monkeypatch.setitem(sys.modules, "graphviz", None)       # as if the package were absent
    path = tmp_path / "g.dot"
    assert pydotprint(f, str(path), format="dot") == str(path)
    assert path.read_text() == to_dot(f)
    with pytest.raises(ValueError, match="format"):
        pydotprint(f, format="jpeg")


def test_pydotprint_without_graphviz_package_says_what_to_install(monkeypatch):
    f, _ = compiled()
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match=r"graphviz Python package.*graphjit\[graphviz\].*to_dot"):
        pydotprint(f, format="png")


def test_pydotprint_without_dot_program_says_what_to_install(tmp_path, monkeypatch):
    pytest.importorskip("graphviz")
    monkeypatch.setenv("PATH", str(tmp_path))           # no dot program on PATH, whatever this machine has
    f, _ = compiled()
    with pytest.raises(RuntimeError, match="not Graphviz's dot program.*apt install graphviz"):
        pydotprint(f, format="svg")


# Graphviz's dot program stand-in for machines without it: answers -V, and for -T<format> writes an SVG holding
# the DOT text it read (so labels can be checked) or a PNG signature; it records its arguments.
_FAKE_DOT = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/calls"
fmt=svg
for a in "$@"; do
  case "$a" in
    -V) echo "dot - graphviz version 2.43.0 (0)" >&2; exit 0;;
    -T*) fmt="${a#-T}";;
  esac
done
input=$(cat)
if [ "$fmt" = png ]; then printf '\\211PNG\\r\\n\\032\\n'; else printf '<svg>%s</svg>' "$input"; fi
"""


@pytest.fixture
def dot_program(tmp_path, monkeypatch):
    """Graphviz's dot when installed, else the stand-in above first on PATH (the test then checks the plumbing:
    pydotprint hands the DOT text to dot with the format asked and returns or writes what dot produced)."""
    if shutil.which("dot") is not None:
        return None
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "dot"
    fake.write_text(_FAKE_DOT)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bindir / "calls"


def test_pydotprint_renders_svg_and_png(tmp_path, dot_program):
    pytest.importorskip("graphviz")
    f, _ = compiled()
    svg = pydotprint(f, format="svg")
    assert isinstance(svg, str) and "<svg" in svg and "fused loop" in svg
    path = pydotprint(f, str(tmp_path / "g.png"))
    assert (tmp_path / "g.png").read_bytes().startswith(b"\x89PNG") and path.endswith("g.png")
    if dot_program is not None:         # the stand-in: dot was asked for each format
        calls = dot_program.read_text()
        assert "-Tsvg" in calls and "-Tpng" in calls
