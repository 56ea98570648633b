"""The API reference (docs/api/*.md) has an entry for every public name, and only for names that exist.

The public names are computed from the public modules (tools/mkdocs_api.py PUBLIC_MODULES: their ``__all__``, or
for graphjit.tensor its names that are not private or submodules). A name is documented when an ``api`` block
of docs/api lists it, or lists the same object under another public path (its entry shows "Also importable as").
"""

from __future__ import annotations

import pathlib

import pytest
from tests.mkdocs_tool import mkdocs_api

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

api = mkdocs_api()

VALUES = (str, int, float, bool, tuple, type(None))      # objects whose identity does not make an alias


def _documented_objects():
    found = {}
    for path in api.reference_paths(DOCS):
        ok, obj = api.resolve(path)
        if ok:
            found.setdefault(path, obj)
    return found


def test_every_public_name_has_an_entry():
    documented = _documented_objects()
    ids = {id(o) for o in documented.values() if not isinstance(o, VALUES)}
    missing = [path for path, obj in api.public_paths().items()
               if path not in documented and (isinstance(obj, VALUES) or id(obj) not in ids)]
    assert not missing, ("public names without an entry in docs/api/*.md (add each to an ```api block of the "
                         f"page a user would look in): {missing}")


def test_every_entry_names_something_that_exists():
    unknown = [p for p in api.reference_paths(DOCS) if not api.resolve(p)[0]]
    assert not unknown, f"docs/api entries naming nothing: {unknown}"


def test_each_object_has_one_entry():
    seen, twice = {}, []
    for path, obj in _documented_objects().items():
        if isinstance(obj, VALUES):
            continue
        if id(obj) in seen:
            twice.append((seen[id(obj)], path))
        seen.setdefault(id(obj), path)
    assert not twice, f"one object, several entries (keep one: the others appear as its aliases): {twice}"


def test_the_intro_names_every_public_module():
    intro = (DOCS / "api" / "index.md").read_text(encoding="utf-8")
    assert [m for m in api.PUBLIC_MODULES if f"`{m}`" not in intro] == []


def test_user_pages_leave_internals_to_extending():
    """What the issue found documented instead of the public API stays on the Extending pages."""
    user_pages = [p for p in (DOCS / "api").glob("*.md") if p.stem not in ("extending", "graph", "scalar", "link")]
    for page in user_pages:
        paths = [p for m in api.FENCE.finditer(page.read_text(encoding="utf-8"))
                 for p in api.fence_paths(m.group("kind"), m.group("body"))]
        assert not {"graphjit.tensor.Gemv", "graphjit.tensor.ShapeInference", "graphjit.tensor.Elemwise"} & set(paths)


@pytest.mark.parametrize("name", ["graphjit.scan", "graphjit.tensor.exp", "graphjit.tensor.dmatrix",
                                  "graphjit.tensor.linalg.cholesky", "graphjit.compile.NanGuardError"])
def test_rendered_entries_carry_call_and_docstring(name):
    public = api.public_paths()
    text = api.render_page("```api\n" + name + "\n```\n")
    short = name.rsplit(".", 1)[1]
    assert f"{{#{name}}}" in text and f"`{short}(" in text
    obj = api.resolve(name)[1]
    assert api.summary(obj if callable(obj) and not hasattr(obj, "scalar_op") else obj) [:20] in text
    assert api.render_table([name], public).count("\n") == 3


def test_rendered_grid_has_every_constructor_of_the_tree():
    page = (DOCS / "api" / "variables.md").read_text(encoding="utf-8")
    rendered = api.render_page(page)
    for path, obj in api.public_paths().items():
        if path.startswith("graphjit.tensor.") and type(obj).__name__ == "TensorType":
            assert f'<a id="{path}"></a>' in rendered or f"{{#{path}}}" in rendered, path


def test_aliases_are_listed_with_the_entry():
    text = api.render_page("```api\ngraphjit: grad\n```\n")
    assert "`graphjit.gradient.grad`" in text
