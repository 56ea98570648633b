"""Every ```python block of the docs pages runs: in order, in one namespace per page (docs/**/*.md), and
prints what the page shows it printing.

A block right after a line ``<!-- no-run -->`` is skipped (e.g. one that needs a display). The README's
example runs too. The convention for shown output:

- A ```text block that follows a ```python block (nothing but blank lines between them) is that block's
  output: what it prints to stdout must equal it, line by line, trailing spaces and leading/trailing blank
  lines aside, and object addresses (``0x7f...``) normalised.
- Where part of an output varies (a timing, an id), write ``...`` there: it matches any text within the
  line; a line that is only ``...`` matches any number of lines (doctest's ELLIPSIS).
- A line of the block that a message names (a node's creation line) prints as ``example.py:N``, N counted
  from the block's first line.
- A line ``<!-- output: numbers vary -->`` between the two blocks shows an output whose numbers vary
  (timings): every number matches any number, runs of spaces any run, the words and their order must match.
- A line ``<!-- output: not compared -->`` there shows an output that is not compared (one that varies as a
  whole); a ```text block that does not follow a python block (a shell session, a
  file's content) is not compared either.
"""

from __future__ import annotations

import pathlib
import re
import warnings
import contextlib
import io
from typing import List, Optional, Tuple

import pytest

from graphjit.config import config

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.M | re.S)
NO_RUN = "<!-- no-run -->"
NOT_COMPARED = "<!-- output: not compared -->"
NUMBERS_VARY = "<!-- output: numbers vary -->"
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def pages() -> List[pathlib.Path]:
    """The docs pages with at least one python block (and the README)."""
    found = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
    return [p for p in found if python_blocks(p.read_text(encoding="utf-8"))]


def python_blocks(text: str) -> List[Tuple[int, str]]:
    """(line number, code) of each ```python block not marked no-run."""
    return [(line, code) for line, code, _, _ in blocks_with_output(text)]


def blocks_with_output(text: str) -> List[Tuple[int, str, Optional[str], bool]]:
    """(line number, code, shown output or None, whether its numbers vary) of each ```python block not marked
    no-run."""
    fences = list(FENCE.finditer(text))
    blocks = []
    for i, m in enumerate(fences):
        if m.group("lang") != "python" or _line_before(text, m.start()) == NO_RUN:
            continue
        shown, between = None, ""
        nxt = fences[i + 1] if i + 1 < len(fences) else None
        if nxt is not None and nxt.group("lang") == "text":
            between = text[m.end():nxt.start()].strip()
            if between in ("", NUMBERS_VARY):
                shown = _dedent(nxt)
        blocks.append((text[:m.start()].count("\n") + 2, _dedent(m), shown, between == NUMBERS_VARY))
    return blocks


def _line_before(text: str, pos: int) -> str:
    return text[:pos].rstrip("\n").rsplit("\n", 1)[-1].strip()


def _dedent(m: "re.Match[str]") -> str:
    indent = m.group("indent")
    return "".join(line[len(indent):] if line.startswith(indent) else line
                   for line in m.group("body").splitlines(keepends=True))


def _lines(text: str) -> List[str]:
    return [ADDRESS.sub("0x?", line.rstrip()) for line in text.strip("\n").splitlines()]


def output_matches(shown: str, printed: str, numbers_vary: bool = False) -> bool:
    """printed equals shown, where a ``...`` in shown matches any text of a line (alone: any lines)."""
    shown_lines, printed_lines = _lines(shown), _lines(printed)
    if numbers_vary:
        shown_lines, printed_lines = ([" ".join(NUMBER.sub("0", line).split()) for line in lines]
                                      for lines in (shown_lines, printed_lines))
    pattern = []
    for line in shown_lines:
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*?".join(re.escape(part) for part in line.split("...")) + r"\n")
    return re.fullmatch("".join(pattern), "".join(line + "\n" for line in printed_lines)) is not None


def _page_id(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


def test_block_parser_finds_fences_and_honours_no_run():
    text = ("# t\n```python\na = 1\n```\n<!-- no-run -->\n```python\nraise SystemExit\n```\n"
            "```text\nout\n```\n- item\n\n    ```python\n    b = a + 1\n    ```\n")
    assert python_blocks(text) == [(3, "a = 1\n"), (15, "b = a + 1\n")]


def test_shown_output_is_the_next_text_block_unless_marked():
    text = ("```python\nprint(1)\n```\n\n```text\n1\n```\n```python\nprint(2)\n```\nprose\n```text\n2\n```\n"
            "```python\nprint(3)\n```\n")
    assert [shown for _, _, shown, _ in blocks_with_output(text)] == ["1\n", None, None]
    marked = "```python\nprint(1)\n```\n" + NOT_COMPARED + "\n```text\n9\n```\n"
    assert [shown for _, _, shown, _ in blocks_with_output(marked)] == [None]
    varying = "```python\nprint(1)\n```\n" + NUMBERS_VARY + "\n```text\n9\n```\n"
    assert [(shown, vary) for _, _, shown, vary in blocks_with_output(varying)] == [("9\n", True)]


def test_output_comparison_and_its_ellipsis():
    assert output_matches("a\nb  \n", "\na\nb\n")
    assert not output_matches("a\nb\n", "a\nc\n") and not output_matches("a\n", "a\nb\n")
    assert output_matches("took ... ms\n", "took 1.25 ms\n") and not output_matches("took ... ms\n", "took 1 s\n")
    assert output_matches("head\n...\ntail\n", "head\nx\ny\ntail\n") and output_matches("head\n...\ntail", "head\ntail")
    assert output_matches("<f at 0x7f00aa>\n", "<f at 0x55bb01>\n")
    assert output_matches("a:  1.5e-03s  10 x2\n", "a: 2.25e-04s 10  x9\n", numbers_vary=True)
    assert not output_matches("a: 1 ms\n", "a: 1 s\n", numbers_vary=True)
    assert not output_matches("a: 1 ms\n", "a: 2 ms\n")


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
    for line, code, shown, numbers_vary in blocks_with_output(page.read_text(encoding="utf-8")):
        compiled = compile(code, f"{page}:{line}", "exec")
        printed = io.StringIO()
        with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
            warnings.simplefilter("error")
            try:
                exec(compiled, namespace)
            except Exception as e:
                raise AssertionError(f"{_page_id(page)}, the block at line {line} failed: "
                                     f"{type(e).__name__}: {e}") from e
        if shown is not None and not output_matches(shown, printed.getvalue().replace(f"{page}:{line}", "example.py"),
                                                     numbers_vary):
            raise AssertionError(f"{_page_id(page)}, the block at line {line} printed\n{printed.getvalue()}\n"
                                 f"where the page shows\n{shown}")
