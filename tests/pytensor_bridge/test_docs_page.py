"""docs/pytensor.md's blocks (marked no-run for the main suite, which has no PyMC) run here and print what the
page shows."""

import contextlib
import io
import pathlib
import warnings

from test_docs import FENCE, output_matches

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "pytensor.md"


def test_pytensor_page_runs_and_prints_what_it_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = PAGE.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    namespace: dict = {"__name__": "docs_pytensor"}
    ran = 0
    for block, after in zip(fences, fences[1:] + [None]):
        if block.group("lang") != "python":
            continue
        printed = io.StringIO()
        with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", "PyTensor could not link to a BLAS installation", UserWarning)
            exec(compile(block.group("body"), f"{PAGE}:{block.start()}", "exec"), namespace)
        ran += 1
        if after is not None and after.group("lang") == "text" and not text[block.end():after.start()].strip():
            assert output_matches(after.group("body"), printed.getvalue()), printed.getvalue()
    assert ran == 2
