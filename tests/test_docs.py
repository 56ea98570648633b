"""Every ```python block of the docs pages runs: in order, in one namespace per page (docs/**/*.md).

A block right after a line ``<!-- no-run -->`` is skipped (e.g. one that needs a display). Output is
shown in ```text blocks, which are not run. The README's example runs too.
"""

from __future__ import annotations

import pathlib
import re
import warnings
from typing import List, Tuple

import pytest

from graphjit.config import config

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.M | re.S)
NO_RUN = "<!-- no-run -->"


def pages() -> List[pathlib.Path]:
    """The docs pages with at least one python block (and the README)."""
    found = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
    return [p for p in found if python_blocks(p.read_text(encoding="utf-8"))]


def python_blocks(text: str) -> List[Tuple[int, str]]:
    """(line number, code) of each ```python block not marked no-run."""
    blocks = []
    for m in FENCE.finditer(text):
        if m.group("lang") != "python":
            continue
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        if before == NO_RUN:
            continue
        indent = m.group("indent")
        body = "".join(line[len(indent):] if line.startswith(indent) else line
                       for line in m.group("body").splitlines(keepends=True))
        blocks.append((text[:m.start()].count("\n") + 2, body))
    return blocks


def _page_id(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


def test_block_parser_finds_fences_and_honours_no_run():
    text = ("# t\n```python\na = 1\n```\n<!-- no-run -->\n```python\nraise SystemExit\n```\n"
            "```text\nout\n```\n- item\n\n    ```python\n    b = a + 1\n    ```\n")
    assert python_blocks(text) == [(3, "a = 1\n"), (15, "b = a + 1\n")]


@pytest.mark.parametrize("page", pages(), ids=_page_id)
def test_docs_page_runs(page: pathlib.Path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                 # a page writing files writes them here
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    saved = config.flags()                      # a page may set flags (and fail before restoring them)
    try:
        _run_page(page, namespace)
    finally:
        for name, value in saved.items():
            if config.flags()[name] != value:
                setattr(config, name, value)


def _run_page(page: pathlib.Path, namespace: dict) -> None:
    for line, code in python_blocks(page.read_text(encoding="utf-8")):
        compiled = compile(code, f"{page}:{line}", "exec")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                exec(compiled, namespace)
            except Exception as e:
                raise AssertionError(f"{_page_id(page)}, the block at line {line} failed: "
                                     f"{type(e).__name__}: {e}") from e
