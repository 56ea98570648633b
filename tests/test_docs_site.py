"""The docs site builds with ``mkdocs build --strict`` (as CI builds it), API pages generated from docstrings.

Needs the docs packages of the ``test`` extra (mkdocs, mkdocs-material, mkdocstrings[python]).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.soak
def test_site_builds_strict_with_api_reference(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    for page in (ROOT / "docs").rglob("*.md"):        # every page is built (and, strict, in the nav)
        rel = page.relative_to(ROOT / "docs").with_suffix("")
        built = site / ("index.html" if rel.name == "index" and rel.parent == pathlib.Path(".") else
                        rel.parent / "index.html" if rel.name == "index" else rel / "index.html")
        assert built.exists(), f"{page} was not built"
    graph = (site / "api" / "graph" / "index.html").read_text()
    assert 'id="graphjit.graph.basic.Variable"' in graph and 'id="graphjit.graph.tag.Tag"' in graph
    top = (site / "api" / "graphjit" / "index.html").read_text()
    assert 'id="graphjit.function"' in top and 'id="graphjit.grad"' in top
    printing = (site / "api" / "printing" / "index.html").read_text()
    assert 'id="graphjit.printing.pydotprint"' in printing and 'id="graphjit.printing.pp"' in printing


def test_every_api_module_page_names_a_module():
    for page in (ROOT / "docs" / "api").glob("*.md"):
        assert "::: graphjit" in page.read_text(), page
