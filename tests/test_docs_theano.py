"""docs/theano.md, the Theano compatibility page: every graphjit path it names exists, and what it lists as not
provided is absent (its code blocks, the "differs on purpose" claims, run in tests/test_docs.py)."""

from __future__ import annotations

import pathlib
import re

from tests.mkdocs_tool import mkdocs_api

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "theano.md"

resolve = mkdocs_api().resolve


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def _table_column(section: str, column: int) -> list:
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in re.findall(r"`([\w.]+)`", row[column])]


def test_every_graphjit_path_on_the_page_exists():
    named = set(re.findall(r"`(graphjit(?:\.\w+)*)`", PAGE.read_text(encoding="utf-8")))
    assert len(named) > 30
    missing = sorted(p for p in named if not resolve(p)[0])
    assert not missing, f"docs/theano.md names graphjit paths that do not exist: {missing}"


def test_every_theano_module_has_a_graphjit_path():
    section = _section("Module paths")
    theano, ours = _table_column(section, 0), _table_column(section, 1)
    assert {"theano.ifelse", "theano.scan_module", "theano.sandbox.rng_mrg", "theano.misc.pkl_utils",
            "theano.compile.nanguardmode", "theano.tensor.nnet", "theano.compile.function_dump",
            "theano.tensor.shared_randomstreams", "theano.printing", "theano.gradient"} <= set(theano)
    assert all(p.startswith("graphjit") for p in ours)


def _refuses(obj) -> bool:
    """obj is a stub a Theano program may import but not use (tensor.nnet.conv2d): calling it says so."""
    try:
        obj()
    except NotImplementedError:
        return True
    except Exception:   # noqa: BLE001 - anything else is a working function called without its arguments
        return False
    return False


def test_what_is_not_provided_is_absent():
    absent = _table_column(_section("Not provided"), 0)
    assert "theano.sparse" in absent and "theano.tensor.nnet.conv2d" in absent
    present = [p for p in absent if resolve("graphjit" + p[len("theano"):])[0]
               and not _refuses(resolve("graphjit" + p[len("theano"):])[1])]
    assert not present, f"docs/theano.md lists as not provided what graphjit has: {present}"
